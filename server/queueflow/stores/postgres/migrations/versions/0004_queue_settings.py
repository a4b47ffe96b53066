"""Flow control: one row of settings per tenant and queue (README.md, "Flow control").

A queue nobody configured has no row, and a claim on it reads nothing but `idx_queue_settings_restricting`, a
partial index that holds only rows that restrict leasing (paused, or with a limit): the probe that keeps the
claim of an unconfigured queue what it was. The rate limit's token bucket lives in the row too
(`rate_tokens` as of `rate_refilled_at`), so it is read and spent under the same row lock as the limits.

`queueflow.enqueue(...)` (0003) takes `concurrency_key` now, as the HTTP route takes it: a new parameter changes the
function's signature, so it is dropped and created again (with 0003's SECURITY DEFINER, search_path, PUBLIC revoked
and EXECUTE granted to queueflow_enqueuer). The key is stored as the HTTP route stores it, in `config`, and checked
as the route checks it: 1–200 characters (text cannot hold NUL), else SQLSTATE 22023 naming `concurrency_key`.
The new function is 0003's text with the parameter, its check and its storage added; the downgrade restores 0003's.
Both are written out here in full: a revision is a record of what it ran, so editing 0003 never changes 0004.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_SIGNATURE = (
    "queueflow.enqueue(text, text, jsonb, text, integer, timestamptz, double precision, integer, jsonb,"
    " double precision, jsonb, text)"
)
SIGNATURE = (
    "queueflow.enqueue(text, text, jsonb, text, integer, timestamptz, double precision, integer, jsonb,"
    " double precision, jsonb, text, text)"
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
    concurrency_key text             DEFAULT NULL
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
    IF cardinality(problems) > 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'queueflow.enqueue: ' || array_to_string(problems, '; '),
            COLUMN = fields[1];
    END IF;

    -- core.ids.new_id: 48 bits of milliseconds, then 80 random bits (bytes 1-6 and 11-14 of a version 4 UUID,
    -- the ones without version or variant bits), as 26 base32 digits of 5 bits from the top.
    bits := B'00' || (floor(extract(epoch FROM created) * 1000)::bigint)::bit(48)
            || ('x' || encode(substring(random_id FROM 1 FOR 6) || substring(random_id FROM 11 FOR 4), 'hex'))::bit(80);
    SELECT 'job_' || string_agg(substr(alphabet, substring(bits FROM i * 5 + 1 FOR 5)::integer + 1, 1), '' ORDER BY i)
      INTO new_id FROM generate_series(0, 25) AS i;

    LOOP
        INSERT INTO queueflow.jobs AS j (id, tenant_id, queue_name, task_name, payload, config, priority,
                                         scheduled_at, max_retries, timeout_seconds, metadata, idempotency_key,
                                         created_at)
        VALUES (new_id, enqueue.tenant_id, enqueue.queue_name, enqueue.task_name, enqueue.payload,
                jsonb_build_object('backoff', policy)
                || CASE WHEN enqueue.concurrency_key IS NULL THEN '{}'::jsonb
                        ELSE jsonb_build_object('concurrency_key', enqueue.concurrency_key) END, enqueue.priority,
                coalesce(enqueue.run_at, created + make_interval(secs => coalesce(enqueue.delay_seconds, 0))),
                enqueue.max_retries, enqueue.timeout_seconds, enqueue.metadata, enqueue.idempotency_key, created)
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

# What 0003 installed, restored by the downgrade.
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
    idempotency_key text             DEFAULT NULL
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
    IF cardinality(problems) > 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'queueflow.enqueue: ' || array_to_string(problems, '; '),
            COLUMN = fields[1];
    END IF;

    -- core.ids.new_id: 48 bits of milliseconds, then 80 random bits (bytes 1-6 and 11-14 of a version 4 UUID,
    -- the ones without version or variant bits), as 26 base32 digits of 5 bits from the top.
    bits := B'00' || (floor(extract(epoch FROM created) * 1000)::bigint)::bit(48)
            || ('x' || encode(substring(random_id FROM 1 FOR 6) || substring(random_id FROM 11 FOR 4), 'hex'))::bit(80);
    SELECT 'job_' || string_agg(substr(alphabet, substring(bits FROM i * 5 + 1 FOR 5)::integer + 1, 1), '' ORDER BY i)
      INTO new_id FROM generate_series(0, 25) AS i;

    LOOP
        INSERT INTO queueflow.jobs AS j (id, tenant_id, queue_name, task_name, payload, config, priority,
                                         scheduled_at, max_retries, timeout_seconds, metadata, idempotency_key,
                                         created_at)
        VALUES (new_id, enqueue.tenant_id, enqueue.queue_name, enqueue.task_name, enqueue.payload,
                jsonb_build_object('backoff', policy), enqueue.priority,
                coalesce(enqueue.run_at, created + make_interval(secs => coalesce(enqueue.delay_seconds, 0))),
                enqueue.max_retries, enqueue.timeout_seconds, enqueue.metadata, enqueue.idempotency_key, created)
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

UPGRADE = [
    """
    CREATE TABLE queueflow.queue_settings (
        tenant_id              text        NOT NULL,
        queue_name             text        NOT NULL,
        paused                 boolean     NOT NULL DEFAULT false,
        concurrency_limit      integer     CHECK (concurrency_limit BETWEEN 1 AND 100000),
        key_concurrency_limit  integer     CHECK (key_concurrency_limit BETWEEN 1 AND 100000),
        rate_jobs              integer     CHECK (rate_jobs BETWEEN 1 AND 100000),
        rate_per_seconds       float8      CHECK (rate_per_seconds BETWEEN 0.001 AND 86400),
        rate_tokens            float8,
        rate_refilled_at       timestamptz,
        updated_at             timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, queue_name),
        CHECK ((rate_jobs IS NULL) = (rate_per_seconds IS NULL))
    )
    """,
    """
    CREATE INDEX idx_queue_settings_restricting ON queueflow.queue_settings (queue_name, tenant_id)
        WHERE paused OR concurrency_limit IS NOT NULL OR key_concurrency_limit IS NOT NULL OR rate_jobs IS NOT NULL
    """,
    f"DROP FUNCTION {OLD_SIGNATURE}",
    ENQUEUE,
    f"REVOKE ALL ON FUNCTION {SIGNATURE} FROM PUBLIC",
    f"GRANT EXECUTE ON FUNCTION {SIGNATURE} TO queueflow_enqueuer",
]

DOWNGRADE = [
    f"DROP FUNCTION {SIGNATURE}",
    OLD_ENQUEUE,
    f"REVOKE ALL ON FUNCTION {OLD_SIGNATURE} FROM PUBLIC",
    f"GRANT EXECUTE ON FUNCTION {OLD_SIGNATURE} TO queueflow_enqueuer",
    "DROP TABLE queueflow.queue_settings",
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
