"""The migration produces exactly the schema the store relies on, and can be undone and redone."""

from __future__ import annotations

import hashlib

import asyncpg
import pytest
from msgspec.structs import replace
from queueflow.cli import main
from queueflow.clocks import TestClock
from queueflow.core.types import JobStatus, NewJob
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres import schema as pgschema
from queueflow.stores.postgres.rows import insert_columns

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on
from tests.postgres.helpers import row as job_row

TABLES = [
    "claim_generations",
    "claim_turns",
    "endpoint_slots",
    "endpoints",
    "events",
    "jobs",
    "queue_settings",
    "schedules",
    "triggers",
    "unique_keys",
    "workflow_steps",
    "workflows",
]

NEW_SINCE_0010 = ("unique_keys", "endpoint_slots", "endpoints", "triggers", "events", "claim_generations")


async def tables(connection: asyncpg.Connection) -> list[str]:
    rows = await connection.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'queueflow' ORDER BY 1")
    return [row["tablename"] for row in rows]


async def test_upgrade_downgrade_upgrade() -> None:
    async with pg.fresh_database() as url, pg.connect(url) as connection:
        await pgschema.upgrade_async(url)
        assert await tables(connection) == TABLES
        await pgschema.downgrade_async(url)
        assert await tables(connection) == []
        leftovers = await connection.fetchval(
            "SELECT (SELECT count(*) FROM pg_namespace WHERE nspname = 'queueflow')"
            " + (SELECT count(*) FROM pg_proc WHERE proname = 'notify_work')"
        )
        assert leftovers == 0
        await pgschema.upgrade_async(url)
        assert await tables(connection) == TABLES
        assert await connection.fetchval("SELECT version_num FROM alembic_version") == "0023"


# What each revision builds, pinned as the sha256 of its `CATALOG` when it shipped. A revision is the record of what
# ran on every database already upgraded: editing one (a function's text, an index, a default) changes what a fresh
# `upgrade head` builds but not what those databases hold, so it fails here. A new revision adds its own line.
BUILT = {
    "0001": "855adf862e26cd00b1c094f24d81537366d256790e93d881a1f567b6396ed6f4",
    "0002": "d91714b18e0b1ba7992e6273dd043d58980fc46a2d14f92c3e672da4efbca6b8",
    "0003": "7a523ec96301385bef263d0cd0d16d11b78d4aae8a28d2b628759a72128c734d",
    "0004": "b16312db09f76bdaa8719faa2dba95fe12e0b29e37b431a819974fd8b40982d7",
    "0005": "d80c4e8915827e17defba6427fadd370d3ab47d8b6b2ed3cacccdd7338effe18",
    "0006": "276e8c909378580b7cd38f896446f39356fde9cc508767a5945550b2e6b7829f",
    "0007": "e78a8f237d1c0b873bedb381f3da7f7ab9b6a3b5f28a58f4af13f1967252168f",
    "0008": "d193ca9a8554891fc22c9af9ea9f4bbf859e2edc8346e725e8dedfea2480e3d2",
    "0009": "2d71a27a85b4d22e04b7548e9bc6d50f57f43eef10c0a2a18535816b71ef240b",
    "0010": "0b574b3ff3fc52a6d95ea14e2469fb1745441debf3f562d48a7b12fab0bb3ee7",
    "0011": "73b5fb9edf14fb80c069121b0ae08217d21248301a1edaac5e68919fd9af070c",
    "0012": "b01e422303f8c9e1d64f5e3d611ec663804210470018a67ddf74bcc9c376c105",
    "0013": "fdbcccdeed9a605bd742d5e1efe547d17b20288ea184131cf20baa7e7d3bba41",
    "0014": "84efdcb043691a6cb8254fc34a5afa65ee673b59e8da5c77ac34ae55c53dfc10",
    "0015": "0ae8d3798065ba4a775b616c7af507c6f25d67a7e4e60f4118c8c5b5e80b1be9",
    "0016": "f235b5131f3c67cd9988c96059688a0fb6fb209b8c3ab40e730a8593e1294050",
    "0017": "4ab117ed8f0065a85269bafec191a3cbaa870c168e09b895dff2638c876ce0f9",
    "0018": "b61421beb2ec31c24aa9bd7b867957a9afaeb9580dc2c5edebe5ac14c8bcb206",
    "0019": "2f3b667be4aa25ab5b9b030b21e5895bba557862e9720eafa9ca99c1f91a2381",
    "0020": "4c995722e0c04ae5682178123ec47551b2fd50b664a1049a5559acfb3cbbcab0",
    "0021": "0e05a9f5700c5fc8946699e970d32bf06c88bb4d983f852edce0a8c58ef8c543",
    "0022": "166af1602626ee6e6498a8f6f88003cd660696d6c7a17e1f586a2df827428522",
    "0023": "3671d92371354b4c9379118c6c10f8d5bfa824fe5dd2ceefb380dcebcba9e7a6",
}

