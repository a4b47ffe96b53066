"""Sequences (README.md, "Sequences"; issue 43): jobs of one tenant with the same sequence key run one at a time,
in id order, across every queue and worker (`core.sequences`).

- `jobs.sequence_key` (NULL: no sequence) and `jobs.sequence_halt` (NULL without a sequence): whether the job,
  dead-lettered, holds its sequence (its `on_failure` is halt and no resume moved past it; a replay restores it from
  `config->>'sequence_on_failure'`).
- `idx_jobs_sequence` (tenant, key, id) over the jobs that hold their sequence (pending, retrying, running, or dead
  and halting): the claim's test that no earlier job holds a job's sequence is one probe of it (the first entry of
  the key's range below the job's id). `idx_jobs_sequence_running` (tenant, key) over the running ones: the test
  that none of the sequence runs (a replayed earlier job never overlaps a later one already started).
  `idx_jobs_sequence_key` (tenant, key) over every job of a sequence: `GET /v1/jobs?sequence_key=`, `blocked_by`
  and a resume. All three are partial: a job without a sequence is in none, so its insert and claim pay nothing
  for them.
- `queueflow.enqueue(...)` takes `sequence jsonb` (`{"key", "on_failure"}`, a named parameter after
  `expires_at`; older calls work as they did), checked as the HTTP route checks it (SQLSTATE 22023). A new
  parameter changes the function's signature, so it is dropped and created again as 0016 did; the downgrade
  restores 0016's text.
- The claim tests a job's sequence (`claim.fair_sql.SEQUENCE_FREE`) and returns the two columns, so the
  one-statement claim is made anew as `queueflow.claim_0018`. `claim_0016` stays for a server of revision 0017
  during a rolling deploy (it knows no sequences: it may run a sequence's jobs out of order until replaced).

Expand-only (nullable columns without default, partial indexes, new functions).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_SIGNATURE = (
    "queueflow.enqueue(text, text, jsonb, text, integer, timestamptz, double precision, integer, jsonb,"
    " double precision, jsonb, text, text, jsonb, timestamptz)"
)
SIGNATURE = (
    "queueflow.enqueue(text, text, jsonb, text, integer, timestamptz, double precision, integer, jsonb,"
    " double precision, jsonb, text, text, jsonb, timestamptz, jsonb)"
)

ENQUEUE = r"""
CREATE FUNCTION queueflow.enqueue(
    tenant_id       text,
    task_name       text,
    payload         jsonb            DEFAULT '{}',
    queue_name      text             DEFAULT 'default',
    priority        integer          DEFAULT 0,
    run_at          timestamptz      DEFAULT NULL,
    delay_seconds   double precision DEFAULT NULL,
    max_retries     integer          DEFAULT 3,
    backoff         jsonb            DEFAULT '{}',
    timeout_seconds double precision DEFAULT NULL,
    metadata        jsonb            DEFAULT '{}',
    idempotency_key text             DEFAULT NULL,
    concurrency_key text             DEFAULT NULL,
    unique_rule     jsonb            DEFAULT NULL,
    expires_at      timestamptz      DEFAULT NULL,
    sequence        jsonb            DEFAULT NULL
) RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    alphabet   CONSTANT text := '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    name_re    CONSTANT text := '^[A-Za-z0-9_.:-]{1,100}$';
    too_deep   CONSTANT jsonpath := 'strict $.**{128 to last} ? (@.type() == "object" || @.type() == "array")';
    problems   text[] := '{}';
    fields     text[] := '{}';
    policy     jsonb;
    field_name text;
    created    timestamptz := clock_timestamp();
    random_id  bytea := uuid_send(gen_random_uuid());
    bits       bit(130);
    new_id     text;
    found_id   text;
    all_states CONSTANT text[] := ARRAY['pending', 'running', 'retrying', 'completed', 'dead_letter', 'cancelled'];
    live       CONSTANT text[] := ARRAY['pending', 'retrying', 'running'];
    rule_key   text;
    states     text[];
    period     bigint;
    on_conflict text := 'skip';
    debounce   double precision;
    debounce_max double precision;
    since      timestamptz;
    existing   record;
    scheduled  timestamptz;
    seq_key    text;
    seq_on_failure text;
