"""tests/conftest.py names the slow tests (started first) and the ones that share sdks/typescript/dist (under its
lock) by name: a test renamed and not there any more would silently start last, or overlap a build."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import conftest

TESTS = Path(__file__).resolve().parents[1]
DEFINED = {
    match.group(1)
    for path in TESTS.rglob("test_*.py")
    for match in re.finditer(r"^(?:async )?def (test_\w+)", path.read_text(), re.MULTILINE)
}


@pytest.mark.parametrize("names", [conftest.SLOW_FIRST, conftest.BUILDS_TYPESCRIPT_DIST, conftest.RUNS_TYPESCRIPT_DIST])
def test_every_test_named_in_the_conftest_exists(names: set[str]) -> None:
    assert sorted(names - DEFINED) == []


def test_a_writer_of_dist_is_not_also_a_reader() -> None:
    assert conftest.BUILDS_TYPESCRIPT_DIST.isdisjoint(conftest.RUNS_TYPESCRIPT_DIST)
