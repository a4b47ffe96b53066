-- Raw ceiling: claim :batch jobs, then complete them, as QueueFlow's store does (stores/postgres/claim_sql.py CLAIM,
-- sql.py COMPLETE). Run by pgbench -M prepared (asyncpg prepares every statement too), with -D batch=1 or 100.
-- Neither statement is written here: bench/scenarios/raw.py puts QueueFlow's own CLAIM in place of the line {claim}
-- and its COMPLETE in place of {complete} (the plain ceiling: the seed's, bench/pgbench/plain_claim.sql), so that
-- the ceiling always runs the statements the store runs (one tenant: one claim statement, as in the store). A
-- completion written out here once drifted from the store's: it kept a lease check the store had since rewritten
-- (sql.py HOLDS_LEASE), whose plan read every running job through idx_jobs_lease_expiry on every completion, and the
-- ceiling ran at half the plain claim's.
-- Differences, each for pgbench's sake: now(), a constant lease and results instead of bound parameters; the claim is
-- wrapped in a CTE so that \gset gets one row (the claimed ids and tokens as arrays, for the completion), and
-- array_agg(claimed)::text still makes PostgreSQL produce and send every returned column, as RETURNING does.
-- The store's claim commits asynchronously (stores/postgres/sql.py ASYNC_COMMIT), its completion synchronously: the
-- same here, by the session's setting around the claim (the store sets it in the claim's own transaction).
SET synchronous_commit = off;
{claim}
SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(lease_token), '{}') AS tokens,
       array_agg(claimed)::text AS claimed_rows
  FROM claimed
\gset
SET synchronous_commit = on;
{complete}
