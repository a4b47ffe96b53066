"""The raw ceilings: pgbench running QueueFlow's own SQL shapes (bench/pgbench/*.sql) on its migrated schema, and
the plain claim beside them (`plain_claim_complete`): the seed's claim on the seed's table and claim index, in a
schema of its own (`plain`) in the same database.

4 clients on 2 threads (`-c 4 -j 2`), prepared statements, a fixed number of transactions per client (`-t`), so
the drains consume exactly the rows seeded before the clock starts. Throughput is rows done ÷ pgbench's own
elapsed time (which excludes connecting).
"""

from __future__ import annotations

import asyncio
import glob
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from queueflow.stores.postgres.claim.unrestricted_sql import CLAIM
from queueflow.stores.postgres.sql import COMPLETE

from bench.database import BenchDatabase

GENERIC_PLAN = "SET plan_cache_mode = force_generic_plan"
SCRIPTS = Path(__file__).resolve().parent.parent / "pgbench"
CLIENTS, THREADS = 4, 2
_TPS = re.compile(r"^tps = ([0-9.]+) \(without initial connection time\)", re.MULTILINE)


def pgbench_path() -> str:
    """Debian's postgresql-client wrapper, or the server package's own binary."""
    found = shutil.which("pgbench") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/pgbench"))), None)
    if found is None:
        raise RuntimeError("pgbench is not installed: apt-get install postgresql-client (`make bench` does so)")
    return found


@dataclass(frozen=True, slots=True)
class RawRun:
    rows: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.rows / self.seconds


async def pgbench(database: BenchDatabase, script: str, transactions: int, **variables: int) -> float:
    """Run `script` with `transactions` per client; pgbench's elapsed seconds."""
    url = urlsplit(database.url)
    # A Unix-socket server (the embedded one) is named by ?host=<directory>; pgbench's -h takes that directory.
    host = parse_qs(url.query).get("host", [url.hostname or "127.0.0.1"])[0]
    args = [pgbench_path(), "-n", "-M", "prepared", "-c", str(CLIENTS), "-j", str(THREADS), "-t", str(transactions)]
    args += ["-h", host, "-p", str(url.port or 5432), "-U", url.username or "postgres"]
    for name, value in variables.items():
        args += ["-D", f"{name}={value}"]
    args += ["-f", str(SCRIPTS / script), database.name]  # an absolute `script` is taken as it is
    process = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output = (await process.communicate())[0].decode()
    match = _TPS.search(output)
    if process.returncode != 0 or match is None or "number of failed transactions: 0 " not in output:
        raise RuntimeError(f"pgbench {script} failed:\n{output[-3000:]}")
    return CLIENTS * transactions / float(match.group(1))


def _script(claim: str, complete: str) -> str:
    """bench/pgbench/claim_complete.sql with `claim` and `complete` in place of its `{claim}` and `{complete}` lines."""
    template = (SCRIPTS / "claim_complete.sql").read_text()
    return template.replace("\n{claim}\n", f"\n{claim}\n", 1).replace("\n{complete}\n", f"\n{complete}\n", 1)


def _substituted(sql: str, values: list[tuple[str, str]]) -> str:
    for parameter, value in values:
        sql = sql.replace(parameter, value)
    assert "$" not in sql, sql
    return sql


def claim_complete_script() -> str:
    """The store's claim and completion written for pgbench: CLAIM's CTEs first, then its UPDATE as the CTE
    `claimed`; COMPLETE on the claimed ids and tokens with the same result for each; their parameters as the
    script's values."""
    ctes, update = CLAIM.strip().split("\nUPDATE queueflow.jobs", 1)
    claim = _substituted(
        f"{ctes},\nclaimed AS (\nUPDATE queueflow.jobs{update})",
        [
            ("$1::text[]", "ARRAY['raw']::text[]"),
            ("$2", ":batch"),
            ("$3", "now()"),
            ("$4::interval", "'30 seconds'::interval"),
            ("$5::text[]", "NULL::text[]"),
            ("$6::text[]", "ARRAY['raw']::text[]"),
        ],
    )
    complete = _substituted(
        COMPLETE.strip() + ";",
        [
            ("$1::text[]", ":ids::text[]"),
            ("$2::uuid[]", ":tokens::uuid[]"),
            ("$3::jsonb[]", """array_fill('{"ok": true}'::jsonb, ARRAY[cardinality(:ids::text[])])"""),
            ("$4", "now()"),
        ],
    )
    # The store plans its claim once (unrestricted_sql.BEGIN_CLAIM: a generic plan, in the claim's transaction only).
    return _script(f"{GENERIC_PLAN};\n{claim}", f"RESET plan_cache_mode;\n{complete}")


async def claim_complete(database: BenchDatabase, batch: int, transactions: int) -> RawRun:
    """Claim `batch` + complete `batch`, 4 clients, on exactly as many pending rows as they will take."""
    jobs = CLIENTS * transactions * batch
    await database.reset_jobs()
    await database.seed_pending("raw", jobs)
    with tempfile.TemporaryDirectory() as directory:
        script = Path(directory) / "claim_complete.sql"
        script.write_text(claim_complete_script())
        seconds = await pgbench(database, str(script), transactions, batch=batch)
    done = await database.count("status = 'completed'")
    if done != jobs:
        raise RuntimeError(f"raw claim {batch} + complete {batch}: {done} of {jobs} jobs completed")
    return RawRun(done, seconds)


PLAIN = "plain.jobs"


def plain_claim_complete_script() -> str:
    """The seed's claim and completion (bench/pgbench/plain_claim.sql) in bench/pgbench/claim_complete.sql."""
    text = "\n".join(
        line
        for line in (SCRIPTS / "plain_claim.sql").read_text().splitlines()
        if line == "-- complete" or not line.startswith("-- ")
    )
    claim, complete = text.split("\n-- complete\n")
    return _script(claim.strip(), complete.strip())


async def create_plain(database: BenchDatabase) -> None:
    """The plain claim's schema (bench/pgbench/plain_schema.sql) in `database`."""
    await database.db.execute((SCRIPTS / "plain_schema.sql").read_text())


async def plain_claim_complete(database: BenchDatabase, batch: int, transactions: int) -> RawRun:
    """The plain claim's `batch` + complete `batch` (`plain_claim_complete_script`), as `claim_complete`
    runs the store's: 4 clients, on exactly as many pending rows of plain.jobs as they will take."""
    jobs = CLIENTS * transactions * batch
    await database.reset_jobs(PLAIN)
    await database.seed_pending("raw", jobs, PLAIN)
    with tempfile.TemporaryDirectory() as directory:
        script = Path(directory) / "plain_claim_complete.sql"
        script.write_text(plain_claim_complete_script())
        seconds = await pgbench(database, str(script), transactions, batch=batch)
    done = await database.count("status = 'completed'", PLAIN)
    if done != jobs:
        raise RuntimeError(f"plain claim {batch} + complete {batch}: {done} of {jobs} jobs completed")
    return RawRun(done, seconds)


async def insert(database: BenchDatabase, transactions: int) -> RawRun:
    """100-row INSERTs, 4 clients, into an empty table."""
    await database.reset_jobs()
    await database.vacuum()
    seconds = await pgbench(database, "insert.sql", transactions)
    rows = await database.count("true")
    if rows != CLIENTS * transactions * 100:
        raise RuntimeError(f"raw insert: {rows} of {CLIENTS * transactions * 100} rows inserted")
    return RawRun(rows, seconds)
