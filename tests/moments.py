"""The values every suite's tests share, defined once: when a test's clock starts, the tenant it acts for, and a
session that holds the database's horizon from then on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from queueflow.core.pressure import HorizonHolder

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
"""Where every TestClock of the suites starts (the `clock` fixtures, the PostgreSQL helpers)."""
T = "tenant-a"
"""The tenant a store or engine test acts for (the API suites' keys name their own tenants)."""
HOLDER = HorizonHolder(
    pid=4242,
    application_name="nightly-report",
    state="idle in transaction",
    xact_start=START,
    query_start=START + timedelta(seconds=2),
    age_transactions=31_000,
)
"""A forgotten `BEGIN` that has held the xmin horizon since START (`core.pressure`; the in-memory store has none)."""
