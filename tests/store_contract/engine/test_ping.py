from __future__ import annotations

from queueflow.engine import Engine
from queueflow.ports import JobStore


async def test_a_reachable_store_answers_ping(store: JobStore, engine: Engine) -> None:
    assert await store.ping() is None
    assert await engine.ping() is None
