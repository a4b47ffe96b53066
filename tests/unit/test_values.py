from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from queueflow.clocks import TestClock
from queueflow.core.cursor import decode_cursor, encode_cursor
from queueflow.core.errors import ValidationError
from queueflow.core.ids import IdSource, _encode
from queueflow.core.jsonvalue import MAX_DEPTH, contains, storage_errors
from queueflow.core.types import Cursor


@pytest.mark.parametrize(
    ("value", "loc"),
    [
        ({"a": "x\x00"}, ("p", "a")),
        ({"a\x00": 1}, ("p", "a\x00")),
        ({"a": ["ok", "\udc80"]}, ("p", "a", 1)),
        ({"a": float("nan")}, ("p", "a")),
        ({"a": {1, 2}}, ("p", "a")),
    ],
)
def test_unstorable_values_are_located(value: object, loc: tuple[object, ...]) -> None:
    (error,) = storage_errors(value, ("p",))
    assert error.loc == loc


def test_depth_limit() -> None:
    deep: object = 1
    for _ in range(MAX_DEPTH):
        deep = [deep]
    assert storage_errors(deep, ()) == []
    assert storage_errors([deep], ())


def test_storable_values() -> None:
    assert storage_errors({"a": [1, 2.5, None, True, "é", {"b": 10**40}]}, ()) == []


@pytest.mark.parametrize(
    ("container", "contained", "expected"),
    [
        ({"a": 1, "b": 2}, {"a": 1}, True),
        ({"a": 1}, {"a": 2}, False),
        ({"a": {"b": 1, "c": 2}}, {"a": {"b": 1}}, True),
        ({"t": ["x", "y"]}, {"t": ["y"]}, True),
        ({"t": ["x", "y"]}, {"t": "y"}, False),
        ([1, 2, 3], 2, True),
        ({"a": 1}, {"a": True}, False),
        ({"a": True}, {"a": True}, True),
        ({"a": [{"b": 1, "c": 2}]}, {"a": [{"b": 1}]}, True),
        ({}, {}, True),
    ],
)
def test_contains_follows_jsonb(container: object, contained: object, expected: bool) -> None:
    assert contains(container, contained) is expected


def test_ids_are_prefixed_and_time_sortable() -> None:
    rng = random.Random(1)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    ids = [IdSource(rng).new_id("job", t0 + timedelta(milliseconds=i)) for i in range(50)]
    assert all(i.startswith("job_") and len(i) == 30 for i in ids)
    assert ids == sorted(ids)
    assert len(set(ids)) == 50


def test_the_ids_of_one_batch_increase_in_its_order_within_one_millisecond() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    for seed in range(20):
        ids = IdSource(random.Random(seed)).new_ids("job", t0, 1000)
        assert ids == sorted(ids)
        assert len(set(ids)) == 1000
        assert {i[:14] for i in ids} == {IdSource(random.Random(0)).new_id("job", t0)[:14]}  # the time part: t0's
    top = random.Random(0)
    top.getrandbits = lambda k: 2**k - 1  # type: ignore[method-assign]  # the highest start a run can have
    highest = IdSource(top).new_ids("job", t0, 1000)  # never carries into the time part
    assert {i[:14] for i in highest} == {IdSource(random.Random(0)).new_id("job", t0)[:14]}


def test_the_ids_of_one_batch_are_each_the_encoding_of_its_value() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    for low in (0, 1, 500, 1000, 1023):  # runs that start anywhere in a 1,024-value block, some crossing into the next
        rng = random.Random(0)
        rng.getrandbits = lambda k, low=low: (2 ** (k - 1)) | low  # type: ignore[method-assign]
        start = (int(t0.timestamp() * 1000) << 80) | (2**78) | low
        expected = [_encode("job", start + offset) for offset in range(1000)]
        assert IdSource(rng).new_ids("job", t0, 1000) == expected
    assert IdSource(random.Random(0)).new_ids("job", t0, 0) == []


def test_ids_of_one_millisecond_increase_in_the_order_they_are_made() -> None:
    t0 = datetime(2026, 1, 2, tzinfo=UTC)
    falling = iter([2**79, 2**60, 5, 2**79 - 1])  # random parts that would order them backwards

    class Falling(random.Random):
        def getrandbits(self, k: int) -> int:
            return next(falling)

    source = IdSource(Falling())
    made = [source.new_id("seq", t0), source.new_id("seq", t0), *source.new_ids("seq", t0, 2)]
    assert made == sorted(made)
    assert len(set(made)) == 4
    # A later millisecond starts from its own random part.
    later = IdSource(random.Random(1)).new_id("seq", t0 + timedelta(milliseconds=1))
    assert later > made[-1]


def test_each_id_source_starts_its_own_order() -> None:
    # What one source made before never moves another's ids: a source's first id of a millisecond is its random
    # draw, whatever other sources made at that millisecond (each engine owns one, so one test's ids never depend on
    # the tests before it in the process).
    t0 = datetime(2026, 1, 2, tzinfo=UTC)
    IdSource(_FixedBits(2**80 - 1)).new_id("job", t0)  # the highest value of t0's millisecond
    assert IdSource(_FixedBits(0)).new_id("job", t0) == _encode("job", int(t0.timestamp() * 1000) << 80)


def test_cursor_round_trip_and_garbage() -> None:
    cursor = Cursor(datetime(2026, 1, 1, 12, 30, 0, 123456, tzinfo=UTC), "job_01ABC")
    assert decode_cursor(encode_cursor(cursor)) == cursor
    for garbage in ["", "%%%", encode_cursor(cursor)[:-3], "MjAyNi0wMS0wMQ"]:
        with pytest.raises(ValidationError):
            decode_cursor(garbage)


def test_test_clock_moves_only_when_told() -> None:
    clock = TestClock(datetime(2026, 1, 1, tzinfo=UTC))
    assert clock.now() == clock.now() == datetime(2026, 1, 1, tzinfo=UTC)
    assert clock.advance(seconds=1.5, minutes=1) == datetime(2026, 1, 1, 0, 1, 1, 500000, tzinfo=UTC)
    assert clock.set(datetime(2027, 1, 1, tzinfo=UTC)) == clock.now()
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(seconds=-1)
    with pytest.raises(ValueError, match="aware"):
        clock.set(datetime(2027, 1, 1))


class _FixedBits(random.Random):
    """A generator whose 80 random bits are chosen by the test."""

    def __init__(self, bits: int) -> None:
        super().__init__(0)
        self.bits = bits

    def getrandbits(self, k: int) -> int:
        assert k == 80
        return self.bits


@pytest.mark.parametrize("bits", [0, 1, 2**80 - 1, 0x0123456789ABCDEF0123, 31 << 75])
def test_ids_are_ulids_in_crockford_base32(bits: int) -> None:
    moment = datetime(2026, 11, 30, 23, 59, 59, 999000, tzinfo=UTC)
    text = IdSource(_FixedBits(bits)).new_id("job", moment).removeprefix("job_")
    value = 0
    for char in text:  # decoded one digit at a time, as the ULID spec writes it
        value = value * 32 + "0123456789ABCDEFGHJKMNPQRSTVWXYZ".index(char)
    assert len(text) == 26
    assert value >> 80 == int(moment.timestamp() * 1000)
    assert value & (2**80 - 1) == bits