# Every object the migrations make in the queueflow schema, each with the definition PostgreSQL holds for it.
CATALOG = """
SELECT kind, name, definition FROM (
    SELECT 'column' AS kind, table_name || '.' || column_name AS name,
           concat_ws(' ', data_type, is_nullable, column_default) AS definition
      FROM information_schema.columns WHERE table_schema = 'queueflow'
    UNION ALL
    SELECT 'table', oid::regclass::text, coalesce(array_to_string(reloptions, ','), '')
      FROM pg_class WHERE relnamespace = 'queueflow'::regnamespace AND relkind = 'r'
    UNION ALL
    SELECT 'constraint', conrelid::regclass || '.' || conname, pg_get_constraintdef(oid)
      FROM pg_constraint WHERE connamespace = 'queueflow'::regnamespace
    UNION ALL
    SELECT 'index', indexname, indexdef FROM pg_indexes WHERE schemaname = 'queueflow'
    UNION ALL
    SELECT 'trigger', tgrelid::regclass || '.' || tgname, pg_get_triggerdef(oid)
      FROM pg_trigger WHERE NOT tgisinternal AND tgrelid::regclass::text LIKE 'queueflow.%'
    UNION ALL
    SELECT 'function', p.oid::regprocedure::text, pg_get_functiondef(p.oid) || (
               SELECT coalesce(string_agg(a.grantee::regrole::text || ' ' || a.privilege_type, ', ' ORDER BY 1), '')
                 FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) AS a WHERE a.grantee <> p.proowner)
      FROM pg_proc AS p WHERE p.pronamespace = 'queueflow'::regnamespace
) AS catalog ORDER BY kind COLLATE "C", name COLLATE "C"
"""


async def built(connection: asyncpg.Connection) -> str:
    rows = await connection.fetch(CATALOG)
    return hashlib.sha256("\n".join("\t".join(row) for row in rows).encode()).hexdigest()


async def test_each_revision_builds_and_its_downgrade_restores_what_it_did_when_it_shipped() -> None:
    async with pg.fresh_database() as url, pg.connect(url) as connection:
        for revision in BUILT:
            await pgschema.upgrade_async(url, revision)
            assert (revision, await built(connection)) == (revision, BUILT[revision])
        for revision in reversed(list(BUILT)[:-1]):
            await pgschema.downgrade_async(url, revision)
            assert (revision, await built(connection)) == (revision, BUILT[revision])


async def test_0004_down_to_0003_restores_its_enqueue_function_and_grant() -> None:
    async with pg.fresh_database() as url, pg.connect(url) as connection:
        await pgschema.upgrade_async(url)
        keyed = "SELECT queueflow.enqueue(tenant_id => 'a', task_name => 't', concurrency_key => 'u1')"
        assert await connection.fetchval(keyed)
        await pgschema.downgrade_async(url, "0003")
        assert await tables(connection) == [
            table for table in TABLES if table not in ("queue_settings", "claim_turns", *NEW_SINCE_0010)
        ]
        with pytest.raises(asyncpg.UndefinedFunctionError):
            await connection.fetchval(keyed)
        assert await connection.fetchval("SELECT queueflow.enqueue(tenant_id => 'a', task_name => 't')")
        grants = await connection.fetch(
            "SELECT p.proname, a.grantee::regrole::text AS grantee FROM pg_proc AS p, aclexplode(p.proacl) AS a"
            " WHERE p.proname = 'enqueue' AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner"
        )
        assert [row["grantee"] for row in grants] == ["queueflow_enqueuer"]  # and not PUBLIC (grantee 0)
        await pgschema.upgrade_async(url)
        assert await connection.fetchval(keyed)


