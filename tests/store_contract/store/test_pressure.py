"""The `PressureStore` method on every store, against its docstring in `ports`: what the database is under.

A held horizon on a real database is in tests/postgres/test_pressure.py (it needs a second session)."""

from __future__ import annotations

from queueflow.core.pressure import Pressure
from queueflow.ports import Store
from queueflow.stores.memory import InMemoryJobStore

from tests.store_contract.store_rows import inserted, job


async def test_with_no_other_transaction_open_nothing_holds_the_horizon(store: Store) -> None:
    await inserted(store, job(), job())

    pressure = await store.store_pressure()

    assert (pressure.horizon, pressure.oldest_xact_start) == (None, None)
    for table in pressure.tables:
        assert min(table.live_tuples, table.dead_tuples) >= 0
        assert table.size_bytes > 0


async def test_the_in_memory_store_has_no_tables_and_no_horizon() -> None:
    assert await InMemoryJobStore().store_pressure() == Pressure()