BEGIN
    IF tenant_id IS NULL OR tenant_id !~ name_re THEN
        fields := array_append(fields, 'tenant_id');
        problems := array_append(problems, 'tenant_id: must match ^[A-Za-z0-9_.:-]{1,100}$');
    END IF;
    IF task_name IS NULL OR char_length(task_name) NOT BETWEEN 1 AND 200 THEN
        fields := array_append(fields, 'task_name');
        problems := array_append(problems, 'task_name: must be 1–200 characters long');
    END IF;
    IF queue_name IS NULL OR queue_name !~ name_re THEN
        fields := array_append(fields, 'queue_name');
        problems := array_append(problems, 'queue_name: must match ^[A-Za-z0-9_.:-]{1,100}$');
    END IF;
    IF payload IS NULL OR jsonb_typeof(payload) <> 'object' THEN
        fields := array_append(fields, 'payload'); problems := array_append(problems, 'payload: must be a JSON object');
    ELSIF jsonb_path_exists(payload, too_deep) THEN
        fields := array_append(fields, 'payload');
        problems := array_append(problems, 'payload: nested deeper than 128 levels');
    END IF;
    IF priority IS NULL OR priority NOT BETWEEN -1000 AND 1000 THEN
        fields := array_append(fields, 'priority');
        problems := array_append(problems, 'priority: must be between -1000 and 1000');
    END IF;
    IF run_at IS NOT NULL AND delay_seconds IS NOT NULL THEN
        fields := array_append(fields, 'delay_seconds');
        problems := array_append(problems, 'delay_seconds: cannot be combined with run_at');
    END IF;
    -- What a client can read back: years 1-9999 (timestamptz reaches further, Python's datetime does not).
    IF run_at NOT BETWEEN '0001-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00' THEN
        fields := array_append(fields, 'run_at');
        problems := array_append(problems, 'run_at: must be between years 1 and 9999 in UTC');
    END IF;
    -- NaN compares greater than every number, so BETWEEN rejects it along with the infinities.
    IF delay_seconds IS NOT NULL AND NOT delay_seconds BETWEEN 0 AND 315360000 THEN
        fields := array_append(fields, 'delay_seconds');
        problems := array_append(problems, 'delay_seconds: must be between 0 and 3.1536e+08');
    END IF;
    IF max_retries IS NULL OR max_retries NOT BETWEEN 0 AND 100 THEN
        fields := array_append(fields, 'max_retries');
        problems := array_append(problems, 'max_retries: must be between 0 and 100');
    END IF;
    IF backoff IS NULL OR jsonb_typeof(backoff) <> 'object' THEN
        fields := array_append(fields, 'backoff'); problems := array_append(problems, 'backoff: must be a JSON object');
    ELSE
        -- A partial policy is merged with the defaults, as the HTTP route does.
        policy := '{"strategy": "exponential", "base_seconds": 1.0, "max_seconds": 3600.0, "jitter": true}'::jsonb
                  || backoff;
        FOR field_name IN SELECT jsonb_object_keys(backoff) LOOP
            IF field_name NOT IN ('strategy', 'base_seconds', 'max_seconds', 'jitter') THEN
                fields := array_append(fields, ('backoff.' || field_name));
                problems := array_append(problems, ('backoff.' || field_name || ': unknown field'));
            END IF;
        END LOOP;
        IF jsonb_typeof(policy->'strategy') <> 'string'
           OR policy->>'strategy' NOT IN ('exponential', 'linear', 'fixed') THEN
            fields := array_append(fields, 'backoff.strategy');
            problems := array_append(problems, 'backoff.strategy: must be one of exponential, linear, fixed');
        END IF;
        IF jsonb_typeof(policy->'base_seconds') <> 'number'
           OR NOT (policy->'base_seconds')::numeric BETWEEN 0.001 AND 86400 THEN
            fields := array_append(fields, 'backoff.base_seconds');
            problems := array_append(problems, 'backoff.base_seconds: must be between 0.001 and 86400');
        END IF;
        IF jsonb_typeof(policy->'max_seconds') <> 'number'
           OR NOT (policy->'max_seconds')::numeric BETWEEN 0.001 AND 604800 THEN
            fields := array_append(fields, 'backoff.max_seconds');
            problems := array_append(problems, 'backoff.max_seconds: must be between 0.001 and 604800');
        ELSIF jsonb_typeof(policy->'base_seconds') = 'number'
              AND (policy->'max_seconds')::numeric < (policy->'base_seconds')::numeric THEN
            fields := array_append(fields, 'backoff.max_seconds');
            problems := array_append(problems, 'backoff.max_seconds: must be at least base_seconds');
        END IF;
        IF jsonb_typeof(policy->'jitter') <> 'boolean' THEN
            fields := array_append(fields, 'backoff.jitter');
            problems := array_append(problems, 'backoff.jitter: must be true or false');
        END IF;
    END IF;
    IF timeout_seconds IS NOT NULL AND NOT timeout_seconds BETWEEN 1 AND 604800 THEN
        fields := array_append(fields, 'timeout_seconds');
        problems := array_append(problems, 'timeout_seconds: must be between 1 and 604800');
    END IF;
    IF metadata IS NULL OR jsonb_typeof(metadata) <> 'object' THEN
        fields := array_append(fields, 'metadata');
        problems := array_append(problems, 'metadata: must be a JSON object');
    ELSIF jsonb_path_exists(metadata, too_deep) THEN
        fields := array_append(fields, 'metadata');
        problems := array_append(problems, 'metadata: nested deeper than 128 levels');
    END IF;
    IF idempotency_key IS NOT NULL AND char_length(idempotency_key) NOT BETWEEN 1 AND 255 THEN
        fields := array_append(fields, 'idempotency_key');
        problems := array_append(problems, 'idempotency_key: must be 1–255 characters long');
    END IF;
    IF concurrency_key IS NOT NULL AND char_length(concurrency_key) NOT BETWEEN 1 AND 200 THEN
        fields := array_append(fields, 'concurrency_key');
        problems := array_append(problems, 'concurrency_key: must be 1–200 characters long');
    END IF;
    IF expires_at NOT BETWEEN '0001-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00' THEN
        fields := array_append(fields, 'expires_at');
        problems := array_append(problems, 'expires_at: must be between years 1 and 9999 in UTC');
    END IF;
    IF unique_rule IS NOT NULL AND jsonb_typeof(unique_rule) <> 'null' THEN
        IF jsonb_typeof(unique_rule) <> 'object' THEN
            fields := array_append(fields, 'unique_rule');
            problems := array_append(problems, 'unique_rule: must be a JSON object');
        ELSE
            FOR field_name IN SELECT jsonb_object_keys(unique_rule) LOOP
                IF field_name NOT IN ('key', 'states', 'period_seconds', 'on_conflict', 'debounce_seconds',
                                      'debounce_max_seconds') THEN
                    fields := array_append(fields, ('unique_rule.' || field_name));
                    problems := array_append(problems, ('unique_rule.' || field_name || ': unknown field'));
                END IF;
            END LOOP;
            IF jsonb_typeof(unique_rule->'key') IS DISTINCT FROM 'string'
               OR char_length(unique_rule->>'key') NOT BETWEEN 1 AND 255 THEN
                fields := array_append(fields, 'unique_rule.key');
                problems := array_append(problems, 'unique_rule.key: must be 1–255 characters long');
            ELSE
                rule_key := unique_rule->>'key';
            END IF;
            IF unique_rule ? 'period_seconds' AND jsonb_typeof(unique_rule->'period_seconds') <> 'null' THEN
                IF jsonb_typeof(unique_rule->'period_seconds') <> 'number'
                   OR (unique_rule->'period_seconds')::numeric <> trunc((unique_rule->'period_seconds')::numeric)
                   OR NOT (unique_rule->'period_seconds')::numeric BETWEEN 1 AND 31536000 THEN
                    fields := array_append(fields, 'unique_rule.period_seconds');
                    problems := array_append(problems,
                        'unique_rule.period_seconds: must be an integer between 1 and 31536000');
                ELSE
                    period := (unique_rule->>'period_seconds')::bigint;
                END IF;
            END IF;
            IF unique_rule ? 'states' AND jsonb_typeof(unique_rule->'states') <> 'null' THEN
                IF unique_rule ? 'period_seconds' AND jsonb_typeof(unique_rule->'period_seconds') <> 'null' THEN
                    fields := array_append(fields, 'unique_rule.states');
                    problems := array_append(problems, 'unique_rule.states: cannot be combined with period_seconds');
                ELSIF jsonb_typeof(unique_rule->'states') <> 'array' OR jsonb_array_length(unique_rule->'states') = 0
                   OR EXISTS (SELECT FROM jsonb_array_elements(unique_rule->'states') AS s
                               WHERE jsonb_typeof(s) <> 'string' OR NOT (s #>> '{}') = ANY (all_states)) THEN
                    fields := array_append(fields, 'unique_rule.states');
                    problems := array_append(problems,
                        'unique_rule.states: must be a non-empty array of job statuses');
                ELSE
                    states := ARRAY(SELECT jsonb_array_elements_text(unique_rule->'states'));
                END IF;
            END IF;
            IF unique_rule ? 'on_conflict' AND jsonb_typeof(unique_rule->'on_conflict') <> 'null' THEN
                IF jsonb_typeof(unique_rule->'on_conflict') <> 'string'
                   OR unique_rule->>'on_conflict' NOT IN ('skip', 'replace', 'error') THEN
                    fields := array_append(fields, 'unique_rule.on_conflict');
                    problems := array_append(problems, 'unique_rule.on_conflict: must be one of skip, replace, error');
                ELSE
                    on_conflict := unique_rule->>'on_conflict';
                END IF;
            END IF;
            IF unique_rule ? 'debounce_seconds' AND jsonb_typeof(unique_rule->'debounce_seconds') <> 'null' THEN
                IF jsonb_typeof(unique_rule->'debounce_seconds') <> 'number'
                   OR NOT (unique_rule->'debounce_seconds')::numeric BETWEEN 0.001 AND 86400 THEN
                    fields := array_append(fields, 'unique_rule.debounce_seconds');
                    problems := array_append(problems, 'unique_rule.debounce_seconds: must be between 0.001 and 86400');
                ELSE
                    debounce := (unique_rule->>'debounce_seconds')::double precision;
                END IF;
                IF on_conflict <> 'replace' THEN
                    fields := array_append(fields, 'unique_rule.debounce_seconds');
                    problems := array_append(problems, 'unique_rule.debounce_seconds: requires on_conflict "replace"');
                END IF;
                IF period IS NOT NULL OR (states IS NOT NULL AND NOT (states @> live AND live @> states)) THEN
                    fields := array_append(fields, 'unique_rule.debounce_seconds');
                    problems := array_append(problems, 'unique_rule.debounce_seconds: requires the default states');
                END IF;
                IF run_at IS NOT NULL THEN
                    fields := array_append(fields, 'run_at');
                    problems := array_append(problems, 'run_at: cannot be combined with unique.debounce_seconds');
                END IF;
                IF delay_seconds IS NOT NULL THEN
                    fields := array_append(fields, 'delay_seconds');
                    problems := array_append(problems,
                        'delay_seconds: cannot be combined with unique.debounce_seconds');
                END IF;
            END IF;
            IF unique_rule ? 'debounce_max_seconds' AND jsonb_typeof(unique_rule->'debounce_max_seconds') <> 'null' THEN
                IF debounce IS NULL AND NOT (unique_rule ? 'debounce_seconds') THEN
                    fields := array_append(fields, 'unique_rule.debounce_max_seconds');
                    problems := array_append(problems, 'unique_rule.debounce_max_seconds: requires debounce_seconds');
                ELSIF jsonb_typeof(unique_rule->'debounce_max_seconds') <> 'number'
                   OR NOT (unique_rule->'debounce_max_seconds')::numeric
                          BETWEEN coalesce(debounce, 0.001) AND 86400 THEN
                    fields := array_append(fields, 'unique_rule.debounce_max_seconds');
                    problems := array_append(problems,
                        'unique_rule.debounce_max_seconds: must be between debounce_seconds and 86400');
                ELSE
                    debounce_max := (unique_rule->>'debounce_max_seconds')::double precision;
                END IF;
            END IF;
        END IF;
    END IF;
    -- core.validation: a sequence's key 1-255 characters, on_failure continue (the default) or halt.
    IF enqueue.sequence IS NOT NULL AND jsonb_typeof(enqueue.sequence) <> 'null' THEN
        IF jsonb_typeof(enqueue.sequence) <> 'object' THEN
            fields := array_append(fields, 'sequence');
            problems := array_append(problems, 'sequence: must be a JSON object');
        ELSE
            FOR field_name IN SELECT jsonb_object_keys(enqueue.sequence) LOOP
                IF field_name NOT IN ('key', 'on_failure') THEN
                    fields := array_append(fields, ('sequence.' || field_name));
                    problems := array_append(problems, ('sequence.' || field_name || ': unknown field'));
                END IF;
            END LOOP;
            IF jsonb_typeof(enqueue.sequence->'key') IS DISTINCT FROM 'string'
               OR char_length(enqueue.sequence->>'key') NOT BETWEEN 1 AND 255 THEN
                fields := array_append(fields, 'sequence.key');
                problems := array_append(problems, 'sequence.key: must be 1–255 characters long');
            ELSE
                seq_key := enqueue.sequence->>'key';
            END IF;
            IF enqueue.sequence ? 'on_failure'
               AND (jsonb_typeof(enqueue.sequence->'on_failure') <> 'string'
                    OR enqueue.sequence->>'on_failure' NOT IN ('continue', 'halt')) THEN
                fields := array_append(fields, 'sequence.on_failure');
                problems := array_append(problems, 'sequence.on_failure: must be one of continue, halt');
            ELSE
                seq_on_failure := coalesce(enqueue.sequence->>'on_failure', 'continue');
            END IF;
        END IF;
    END IF;
    IF cardinality(problems) > 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'queueflow.enqueue: ' || array_to_string(problems, '; '),
            COLUMN = fields[1];
    END IF;
    scheduled := CASE WHEN debounce IS NOT NULL THEN created + make_interval(secs => debounce)
                      ELSE coalesce(enqueue.run_at,
                                    created + make_interval(secs => coalesce(enqueue.delay_seconds, 0))) END;
    -- core.deadlines.row_errors: a job due at or after its deadline could never start.
    IF expires_at <= scheduled THEN
        RAISE EXCEPTION USING
            ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'queueflow.enqueue: expires_at: must be later than the job''s scheduled_at',
            COLUMN = 'expires_at';
    END IF;

    -- core.ids.new_id: 48 bits of milliseconds, then 80 random bits (bytes 1-6 and 11-14 of a version 4 UUID,
    -- the ones without version or variant bits), as 26 base32 digits of 5 bits from the top.
    bits := B'00' || (floor(extract(epoch FROM created) * 1000)::bigint)::bit(48)
            || ('x' || encode(substring(random_id FROM 1 FOR 6) || substring(random_id FROM 11 FOR 4), 'hex'))::bit(80);
    SELECT 'job_' || string_agg(substr(alphabet, substring(bits FROM i * 5 + 1 FOR 5)::integer + 1, 1), '' ORDER BY i)
      INTO new_id FROM generate_series(0, 25) AS i;

    IF rule_key IS NOT NULL THEN
        -- The idempotency key comes first: a repeat of a request answers with its job, whatever the rule says.
        IF idempotency_key IS NOT NULL THEN
            SELECT j.id INTO found_id FROM queueflow.jobs AS j
             WHERE j.tenant_id = enqueue.tenant_id AND j.idempotency_key = enqueue.idempotency_key;
            IF found_id IS NOT NULL THEN
                RETURN found_id;
            END IF;
        END IF;
        -- The key's row is the lock every enqueue of the key takes (the HTTP route's too: stores/postgres/unique.py),
        -- so they run one at a time. The lookup is a statement of its own, so its snapshot is taken after the lock.
        INSERT INTO queueflow.unique_keys AS k (tenant_id, key) VALUES (enqueue.tenant_id, rule_key)
            ON CONFLICT (tenant_id, key) DO UPDATE SET key = excluded.key;
        -- EXECUTE: planned for the table as it is at each call (as the HTTP route's lookup, CUSTOM_PLANS): a cached
        -- generic plan made while the table was nearly empty scanned it whole once it had grown.
        IF period IS NOT NULL THEN
            since := to_timestamp(floor(extract(epoch FROM created) / period) * period);
            EXECUTE 'SELECT j.id, j.status, j.created_at FROM queueflow.jobs AS j
                      WHERE j.tenant_id = $1 AND j.unique_key = $2 AND j.unique_key IS NOT NULL
                        AND j.created_at >= $3 AND j.created_at < $3 + make_interval(secs => $4)
                      ORDER BY j.created_at DESC, j.id DESC LIMIT 1'
               INTO existing USING enqueue.tenant_id, rule_key, since, period::double precision;
        ELSE
            -- A job `replace` may rewrite is locked as it is read, so no claim takes it meanwhile (claims skip
            -- locked rows).
            EXECUTE 'SELECT j.id, j.status, j.created_at FROM queueflow.jobs AS j
                      WHERE j.tenant_id = $1 AND j.unique_key = $2 AND j.unique_key IS NOT NULL
                        AND j.status = ANY ($3)
                      ORDER BY j.created_at DESC, j.id DESC LIMIT 1'
                    || CASE WHEN on_conflict = 'replace' THEN ' FOR UPDATE' ELSE '' END
               INTO existing USING enqueue.tenant_id, rule_key, coalesce(states, live);
        END IF;
        IF existing.id IS NOT NULL THEN
            IF on_conflict = 'error' THEN
                RAISE EXCEPTION USING
                    ERRCODE = 'unique_violation',
                    MESSAGE = 'queueflow.enqueue: a job with this unique key exists: ' || existing.id,
                    DETAIL = existing.id,
                    COLUMN = 'unique_rule.key';
            END IF;
            IF on_conflict = 'replace' AND existing.status IN ('pending', 'retrying') THEN
                UPDATE queueflow.jobs AS j
                   SET payload = enqueue.payload, priority = enqueue.priority, metadata = enqueue.metadata,
                       scheduled_at = CASE
                           WHEN debounce IS NOT NULL THEN least(
                               created + make_interval(secs => debounce),
                               existing.created_at + make_interval(secs => coalesce(debounce_max,
                                                                                     least(10 * debounce, 86400))))
                           ELSE coalesce(enqueue.run_at,
                                         created + make_interval(secs => coalesce(enqueue.delay_seconds, 0))) END
                 WHERE j.id = existing.id;
                PERFORM pg_notify('queueflow_work', (SELECT j.queue_name FROM queueflow.jobs AS j
                                                      WHERE j.id = existing.id));
            END IF;
            RETURN existing.id;
        END IF;
    END IF;

    LOOP
        INSERT INTO queueflow.jobs AS j (id, tenant_id, queue_name, task_name, payload, config, priority,
                                         scheduled_at, max_retries, timeout_seconds, metadata, idempotency_key,
                                         created_at, unique_key, expires_at, sequence_key, sequence_halt)
        VALUES (new_id, enqueue.tenant_id, enqueue.queue_name, enqueue.task_name, enqueue.payload,
                jsonb_build_object('backoff', policy)
                || CASE WHEN enqueue.concurrency_key IS NULL THEN '{}'::jsonb
                        ELSE jsonb_build_object('concurrency_key', enqueue.concurrency_key) END
                || CASE WHEN seq_key IS NULL THEN '{}'::jsonb
                        ELSE jsonb_build_object('sequence_on_failure', seq_on_failure) END, enqueue.priority,
                scheduled, enqueue.max_retries, enqueue.timeout_seconds, enqueue.metadata, enqueue.idempotency_key,
                created, rule_key, enqueue.expires_at, seq_key,
                CASE WHEN seq_key IS NOT NULL THEN seq_on_failure = 'halt' END)
        ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING;
        IF FOUND THEN
            RETURN new_id;
        END IF;
        SELECT j.id INTO found_id FROM queueflow.jobs AS j
         WHERE j.tenant_id = enqueue.tenant_id AND j.idempotency_key = enqueue.idempotency_key;
        IF found_id IS NOT NULL THEN
            RETURN found_id;
        END IF;
        -- The conflicting job was deleted (retention) between the two statements: the key is free again.
    END LOOP;
END
$fn$
"""

# 0016's function, for the downgrade.
OLD_ENQUEUE = r"""
CREATE FUNCTION queueflow.enqueue(
    tenant_id       text,
    task_name       text,
    payload         jsonb            DEFAULT '{}',
    queue_name      text             DEFAULT 'default',
    priority        integer          DEFAULT 0,
    run_at          timestamptz      DEFAULT NULL,
    delay_seconds   double precision DEFAULT NULL,
    max_retries     integer          DEFAULT 3,
    backoff         jsonb            DEFAULT '{}',
    timeout_seconds double precision DEFAULT NULL,
    metadata        jsonb            DEFAULT '{}',
    idempotency_key text             DEFAULT NULL,
    concurrency_key text             DEFAULT NULL,
    unique_rule     jsonb            DEFAULT NULL,
    expires_at      timestamptz      DEFAULT NULL
) RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    alphabet   CONSTANT text := '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    name_re    CONSTANT text := '^[A-Za-z0-9_.:-]{1,100}$';
    too_deep   CONSTANT jsonpath := 'strict $.**{128 to last} ? (@.type() == "object" || @.type() == "array")';
    problems   text[] := '{}';
    fields     text[] := '{}';
    policy     jsonb;
    field_name text;
    created    timestamptz := clock_timestamp();
    random_id  bytea := uuid_send(gen_random_uuid());
    bits       bit(130);
    new_id     text;
    found_id   text;
    all_states CONSTANT text[] := ARRAY['pending', 'running', 'retrying', 'completed', 'dead_letter', 'cancelled'];
    live       CONSTANT text[] := ARRAY['pending', 'retrying', 'running'];
    rule_key   text;
    states     text[];
    period     bigint;
    on_conflict text := 'skip';
    debounce   double precision;
    debounce_max double precision;
    since      timestamptz;
    existing   record;
    scheduled  timestamptz;
BEGIN
    IF tenant_id IS NULL OR tenant_id !~ name_re THEN
        fields := array_append(fields, 'tenant_id');
        problems := array_append(problems, 'tenant_id: must match ^[A-Za-z0-9_.:-]{1,100}$');
    END IF;
    IF task_name IS NULL OR char_length(task_name) NOT BETWEEN 1 AND 200 THEN
        fields := array_append(fields, 'task_name');
        problems := array_append(problems, 'task_name: must be 1–200 characters long');
    END IF;
    IF queue_name IS NULL OR queue_name !~ name_re THEN
        fields := array_append(fields, 'queue_name');
        problems := array_append(problems, 'queue_name: must match ^[A-Za-z0-9_.:-]{1,100}$');
    END IF;
    IF payload IS NULL OR jsonb_typeof(payload) <> 'object' THEN
        fields := array_append(fields, 'payload'); problems := array_append(problems, 'payload: must be a JSON object');
    ELSIF jsonb_path_exists(payload, too_deep) THEN
        fields := array_append(fields, 'payload');
        problems := array_append(problems, 'payload: nested deeper than 128 levels');
    END IF;
    IF priority IS NULL OR priority NOT BETWEEN -1000 AND 1000 THEN
        fields := array_append(fields, 'priority');
        problems := array_append(problems, 'priority: must be between -1000 and 1000');
    END IF;
    IF run_at IS NOT NULL AND delay_seconds IS NOT NULL THEN
        fields := array_append(fields, 'delay_seconds');
        problems := array_append(problems, 'delay_seconds: cannot be combined with run_at');
    END IF;
    -- What a client can read back: years 1-9999 (timestamptz reaches further, Python's datetime does not).
    IF run_at NOT BETWEEN '0001-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00' THEN
        fields := array_append(fields, 'run_at');
        problems := array_append(problems, 'run_at: must be between years 1 and 9999 in UTC');
    END IF;
    -- NaN compares greater than every number, so BETWEEN rejects it along with the infinities.
    IF delay_seconds IS NOT NULL AND NOT delay_seconds BETWEEN 0 AND 315360000 THEN
        fields := array_append(fields, 'delay_seconds');
        problems := array_append(problems, 'delay_seconds: must be between 0 and 3.1536e+08');
    END IF;
    IF max_retries IS NULL OR max_retries NOT BETWEEN 0 AND 100 THEN
        fields := array_append(fields, 'max_retries');
        problems := array_append(problems, 'max_retries: must be between 0 and 100');
    END IF;
    IF backoff IS NULL OR jsonb_typeof(backoff) <> 'object' THEN
        fields := array_append(fields, 'backoff'); problems := array_append(problems, 'backoff: must be a JSON object');
    ELSE
        -- A partial policy is merged with the defaults, as the HTTP route does.
        policy := '{"strategy": "exponential", "base_seconds": 1.0, "max_seconds": 3600.0, "jitter": true}'::jsonb
                  || backoff;
        FOR field_name IN SELECT jsonb_object_keys(backoff) LOOP
            IF field_name NOT IN ('strategy', 'base_seconds', 'max_seconds', 'jitter') THEN
                fields := array_append(fields, ('backoff.' || field_name));
                problems := array_append(problems, ('backoff.' || field_name || ': unknown field'));
            END IF;
        END LOOP;
        IF jsonb_typeof(policy->'strategy') <> 'string'
           OR policy->>'strategy' NOT IN ('exponential', 'linear', 'fixed') THEN
            fields := array_append(fields, 'backoff.strategy');
            problems := array_append(problems, 'backoff.strategy: must be one of exponential, linear, fixed');
        END IF;
        IF jsonb_typeof(policy->'base_seconds') <> 'number'
           OR NOT (policy->'base_seconds')::numeric BETWEEN 0.001 AND 86400 THEN
            fields := array_append(fields, 'backoff.base_seconds');
            problems := array_append(problems, 'backoff.base_seconds: must be between 0.001 and 86400');
        END IF;
        IF jsonb_typeof(policy->'max_seconds') <> 'number'
           OR NOT (policy->'max_seconds')::numeric BETWEEN 0.001 AND 604800 THEN
            fields := array_append(fields, 'backoff.max_seconds');
            problems := array_append(problems, 'backoff.max_seconds: must be between 0.001 and 604800');
        ELSIF jsonb_typeof(policy->'base_seconds') = 'number'
              AND (policy->'max_seconds')::numeric < (policy->'base_seconds')::numeric THEN
            fields := array_append(fields, 'backoff.max_seconds');
            problems := array_append(problems, 'backoff.max_seconds: must be at least base_seconds');
        END IF;
        IF jsonb_typeof(policy->'jitter') <> 'boolean' THEN
            fields := array_append(fields, 'backoff.jitter');
            problems := array_append(problems, 'backoff.jitter: must be true or false');
        END IF;
    END IF;
    IF timeout_seconds IS NOT NULL AND NOT timeout_seconds BETWEEN 1 AND 604800 THEN
        fields := array_append(fields, 'timeout_seconds');
        problems := array_append(problems, 'timeout_seconds: must be between 1 and 604800');
    END IF;
    IF metadata IS NULL OR jsonb_typeof(metadata) <> 'object' THEN
        fields := array_append(fields, 'metadata');
        problems := array_append(problems, 'metadata: must be a JSON object');
    ELSIF jsonb_path_exists(metadata, too_deep) THEN
        fields := array_append(fields, 'metadata');
        problems := array_append(problems, 'metadata: nested deeper than 128 levels');
    END IF;
    IF idempotency_key IS NOT NULL AND char_length(idempotency_key) NOT BETWEEN 1 AND 255 THEN
        fields := array_append(fields, 'idempotency_key');
        problems := array_append(problems, 'idempotency_key: must be 1–255 characters long');
    END IF;
    IF concurrency_key IS NOT NULL AND char_length(concurrency_key) NOT BETWEEN 1 AND 200 THEN
        fields := array_append(fields, 'concurrency_key');
        problems := array_append(problems, 'concurrency_key: must be 1–200 characters long');
    END IF;
    IF expires_at NOT BETWEEN '0001-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00' THEN
        fields := array_append(fields, 'expires_at');
        problems := array_append(problems, 'expires_at: must be between years 1 and 9999 in UTC');
    END IF;
    IF unique_rule IS NOT NULL AND jsonb_typeof(unique_rule) <> 'null' THEN
        IF jsonb_typeof(unique_rule) <> 'object' THEN
            fields := array_append(fields, 'unique_rule');
            problems := array_append(problems, 'unique_rule: must be a JSON object');
        ELSE
            FOR field_name IN SELECT jsonb_object_keys(unique_rule) LOOP
                IF field_name NOT IN ('key', 'states', 'period_seconds', 'on_conflict', 'debounce_seconds',
                                      'debounce_max_seconds') THEN
                    fields := array_append(fields, ('unique_rule.' || field_name));
                    problems := array_append(problems, ('unique_rule.' || field_name || ': unknown field'));
                END IF;
            END LOOP;
            IF jsonb_typeof(unique_rule->'key') IS DISTINCT FROM 'string'
               OR char_length(unique_rule->>'key') NOT BETWEEN 1 AND 255 THEN
                fields := array_append(fields, 'unique_rule.key');
                problems := array_append(problems, 'unique_rule.key: must be 1–255 characters long');
            ELSE
                rule_key := unique_rule->>'key';
            END IF;
            IF unique_rule ? 'period_seconds' AND jsonb_typeof(unique_rule->'period_seconds') <> 'null' THEN
                IF jsonb_typeof(unique_rule->'period_seconds') <> 'number'
                   OR (unique_rule->'period_seconds')::numeric <> trunc((unique_rule->'period_seconds')::numeric)
                   OR NOT (unique_rule->'period_seconds')::numeric BETWEEN 1 AND 31536000 THEN
                    fields := array_append(fields, 'unique_rule.period_seconds');
                    problems := array_append(problems,
                        'unique_rule.period_seconds: must be an integer between 1 and 31536000');
                ELSE
                    period := (unique_rule->>'period_seconds')::bigint;
                END IF;
            END IF;
            IF unique_rule ? 'states' AND jsonb_typeof(unique_rule->'states') <> 'null' THEN
                IF unique_rule ? 'period_seconds' AND jsonb_typeof(unique_rule->'period_seconds') <> 'null' THEN
                    fields := array_append(fields, 'unique_rule.states');
                    problems := array_append(problems, 'unique_rule.states: cannot be combined with period_seconds');
                ELSIF jsonb_typeof(unique_rule->'states') <> 'array' OR jsonb_array_length(unique_rule->'states') = 0
                   OR EXISTS (SELECT FROM jsonb_array_elements(unique_rule->'states') AS s
                               WHERE jsonb_typeof(s) <> 'string' OR NOT (s #>> '{}') = ANY (all_states)) THEN
                    fields := array_append(fields, 'unique_rule.states');
                    problems := array_append(problems,
                        'unique_rule.states: must be a non-empty array of job statuses');
                ELSE
                    states := ARRAY(SELECT jsonb_array_elements_text(unique_rule->'states'));
                END IF;
            END IF;
            IF unique_rule ? 'on_conflict' AND jsonb_typeof(unique_rule->'on_conflict') <> 'null' THEN
                IF jsonb_typeof(unique_rule->'on_conflict') <> 'string'
                   OR unique_rule->>'on_conflict' NOT IN ('skip', 'replace', 'error') THEN
                    fields := array_append(fields, 'unique_rule.on_conflict');
                    problems := array_append(problems, 'unique_rule.on_conflict: must be one of skip, replace, error');
                ELSE
                    on_conflict := unique_rule->>'on_conflict';
                END IF;
            END IF;
            IF unique_rule ? 'debounce_seconds' AND jsonb_typeof(unique_rule->'debounce_seconds') <> 'null' THEN
                IF jsonb_typeof(unique_rule->'debounce_seconds') <> 'number'
                   OR NOT (unique_rule->'debounce_seconds')::numeric BETWEEN 0.001 AND 86400 THEN
                    fields := array_append(fields, 'unique_rule.debounce_seconds');
                    problems := array_append(problems, 'unique_rule.debounce_seconds: must be between 0.001 and 86400');
                ELSE
                    debounce := (unique_rule->>'debounce_seconds')::double precision;
                END IF;
                IF on_conflict <> 'replace' THEN
                    fields := array_append(fields, 'unique_rule.debounce_seconds');
                    problems := array_append(problems, 'unique_rule.debounce_seconds: requires on_conflict "replace"');
                END IF;
                IF period IS NOT NULL OR (states IS NOT NULL AND NOT (states @> live AND live @> states)) THEN
                    fields := array_append(fields, 'unique_rule.debounce_seconds');
                    problems := array_append(problems, 'unique_rule.debounce_seconds: requires the default states');
                END IF;
                IF run_at IS NOT NULL THEN
                    fields := array_append(fields, 'run_at');
                    problems := array_append(problems, 'run_at: cannot be combined with unique.debounce_seconds');
                END IF;
                IF delay_seconds IS NOT NULL THEN
                    fields := array_append(fields, 'delay_seconds');
                    problems := array_append(problems,
                        'delay_seconds: cannot be combined with unique.debounce_seconds');
                END IF;
            END IF;
            IF unique_rule ? 'debounce_max_seconds' AND jsonb_typeof(unique_rule->'debounce_max_seconds') <> 'null' THEN
                IF debounce IS NULL AND NOT (unique_rule ? 'debounce_seconds') THEN
                    fields := array_append(fields, 'unique_rule.debounce_max_seconds');
                    problems := array_append(problems, 'unique_rule.debounce_max_seconds: requires debounce_seconds');
                ELSIF jsonb_typeof(unique_rule->'debounce_max_seconds') <> 'number'
                   OR NOT (unique_rule->'debounce_max_seconds')::numeric
                          BETWEEN coalesce(debounce, 0.001) AND 86400 THEN
                    fields := array_append(fields, 'unique_rule.debounce_max_seconds');
                    problems := array_append(problems,
                        'unique_rule.debounce_max_seconds: must be between debounce_seconds and 86400');
                ELSE
                    debounce_max := (unique_rule->>'debounce_max_seconds')::double precision;
                END IF;
            END IF;
        END IF;
    END IF;
    IF cardinality(problems) > 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'queueflow.enqueue: ' || array_to_string(problems, '; '),
            COLUMN = fields[1];
    END IF;
    scheduled := CASE WHEN debounce IS NOT NULL THEN created + make_interval(secs => debounce)
                      ELSE coalesce(enqueue.run_at,
                                    created + make_interval(secs => coalesce(enqueue.delay_seconds, 0))) END;
    -- core.deadlines.row_errors: a job due at or after its deadline could never start.
    IF expires_at <= scheduled THEN
        RAISE EXCEPTION USING
            ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'queueflow.enqueue: expires_at: must be later than the job''s scheduled_at',
            COLUMN = 'expires_at';
    END IF;

    -- core.ids.new_id: 48 bits of milliseconds, then 80 random bits (bytes 1-6 and 11-14 of a version 4 UUID,
    -- the ones without version or variant bits), as 26 base32 digits of 5 bits from the top.
    bits := B'00' || (floor(extract(epoch FROM created) * 1000)::bigint)::bit(48)
            || ('x' || encode(substring(random_id FROM 1 FOR 6) || substring(random_id FROM 11 FOR 4), 'hex'))::bit(80);
    SELECT 'job_' || string_agg(substr(alphabet, substring(bits FROM i * 5 + 1 FOR 5)::integer + 1, 1), '' ORDER BY i)
      INTO new_id FROM generate_series(0, 25) AS i;

    IF rule_key IS NOT NULL THEN
        -- The idempotency key comes first: a repeat of a request answers with its job, whatever the rule says.
        IF idempotency_key IS NOT NULL THEN
            SELECT j.id INTO found_id FROM queueflow.jobs AS j
             WHERE j.tenant_id = enqueue.tenant_id AND j.idempotency_key = enqueue.idempotency_key;
            IF found_id IS NOT NULL THEN
                RETURN found_id;
            END IF;
        END IF;
        -- The key's row is the lock every enqueue of the key takes (the HTTP route's too: stores/postgres/unique.py),
        -- so they run one at a time. The lookup is a statement of its own, so its snapshot is taken after the lock.
        INSERT INTO queueflow.unique_keys AS k (tenant_id, key) VALUES (enqueue.tenant_id, rule_key)
            ON CONFLICT (tenant_id, key) DO UPDATE SET key = excluded.key;
        -- EXECUTE: planned for the table as it is at each call (as the HTTP route's lookup, CUSTOM_PLANS): a cached
        -- generic plan made while the table was nearly empty scanned it whole once it had grown.
        IF period IS NOT NULL THEN
            since := to_timestamp(floor(extract(epoch FROM created) / period) * period);
            EXECUTE 'SELECT j.id, j.status, j.created_at FROM queueflow.jobs AS j
                      WHERE j.tenant_id = $1 AND j.unique_key = $2 AND j.unique_key IS NOT NULL
                        AND j.created_at >= $3 AND j.created_at < $3 + make_interval(secs => $4)
                      ORDER BY j.created_at DESC, j.id DESC LIMIT 1'
               INTO existing USING enqueue.tenant_id, rule_key, since, period::double precision;
        ELSE
            -- A job `replace` may rewrite is locked as it is read, so no claim takes it meanwhile (claims skip
            -- locked rows).
            EXECUTE 'SELECT j.id, j.status, j.created_at FROM queueflow.jobs AS j
                      WHERE j.tenant_id = $1 AND j.unique_key = $2 AND j.unique_key IS NOT NULL
                        AND j.status = ANY ($3)
                      ORDER BY j.created_at DESC, j.id DESC LIMIT 1'
                    || CASE WHEN on_conflict = 'replace' THEN ' FOR UPDATE' ELSE '' END
               INTO existing USING enqueue.tenant_id, rule_key, coalesce(states, live);
        END IF;
        IF existing.id IS NOT NULL THEN
            IF on_conflict = 'error' THEN
                RAISE EXCEPTION USING
                    ERRCODE = 'unique_violation',
                    MESSAGE = 'queueflow.enqueue: a job with this unique key exists: ' || existing.id,
                    DETAIL = existing.id,
                    COLUMN = 'unique_rule.key';
            END IF;
            IF on_conflict = 'replace' AND existing.status IN ('pending', 'retrying') THEN
                UPDATE queueflow.jobs AS j
                   SET payload = enqueue.payload, priority = enqueue.priority, metadata = enqueue.metadata,
                       scheduled_at = CASE
                           WHEN debounce IS NOT NULL THEN least(
                               created + make_interval(secs => debounce),
                               existing.created_at + make_interval(secs => coalesce(debounce_max,
                                                                                     least(10 * debounce, 86400))))
                           ELSE coalesce(enqueue.run_at,
                                         created + make_interval(secs => coalesce(enqueue.delay_seconds, 0))) END
                 WHERE j.id = existing.id;
                PERFORM pg_notify('queueflow_work', (SELECT j.queue_name FROM queueflow.jobs AS j
                                                      WHERE j.id = existing.id));
            END IF;
            RETURN existing.id;
        END IF;
    END IF;

    LOOP
        INSERT INTO queueflow.jobs AS j (id, tenant_id, queue_name, task_name, payload, config, priority,
                                         scheduled_at, max_retries, timeout_seconds, metadata, idempotency_key,
                                         created_at, unique_key, expires_at)
        VALUES (new_id, enqueue.tenant_id, enqueue.queue_name, enqueue.task_name, enqueue.payload,
                jsonb_build_object('backoff', policy)
                || CASE WHEN enqueue.concurrency_key IS NULL THEN '{}'::jsonb
                        ELSE jsonb_build_object('concurrency_key', enqueue.concurrency_key) END, enqueue.priority,
                scheduled, enqueue.max_retries, enqueue.timeout_seconds, enqueue.metadata, enqueue.idempotency_key,
                created, rule_key, enqueue.expires_at)
        ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING;
        IF FOUND THEN
            RETURN new_id;
        END IF;
        SELECT j.id INTO found_id FROM queueflow.jobs AS j
         WHERE j.tenant_id = enqueue.tenant_id AND j.idempotency_key = enqueue.idempotency_key;
        IF found_id IS NOT NULL THEN
            RETURN found_id;
        END IF;
        -- The conflicting job was deleted (retention) between the two statements: the key is free again.
    END LOOP;
END
$fn$
"""

# The claim function of this revision: `claim.function.claim_function_ddl` of CLAIM with the new columns, its
# lines wrapped (whitespace is all that differs).
CLAIM_0018 = """
CREATE FUNCTION queueflow.claim_0018(text[], int, timestamptz, interval, text[], text[])
RETURNS TABLE ("id" text, "tenant_id" text, "queue_name" text, "task_name" text, "payload" jsonb, "config" jsonb,
    "status" text, "priority" integer, "scheduled_at" timestamp with time zone, "locked_until" timestamp with time
    zone, "lease_token" uuid, "delivery_count" integer, "retry_count" integer, "max_retries" integer,
    "timeout_seconds" double precision, "next_retry_at" timestamp with time zone, "workflow_id" text,
    "workflow_step_id" text, "result" jsonb, "error_message" text, "metadata" jsonb, "idempotency_key" text,
    "created_at" timestamp with time zone, "started_at" timestamp with time zone, "completed_at" timestamp with time
    zone, "progress" jsonb, "trace_context" jsonb, "unique_key" text, "expires_at" timestamp with time zone,
    "sequence_key" text, "sequence_halt" boolean, "fair_share" integer, "after_tenant" text) LANGUAGE plpgsql SET
    plan_cache_mode = force_generic_plan AS $claim$
#variable_conflict use_column
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    RETURN QUERY
WITH RECURSIVE queue AS (SELECT q.name FROM unnest($1::text[]) AS q(name)
                          WHERE NOT EXISTS (SELECT FROM queueflow.queue_settings AS s
                                             WHERE s.queue_name = q.name AND (paused OR concurrency_limit IS NOT
                                                 NULL OR key_concurrency_limit IS NOT NULL OR rate_jobs IS NOT
                                                 NULL))
                         OFFSET 0),
pending AS (
    SELECT queue.name AS queue_name, first.tenant_id, first.scheduled_at
      FROM queue,
           LATERAL (SELECT j.tenant_id, j.scheduled_at FROM queueflow.jobs AS j
                     WHERE j.queue_name = queue.name AND j.status IN ('pending', 'retrying')
                     ORDER BY j.tenant_id, j.priority DESC, j.scheduled_at, j.created_at, j.id LIMIT 1) AS first
    UNION ALL
    SELECT pending.queue_name, next.tenant_id, next.scheduled_at
      FROM pending,
           LATERAL (SELECT j.tenant_id, j.scheduled_at FROM queueflow.jobs AS j
                     WHERE j.queue_name = pending.queue_name AND j.status IN ('pending', 'retrying')
                       AND j.tenant_id > pending.tenant_id
                     ORDER BY j.tenant_id, j.priority DESC, j.scheduled_at, j.created_at, j.id LIMIT 1) AS next
),
tenant AS (
    SELECT pending.queue_name, pending.tenant_id FROM pending
     WHERE (pending.scheduled_at <= $3::timestamptz AND $5::text[] IS NULL)
        OR (SELECT true FROM queueflow.jobs AS j
             WHERE j.queue_name = pending.queue_name AND j.tenant_id = pending.tenant_id AND j.status IN ('pending',
                 'retrying') AND j.scheduled_at <= $3::timestamptz AND (j.expires_at IS NULL OR j.expires_at >
                 $3::timestamptz) AND ($5::text[] IS NULL OR j.task_name = ANY($5::text[])) AND (j.sequence_key IS
                 NULL OR NOT EXISTS (SELECT FROM queueflow.jobs AS s
                    WHERE s.tenant_id = j.tenant_id AND s.sequence_key = j.sequence_key AND s.id < j.id
                      AND (s.status IN ('pending', 'retrying', 'running')
                           OR (s.status = 'dead_letter' AND s.sequence_halt)))
   AND NOT EXISTS (SELECT FROM queueflow.jobs AS s
                    WHERE s.tenant_id = j.tenant_id AND s.sequence_key = j.sequence_key AND s.status = 'running'
                   OFFSET 0))
             ORDER BY j.priority DESC, j.scheduled_at, j.created_at, j.id LIMIT 1)
),
share AS (SELECT ceil($2::int::float8 / greatest(count(DISTINCT tenant_id), 1))::int AS per_tenant,
                 array_agg(queue_name) AS queue_names, array_agg(tenant_id) AS tenant_ids
            FROM tenant),
turn AS (SELECT (SELECT t.tenant_id FROM queueflow.claim_turns AS t WHERE t.queues = $6::text[]) AS after_tenant),
picked AS (
       SELECT c.id, c.tenant_id, c.nth, c.tenant_id COLLATE "C" <= turn.after_tenant AS wrapped
         FROM (SELECT due.id, due.tenant_id, share.per_tenant,
                      row_number() OVER (
                          PARTITION BY due.tenant_id
                          ORDER BY due.priority DESC, due.scheduled_at, due.created_at, due.id) AS nth
                 FROM share, unnest(share.queue_names, share.tenant_ids) AS tenant(queue_name, tenant_id),
                      LATERAL (SELECT * FROM (
                               SELECT j.id, j.tenant_id, j.priority, j.scheduled_at, j.created_at
                                 FROM queueflow.jobs AS j
                                WHERE j.queue_name = tenant.queue_name AND j.tenant_id = tenant.tenant_id
                                  AND j.status IN ('pending', 'retrying') AND j.scheduled_at <= $3::timestamptz AND
                                      (j.expires_at IS NULL OR j.expires_at > $3::timestamptz) AND ($5::text[] IS
                                      NULL OR j.task_name = ANY($5::text[])) AND (j.sequence_key IS NULL OR NOT
                                      EXISTS (SELECT FROM queueflow.jobs AS s
                    WHERE s.tenant_id = j.tenant_id AND s.sequence_key = j.sequence_key AND s.id < j.id
                      AND (s.status IN ('pending', 'retrying', 'running')
                           OR (s.status = 'dead_letter' AND s.sequence_halt)))
   AND NOT EXISTS (SELECT FROM queueflow.jobs AS s
                    WHERE s.tenant_id = j.tenant_id AND s.sequence_key = j.sequence_key AND s.status = 'running'
                   OFFSET 0))
                                ORDER BY j.priority DESC, j.scheduled_at, j.created_at, j.id
                                LIMIT $2::int
                                FOR UPDATE SKIP LOCKED) AS ahead
                                LIMIT share.per_tenant) AS due) AS c, turn
        WHERE c.nth <= c.per_tenant
        ORDER BY c.nth, wrapped, c.tenant_id COLLATE "C"
        LIMIT $2::int),
served AS (SELECT tenant_id FROM picked ORDER BY nth DESC, wrapped DESC, tenant_id COLLATE "C" DESC LIMIT 1),
free AS (SELECT t.queues FROM served, turn, queueflow.claim_turns AS t
           WHERE served.tenant_id <> turn.after_tenant
             AND t.queues = $6::text[] AND t.tenant_id = turn.after_tenant
             FOR UPDATE OF t SKIP LOCKED),
moved AS (UPDATE queueflow.claim_turns AS t SET tenant_id = served.tenant_id
            FROM free, served
           WHERE t.queues = free.queues),
born AS (INSERT INTO queueflow.claim_turns (queues, tenant_id)
         SELECT $6::text[], served.tenant_id FROM served, turn WHERE turn.after_tenant IS NULL
         ON CONFLICT DO NOTHING)
UPDATE queueflow.jobs
   SET status = 'running',
       lease_token = gen_random_uuid(),
       delivery_count = delivery_count + 1,
       started_at = $3::timestamptz,
       config = CASE WHEN started_at IS NULL THEN config
                     ELSE jsonb_set(config, '{started_before}', to_jsonb(started_at)) END,
       locked_until = LEAST($3::timestamptz + $4::interval, $3::timestamptz + make_interval(secs =>
           timeout_seconds))
 WHERE id = ANY(ARRAY(SELECT picked.id FROM picked))
RETURNING id, tenant_id, queue_name, task_name, payload, config, status, priority, scheduled_at, locked_until,
    lease_token, delivery_count, retry_count, max_retries, timeout_seconds, next_retry_at, workflow_id,
    workflow_step_id, result, error_message, metadata, idempotency_key, created_at, started_at, completed_at,
    progress, trace_context, unique_key, expires_at, sequence_key, sequence_halt, (SELECT per_tenant FROM share) AS
    fair_share, (SELECT after_tenant FROM turn) AS after_tenant
;
END
$claim$
"""

UPGRADE = [
    "ALTER TABLE queueflow.jobs ADD COLUMN sequence_key text, ADD COLUMN sequence_halt boolean",
    """
    CREATE INDEX idx_jobs_sequence ON queueflow.jobs (tenant_id, sequence_key, id)
     WHERE sequence_key IS NOT NULL
       AND (status IN ('pending', 'retrying', 'running') OR (status = 'dead_letter' AND sequence_halt))
    """,
    """
    CREATE INDEX idx_jobs_sequence_running ON queueflow.jobs (tenant_id, sequence_key)
     WHERE sequence_key IS NOT NULL AND status = 'running'
    """,
    "CREATE INDEX idx_jobs_sequence_key ON queueflow.jobs (tenant_id, sequence_key) WHERE sequence_key IS NOT NULL",
    f"DROP FUNCTION {OLD_SIGNATURE}",
    ENQUEUE,
    f"REVOKE ALL ON FUNCTION {SIGNATURE} FROM PUBLIC",
    f"GRANT EXECUTE ON FUNCTION {SIGNATURE} TO queueflow_enqueuer",
    CLAIM_0018,
]

DOWNGRADE = [
    "DROP FUNCTION queueflow.claim_0018(text[], integer, timestamptz, interval, text[], text[])",
    f"DROP FUNCTION {SIGNATURE}",
    OLD_ENQUEUE,
    f"REVOKE ALL ON FUNCTION {OLD_SIGNATURE} FROM PUBLIC",
    f"GRANT EXECUTE ON FUNCTION {OLD_SIGNATURE} TO queueflow_enqueuer",
    "DROP INDEX queueflow.idx_jobs_sequence_key",
    "DROP INDEX queueflow.idx_jobs_sequence_running",
    "DROP INDEX queueflow.idx_jobs_sequence",
    "ALTER TABLE queueflow.jobs DROP COLUMN sequence_halt, DROP COLUMN sequence_key",
]


def run(statements: list[str]) -> None:
    # As in 0001: one statement per call, through the driver (no bind-parameter parsing of the SQL text).
    for sql in statements:
        if context.is_offline_mode():
            op.execute(sql)
        else:
            op.get_bind().exec_driver_sql(sql)


def upgrade() -> None:
    run(UPGRADE)


def downgrade() -> None:
    run(DOWNGRADE)
