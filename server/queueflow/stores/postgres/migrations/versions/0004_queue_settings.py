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

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from alembic import context, op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _revision_0003() -> ModuleType:
    # Alembic loads revisions by path (their names are no module names): so does this, for 0003's function text.
    path = Path(__file__).with_name("0003_closer_to_the_application.py")
    spec = importlib.util.spec_from_file_location("queueflow_migration_0003", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_0003 = _revision_0003()
OLD_SIGNATURE: str = _0003.SIGNATURE
SIGNATURE = OLD_SIGNATURE.replace(", text)", ", text, text)")


def _with_concurrency_key(function: str) -> str:
    """0003's `queueflow.enqueue` with the `concurrency_key` parameter, its check, and its place in `config`."""
    edits = [
        (
            "    idempotency_key text             DEFAULT NULL\n) RETURNS text",
            "    idempotency_key text             DEFAULT NULL,\n"
            "    concurrency_key text             DEFAULT NULL\n) RETURNS text",
        ),
        (
            "    IF cardinality(problems) > 0 THEN\n",
            "    IF concurrency_key IS NOT NULL AND char_length(concurrency_key) NOT BETWEEN 1 AND 200 THEN\n"
            "        fields := array_append(fields, 'concurrency_key');\n"
            "        problems := array_append(problems, 'concurrency_key: must be 1–200 characters long');\n"
            "    END IF;\n"
            "    IF cardinality(problems) > 0 THEN\n",
        ),
        (
            "jsonb_build_object('backoff', policy),",
            "jsonb_build_object('backoff', policy)\n"
            "                || CASE WHEN enqueue.concurrency_key IS NULL THEN '{}'::jsonb\n"
            "                        ELSE jsonb_build_object('concurrency_key', enqueue.concurrency_key) END,",
        ),
    ]
    for old, new in edits:
        assert function.count(old) == 1, old
        function = function.replace(old, new)
    return function


ENQUEUE = _with_concurrency_key(_0003.ENQUEUE)

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
    _0003.ENQUEUE,
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
