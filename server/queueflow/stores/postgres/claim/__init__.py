"""The claim on PostgreSQL: `JobStore.job_claim` (and `job_next_due`, which an idle lessee asks next), read top to
bottom.

1. **What is asked** (`claims.PostgresClaims.job_claim`). Up to `max_jobs` due jobs of a list of queues, of the
   tasks a worker can run, leased for `lease_seconds` from the engine's `now` (`args.ClaimArgs`); for a
   tenant-scoped worker key, of one tenant only (`args.TenantScope`). Names no row can hold are dropped first.

2. **Nothing due?** An idle lessee claims again and again and finds nothing. While nothing was announced since
   the last empty claim of the same queues (`caches.IdleQueues`), the claim first asks DUE_ANY, one statement,
   and ends there when nothing is due.

3. **The one-statement claim** (`function`). Where CLAIM is likely to be all of it (no tenant scope; one job, or
   queues known unrestricted: `caches.UnrestrictedQueues`), it runs as one statement of its own, CLAIM_CALL, a
   function made by migration 0011, one round trip where the transaction takes three. It ends the claim when that
   is all the transaction would have done: it came back full, or short with no tenant at its whole share and no
   queue restricted. Otherwise the claim goes on in its transaction from the jobs it took; those are committed to
   their leases already, and the caller gets them even if the transaction fails.

4. **The claim's transaction** (`claims.PostgresClaims._claim_whole`, BEGIN_CLAIM … COMMIT). First the queues
   nobody restricts: CLAIM (`unrestricted_sql`), fair across tenants in one statement: the tenants with a
   claimable job found by a skip scan of idx_jobs_claim_ready, each tenant's share ceil(max_jobs / tenants), taken in
   turns from the tenant after the one the last claim of these queues served last (the turn lives in
   queueflow.claim_turns, one for every process, and CLAIM moves it: `fair_sql.turn_moved`). A short claim in
   which some tenant filled its share goes round again (`claims.claim_in_turns`): that tenant may have more.
   A tenant-scoped claim runs CLAIM_FOR_TENANT instead: one tenant, no turns.

5. **The restricted queues** (`restricted`). Only a claim that came back short asks which of its queues some
   tenant restricts (RESTRICTED_QUEUES; when none is, remembered: `caches.UnrestrictedQueues`), and claims from
   those in the same transaction: their settings rows locked, what
   runs counted, then CLAIM_RESTRICTED (`restricted_sql`) within what pause, concurrency limits, key limits and
   rate limits leave, in tenant turns and, within a key-limited queue, in key turns; the spent tokens, the key
   turns and the tenant turn (SAVE_TURN) written before the commit. If any statement fails, every job the
   transaction took is pending again, none is lost to a lease nobody holds.

6. **The answer**: the jobs in the order the claim took them (`core.turns.in_turns`), whatever order RETURNING
   gave.

Modules: `claims` (the port's methods), `caches` (what a claim remembers, and what each saves), `args` (the
parameters), `fair_sql` (the pieces both claims' SQL is built from), `unrestricted_sql`, `function` (the
one-statement claim), `restricted` and `restricted_sql` (flow control).
"""

from queueflow.stores.postgres.claim.claims import PostgresClaims

__all__ = ["PostgresClaims"]