async def test_0005_down_to_0004_restores_the_claim_index_without_the_tenant() -> None:
    query = "SELECT indexdef FROM pg_indexes WHERE indexname = 'idx_jobs_claim'"
    async with pg.fresh_database() as url, pg.connect(url) as connection:
        await pgschema.upgrade_async(url)
        assert "(queue_name, tenant_id, priority DESC" in await connection.fetchval(query)
        await pgschema.downgrade_async(url, "0004")
        assert "(queue_name, priority DESC, scheduled_at, created_at, id)" in await connection.fetchval(query)
        await pgschema.upgrade_async(url)
        assert "(queue_name, tenant_id, priority DESC" in await connection.fetchval(query)


async def test_0006_down_to_0005_drops_the_key_index_and_the_key_turn() -> None:
    query = "SELECT count(*) FROM pg_indexes WHERE indexname = 'idx_jobs_keyed'"
    column = "SELECT count(*) FROM information_schema.columns WHERE table_name = 'queue_settings' AND column_name = $1"
    async with pg.fresh_database() as url, pg.connect(url) as connection:
        await pgschema.upgrade_async(url)
        assert (await connection.fetchval(query), await connection.fetchval(column, "key_turn")) == (1, 1)
        await pgschema.downgrade_async(url, "0005")
        assert (await connection.fetchval(query), await connection.fetchval(column, "key_turn")) == (0, 0)
        await pgschema.upgrade_async(url)
        assert (await connection.fetchval(query), await connection.fetchval(column, "key_turn")) == (1, 1)


def test_queueflow_migrate_accepts_a_plain_postgresql_url(capsys: pytest.CaptureFixture[str]) -> None:
    url = pg.blocking(pg.create_database)
    try:
        assert url.startswith("postgresql://")
        assert main(["migrate", "--database-url", url]) == 0
        assert "head" in capsys.readouterr().out

        async def version() -> object:
            async with pg.connect(url) as connection:
                return await connection.fetchval("SELECT version_num FROM alembic_version")

        assert pg.blocking(version) == "0023"
    finally:
        pg.blocking(lambda: pg.drop_database(url))


async def test_jobs_table_storage_parameters(postgres_url: str) -> None:
    async with pg.connect(postgres_url) as connection:
        options = await connection.fetchval("SELECT reloptions FROM pg_class WHERE oid = 'queueflow.jobs'::regclass")
    assert sorted(options) == ["autovacuum_vacuum_scale_factor=0.05", "fillfactor=85"]


