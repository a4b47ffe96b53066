"""The values every suite's tests share, defined once: when a test's clock starts, and the tenant it acts for."""

from __future__ import annotations

from datetime import UTC, datetime

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
"""Where every TestClock of the suites starts (the `clock` fixtures, the PostgreSQL helpers)."""
T = "tenant-a"
"""The tenant a store or engine test acts for (the API suites' keys name their own tenants)."""
