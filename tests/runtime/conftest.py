"""The server's runtime services on the in-memory store and the TestClock (tests/inprocess.py's fixtures)."""

from __future__ import annotations

import random

import pytest
from queueflow.clocks import TestClock
from queueflow.engine import Engine
from queueflow.stores.memory import InMemoryJobStore


@pytest.fixture
def engine(store: InMemoryJobStore, clock: TestClock) -> Engine:
    return Engine(store, clock, rng=random.Random(3))