async def test_jobs_indexes(postgres_url: str) -> None:
    async with pg.connect(postgres_url) as connection:
        rows = await connection.fetch("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'jobs'")
    indexes = {row["indexname"]: row["indexdef"].split(" USING ", 1)[1] for row in rows}
    # Jobs still to start: release 0.2.0's claims read it during a rolling deploy (migration 0021 keeps it).
    assert indexes["idx_jobs_claim"] == (
        "btree (queue_name, tenant_id, priority DESC, scheduled_at, created_at, id)"
        " WHERE (status = ANY (ARRAY['pending'::text, 'retrying'::text]))"
    )
    # The claim's: by generation, then the same, less the jobs known to wait in their sequence (migrations 0021,
    # 0022). Its status test is in the "C" collation, so that a claim that states it cannot be planned on
    # idx_jobs_claim (a predicate proof needs the same collation), which holds every retired generation's entries.
    assert indexes["idx_jobs_claim_gen"] == (
        "btree (gen, queue_name, tenant_id, priority DESC, scheduled_at, created_at, id)"
        " WHERE (((status COLLATE \"C\") = ANY (ARRAY['pending'::text, 'retrying'::text]))"
        " AND (sequence_waiting IS NOT TRUE))"
    )
    assert indexes["idx_jobs_lease_expiry"] == "btree (locked_until) WHERE (status = 'running'::text)"
    assert indexes["uq_jobs_tenant_idempotency_key"] == (
        "btree (tenant_id, idempotency_key) WHERE (idempotency_key IS NOT NULL)"
    )
    unique = [row["indexname"] for row in rows if row["indexdef"].startswith("CREATE UNIQUE")]
    assert sorted(unique) == ["jobs_pkey", "uq_jobs_tenant_idempotency_key"]
    # Ascending: each new entry goes in at its tenant's right end, where a split leaves full pages (migration 0020).
    assert indexes["idx_jobs_tenant_created"] == "btree (tenant_id, created_at, id)"
    assert indexes["idx_jobs_metadata"] == "gin (metadata jsonb_path_ops) WHERE (metadata <> '{}'::jsonb)"
    assert indexes["idx_jobs_due"] == (
        "btree (queue_name, scheduled_at)"
        " WHERE ((status = ANY (ARRAY['pending'::text, 'retrying'::text])) AND (scheduled_at > created_at))"
    )
    # Only jobs with a concurrency key, which the claim's key turns find by a skip scan (migration 0006).
    assert indexes["idx_jobs_keyed"] == (
        "btree (queue_name, tenant_id, ((config ->> 'concurrency_key'::text)) COLLATE \"C\", priority DESC,"
        " scheduled_at, created_at, id)"
        " WHERE ((status = ANY (ARRAY['pending'::text, 'retrying'::text])) AND (config ? 'concurrency_key'::text))"
    )
    # Retention's ranges, one per (tenant, queue), and the skip scan that finds the queues (migration 0017).
    assert indexes["idx_jobs_finished"] == (
        "btree (tenant_id, queue_name, completed_at)"
        " WHERE (status = ANY (ARRAY['completed'::text, 'dead_letter'::text, 'cancelled'::text]))"
    )
    # Only unstarted jobs with a deadline, which the wait timer expires (migration 0016).
    assert indexes["idx_jobs_expiry"] == (
        "btree (expires_at)"
        " WHERE ((expires_at IS NOT NULL) AND (status = ANY (ARRAY['pending'::text, 'retrying'::text])))"
    )
    # Only jobs of a sequence, those that hold it, the running ones first, then by id: the claim's probe, whose
    # first entry answers (0021); and the rest of a sequence's jobs, less the running ones, for listings by key.
    assert indexes["idx_jobs_sequence"] == (
        "btree (tenant_id, sequence_key, ((status <> 'running'::text)), id) WHERE ((sequence_key IS NOT NULL)"
        " AND ((status = ANY (ARRAY['pending'::text, 'retrying'::text, 'running'::text]))"
        " OR ((status = 'dead_letter'::text) AND sequence_halt)))"
    )
    assert indexes["idx_jobs_sequence_key"] == (
        "btree (tenant_id, sequence_key) WHERE ((sequence_key IS NOT NULL) AND (status <> 'running'::text))"
    )
    # Every index is one a statement or the janitor reads: each costs a write on every non-HOT update.
    assert sorted(indexes) == [
        "idx_jobs_claim", "idx_jobs_claim_gen", "idx_jobs_due", "idx_jobs_expiry", "idx_jobs_finished",
        "idx_jobs_keyed",
        "idx_jobs_lease_expiry",
        "idx_jobs_metadata", "idx_jobs_sequence", "idx_jobs_sequence_key",
        "idx_jobs_tenant_created", "idx_jobs_unique_key", "idx_jobs_workflow", "jobs_pkey",
        "uq_jobs_tenant_idempotency_key",
    ]  # fmt: skip


async def test_insert_trigger_notifies_the_queue(postgres_url: str) -> None:
    async with pg.connect(postgres_url) as connection:
        trigger = await connection.fetchval(
            "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 'queueflow.jobs'::regclass"
            " AND NOT tgisinternal AND tgname = 'jobs_notify_work'"
        )
        body = await connection.fetchval("SELECT prosrc FROM pg_proc WHERE proname = 'notify_work'")
    assert trigger == (
        "CREATE TRIGGER jobs_notify_work AFTER INSERT ON queueflow.jobs REFERENCING NEW TABLE AS inserted"
        " FOR EACH STATEMENT EXECUTE FUNCTION queueflow.notify_work()"
    )
    assert "pg_notify('queueflow_work', queue_name)" in body
    assert "status = 'pending'" in body


async def test_the_other_tables(postgres_url: str) -> None:
    async with pg.connect(postgres_url) as connection:
        rows = await connection.fetch(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'queueflow'"
        )
        step_key = await connection.fetchval(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE conrelid = 'queueflow.workflow_steps'::regclass AND contype = 'p'"
        )
        schedule_unique = await connection.fetchval(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE conrelid = 'queueflow.schedules'::regclass AND contype = 'u'"
        )
    columns: dict[str, set[str]] = {}
    for row in rows:
        columns.setdefault(row["table_name"], set()).add(row["column_name"])
    assert {
        "id", "tenant_id", "name", "status", "context", "idempotency_key", "created_at", "completed_at",
        "unfinished", "partial",
    } <= columns["workflows"]  # fmt: skip
    assert {
        "workflow_id", "name", "idx", "task_name", "payload", "depends_on", "on_failure", "status", "job_id",
        "queue_name", "priority", "max_retries", "config", "timeout_seconds", "result", "remaining", "dependents",
    } <= columns["workflow_steps"]  # fmt: skip
    assert {
        "id", "tenant_id", "name", "cron", "timezone", "task_name", "queue_name", "payload", "priority",
        "max_retries", "enabled", "next_run_at", "last_run_at", "created_at", "updated_at",
    } <= columns["schedules"]  # fmt: skip
    assert step_key == "PRIMARY KEY (workflow_id, name)"
    assert schedule_unique == "UNIQUE (tenant_id, name)"


