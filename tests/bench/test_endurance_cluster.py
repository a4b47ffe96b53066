"""The endurance run's own PostgreSQL cluster (bench/endurance/cluster.py): up with PostgreSQL's defaults (autovacuum
on, where the machine's shared server has it off), its data kept over a real restart, nothing left behind after it."""

from __future__ import annotations

import asyncio
import socket

import asyncpg
import pytest

from bench.endurance.cluster import Cluster, own_cluster, settings


async def _count(url: str) -> int:
    connection = await asyncpg.connect(url)
    try:
        return int(await connection.fetchval("SELECT count(*) FROM kept"))
    finally:
        await connection.close()


async def _restart_ends_sessions(own: Cluster) -> bool:
    """Whether a session open across `restart` was ended by it (what the endurance run's restart phase relies on)."""
    connection = await asyncpg.connect(own.url)
    try:
        await connection.execute("CREATE TABLE kept (n int); INSERT INTO kept VALUES (1), (2)")
        await asyncio.to_thread(own.restart)
        try:
            await connection.fetchval("SELECT 1")
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
            return True
        return False
    finally:
        connection.terminate()


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def test_the_cluster_has_autovacuum_on_keeps_its_data_over_a_restart_and_leaves_nothing() -> None:
    with own_cluster() as own:
        found = asyncio.run(settings(own.url))
        assert found["autovacuum"] == "on", found
        assert found["fsync"] == "on", found
        assert found["synchronous_commit"] == "on", found
        assert asyncio.run(_restart_ends_sessions(own))
        assert asyncio.run(_count(own.url)) == 2
        folder, port = own.folder, own.port
    assert not folder.exists()
    assert not _listening(port)


def _fail_inside(seen: list[Cluster]) -> None:
    with own_cluster() as own:
        seen.append(own)
        raise RuntimeError("the run failed")


def test_the_cluster_is_stopped_and_removed_when_the_run_fails() -> None:
    seen: list[Cluster] = []
    with pytest.raises(RuntimeError, match="the run failed"):
        _fail_inside(seen)
    (own,) = seen
    assert not own.folder.exists()
    assert not _listening(own.port)
