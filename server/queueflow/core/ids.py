"""Opaque, time-sortable ids with a type prefix (`job_01J…`): a ULID after the prefix."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from queueflow.core.backoff import RandomSource

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base32
# Two digits (10 bits) per lookup: a batch enqueue makes an id per row, and digit-at-a-time divmod was 10% of it.
_PAIRS = [high + low for high in _ALPHABET for low in _ALPHABET]
_PAIR_SHIFTS = range(115, 4, -10)  # the 24 digits between the first and the last, two at a time


class IdSource:
    """Where one engine's ids come from (or one store's, for the steps' jobs it makes as workflows advance): a random
    source, and per prefix the last value made from it. Ids one source makes within one millisecond increase in the
    order they are made (a monotonic ULID), so that jobs one engine enqueues one after another are in id order — the
    order a sequence runs them in (`core.sequences`). Two sources' ids of one millisecond (two processes', say)
    still interleave at random: their enqueues are concurrent, with no order to keep. Each engine owns its own, so
    the ids it makes never depend on what another engine in the same process made before it."""

    def __init__(self, rng: RandomSource) -> None:
        self.rng = rng
        self._last: dict[str, int] = {}

    def _after_last(self, prefix: str, value: int, count: int = 1) -> int:
        """`value`, or just after the last value made for `prefix` if that is of the same millisecond and not below
        it; records the last of the `count` values that start there."""
        last = self._last.get(prefix)
        if last is not None and last >> 80 == value >> 80 and value <= last:
            value = last + 1
        self._last[prefix] = value + count - 1
        return value

    def new_id(self, prefix: str, now: datetime) -> str:
        """48 bits of milliseconds since the epoch, then 80 random bits, as 26 base32 characters; after the last id
        of the same millisecond and prefix, if it would fall before it."""
        return _encode(prefix, self._after_last(prefix, (_millis(now) << 80) | self.rng.getrandbits(80)))

    def stream(self, prefix: str, now: datetime) -> Iterator[str]:
        """`new_id`s made at `now`, as many as are taken: for a store that mints a step's job ids while it records a
        transition, before which it cannot know how many steps become ready."""
        while True:
            yield self.new_id(prefix, now)

    def new_ids(self, prefix: str, now: datetime, count: int) -> list[str]:
        """`count` ids of one batch made at `now`, increasing in the order given: jobs of one batch with equal
        priority and times are claimed in the batch's order (README.md, "Flow control"), and the claim's last
        tie-break is the id. Ids made at one millisecond share their time part, so independent random parts ordered
        a batch at random: here one random draw starts a run of consecutive values. 79 random bits, so the run never
        overflows into the time part; two batches of one millisecond overlap with odds of about count / 2^79."""
        start = self._after_last(prefix, (_millis(now) << 80) | self.rng.getrandbits(79), count)
        ids: list[str] = []
        value, end = start, start + count
        while value < end:
            # Consecutive values differ only in their last two digits (the low 10 bits) within one aligned block of
            # 1024: the 28 characters before them are encoded once a block, not once an id (a batch enqueue's 1,000
            # ids were 5% of its CPU, each encoded whole).
            block_end = min(end, (value | 1023) + 1)
            head = _encode(prefix, value)[:-2]
            ids += [head + pair for pair in _PAIRS[value & 1023 : ((block_end - 1) & 1023) + 1]]
            value = block_end
        return ids


def _millis(now: datetime) -> int:
    return int(now.timestamp() * 1000)


def _encode(prefix: str, value: int) -> str:
    pairs = [_PAIRS[(value >> shift) & 1023] for shift in _PAIR_SHIFTS]
    return f"{prefix}_{_ALPHABET[value >> 125]}{''.join(pairs)}{_ALPHABET[value & 31]}"