# The job insert of revision 0002's server, as it was (the store's own has since gained columns).
INSERT_0002 = """
INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, payload, config, priority, scheduled_at,
                            max_retries, timeout_seconds, metadata, idempotency_key, created_at, workflow_id,
                            workflow_step_id)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::jsonb[], $7::int[],
                     $8::timestamptz[], $9::int[], $10::float8[], $11::jsonb[], $12::text[], $13::timestamptz[],
                     $14::text[], $15::text[])
"""


async def test_an_existing_database_upgrades_to_head_with_its_jobs_intact() -> None:
    # Rows as a 0002 server wrote them: its insert statement (which names its columns), and a finished job.
    rows = [job_row(task_name=f"t{i}", payload={"i": i}, idempotency_key=f"k{i}") for i in range(3)]
    done = replace(rows[0], status=JobStatus.COMPLETED, result={"done": True}, completed_at=START)
    async with pg.fresh_database() as url:
        await pgschema.upgrade_async(url, "0002")
        async with pg.connect(url) as connection:
            await connection.fetch(INSERT_0002, *insert_columns(rows)[:15])
            await connection.execute(
                "UPDATE queueflow.jobs SET status = 'completed', result = '{\"done\": true}', completed_at = $2"
                " WHERE id = $1",
                done.id,
                START,
            )
        await pgschema.upgrade_async(url)
        async with PostgresJobStore.from_url(url, pool_size=1) as store:
            assert [await store.job_get(job.id) for job in rows] == [done, *rows[1:]]
            engine = engine_on(store, TestClock(START))
            # The idempotency keys still hold, whichever way the repeat comes.
            assert (await engine.enqueue(T, NewJob(task_name="again", idempotency_key="k1"))).job == rows[1]
        async with pg.connect(url) as connection:
            repeat = await connection.fetchval(
                "SELECT queueflow.enqueue(tenant_id => $1, task_name => 'again', idempotency_key => 'k2')", T
            )
            assert repeat == rows[2].id
            assert await connection.fetchval("SELECT version_num FROM alembic_version") == "0023"


async def test_0007_backfills_running_workflows_so_they_keep_advancing_and_its_downgrade_keeps_the_results() -> None:
    """A workflow half run at 0007, taken down to 0006 (results merged back into the context, as 0006's server
    kept them) and up again (results, counts and dependents backfilled from that), then run to its end."""
    from queueflow.core.workflow import CONTEXT_KEY, NewStep, NewWorkflow, WorkflowStatus

    async with pg.fresh_database() as url, pg.connect(url) as connection:
        await pgschema.upgrade_async(url)
        clock = TestClock(START)
        steps = [
            NewStep(name="a", task_name="t"),
            NewStep(name="b", task_name="t"),
            NewStep(name="c", task_name="t", depends_on=["a", "b"]),
            NewStep(name="d", task_name="t", depends_on=["c"]),
        ]
        async with PostgresJobStore.from_url(url) as store:
            engine = engine_on(store, clock)
            workflow, _ = await engine.create_workflow(T, NewWorkflow(name="wf", steps=steps, context={"day": 1}))
            held = {job.workflow_step_id: job for job in await engine.lease(["default"], max_jobs=10)}
            await engine.complete(held["a"].id, held["a"].lease_token or "", "A")
        await pgschema.downgrade_async(url, "0006")
        assert (
            await connection.fetchval("SELECT context FROM queueflow.workflows WHERE id = $1", workflow.id)
            == '{"a": "A", "day": 1}'
        )
        await pgschema.upgrade_async(url)
        counted = await connection.fetchrow(
            "SELECT unfinished, partial FROM queueflow.workflows WHERE id = $1", workflow.id
        )
        assert tuple(counted) == (3, False)
        rows = await connection.fetch(
            "SELECT name, result, remaining, dependents FROM queueflow.workflow_steps WHERE workflow_id = $1"
            " ORDER BY idx",
            workflow.id,
        )
        assert [(r["name"], r["result"], r["remaining"], r["dependents"]) for r in rows] == [
            ("a", '"A"', 0, ["c"]),
            ("b", None, 0, ["c"]),
            ("c", None, 1, ["d"]),
            ("d", None, 1, []),
        ]
        async with PostgresJobStore.from_url(url) as store:
            engine = engine_on(store, clock, seed=12)
            await engine.complete(held["b"].id, held["b"].lease_token or "", "B")
            (c,) = await engine.lease(["default"], max_jobs=10)
            assert c.payload[CONTEXT_KEY] == {"day": 1, "a": "A", "b": "B"}
            await engine.complete(c.id, c.lease_token or "", "C")
            (d,) = await engine.lease(["default"], max_jobs=10)
            await engine.complete(d.id, d.lease_token or "", "D")
            final = await engine.get_workflow(T, workflow.id)
        assert final.status is WorkflowStatus.COMPLETED
        assert final.context == {"day": 1, "a": "A", "b": "B", "c": "C", "d": "D"}


