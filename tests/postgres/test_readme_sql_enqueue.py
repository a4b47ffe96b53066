"""README, "Enqueue in your own transaction": its psql and Python examples, run as written on a migrated database."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

from queueflow.stores.postgres.url import asyncpg_dsn

from tests import pg

README = Path(__file__).resolve().parents[2] / "README.md"


def block(language: str) -> str:
    section = README.read_text().split("\n## Enqueue in your own transaction\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(rf"```{language}\n(.*?)```", section, re.DOTALL)
    assert match is not None, f"no {language} example in the README's transactional enqueue section"
    return match.group(1)


async def test_the_psql_and_python_examples_run_as_written(postgres_url: str) -> None:
    await pg.empty(postgres_url)
    async with pg.connect(postgres_url) as connection:
        await connection.execute("DROP TABLE IF EXISTS orders")
        try:
            await connection.execute(block("sql"))  # one simple-protocol script, as psql would send it
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                block("python"),
                env={**os.environ, "DATABASE_URL": asyncpg_dsn(postgres_url)},
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
            assert process.returncode == 0, stderr.decode()
            rows = await connection.fetch(
                "SELECT id, payload, queue_name, config->>'concurrency_key' AS concurrency_key FROM queueflow.jobs"
                " ORDER BY payload::text"
            )
            assert stdout.decode().strip() == f"enqueued {rows[1]['id']}"
            assert [(row["payload"], row["queue_name"], row["concurrency_key"]) for row in rows] == [
                ('{"order": 42}', "mail", "customer-7"),
                ('{"order": 43}', "mail", None),
            ]
            assert await connection.fetchval("SELECT count(*) FROM orders") == 2
        finally:
            await connection.execute("DROP TABLE IF EXISTS orders")