# The step insert of revision 0007's server (unchanged at 0008), as it was: 0009 must leave it working.
STEPS_INSERT_0007 = """
INSERT INTO queueflow.workflow_steps (workflow_id, name, idx, task_name, payload, depends_on, on_failure, status,
                                      job_id, queue_name, priority, max_retries, config, timeout_seconds,
                                      remaining, dependents)
VALUES ($1, $2, 0, 't', '{}', '{}', 'halt', 'pending', NULL, 'default', 0, 3, '{}', NULL, 0, '{}')
"""


async def test_0009_is_expand_only_and_its_downgrade_drops_what_0008_cannot_hold() -> None:
    async with pg.fresh_database() as url, pg.connect(url) as connection:
        await pgschema.upgrade_async(url)
        await connection.execute(
            "INSERT INTO queueflow.workflows (id, tenant_id, name) VALUES ('wf_1', 't', 'wf'), ('wf_2', 't', 'wf')"
        )
        # A 0008 server's writes still fit: a step with a task, its old statuses.
        await connection.execute(STEPS_INSERT_0007, "wf_1", "old")
        await connection.execute(
            "INSERT INTO queueflow.workflow_steps (workflow_id, name, idx, wait, status, due_at)"
            " VALUES ('wf_1', 'nap', 1, '{\"seconds\": 5}', 'waiting', now()),"
            "        ('wf_1', 'ok', 2, '{\"signal\": \"approve\"}', 'pending', NULL)"
        )
        signals = await connection.fetch("SELECT name, signal FROM queueflow.workflow_steps ORDER BY idx")
        assert [tuple(row) for row in signals] == [("old", None), ("nap", None), ("ok", "approve")]
        with pytest.raises(asyncpg.UniqueViolationError):  # signal names are unique within a workflow
            await connection.execute(
                "INSERT INTO queueflow.workflow_steps (workflow_id, name, idx, wait)"
                " VALUES ('wf_1', 'ok2', 3, '{\"signal\": \"approve\"}')"
            )
        await connection.execute(
            "INSERT INTO queueflow.workflow_steps (workflow_id, name, idx, wait)"
            " VALUES ('wf_2', 'ok', 0, '{\"signal\": \"approve\"}')"
        )  # another workflow's signal of the same name
        await connection.execute(
            "INSERT INTO queueflow.schedules (id, tenant_id, name, cron, workflow)"
            " VALUES ('sch_1', 't', 'nightly', '0 3 * * *', '{\"name\": \"wf\", \"steps\": []}')"
        )
        await pgschema.downgrade_async(url, "0008")
        rows = await connection.fetch("SELECT name, task_name, status FROM queueflow.workflow_steps ORDER BY idx")
        assert sorted(tuple(row) for row in rows) == [
            ("nap", "", "cancelled"), ("ok", "", "pending"), ("ok", "", "pending"), ("old", "t", "pending")
        ]  # fmt: skip
        assert await connection.fetchval("SELECT count(*) FROM queueflow.schedules") == 0
        await pgschema.upgrade_async(url)
        assert await connection.fetchval("SELECT version_num FROM alembic_version") == "0023"
