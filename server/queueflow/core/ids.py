"""Opaque, time-sortable ids with a type prefix (`job_01J…`): a ULID after the prefix."""

from __future__ import annotations

from datetime import datetime

from queueflow.core.backoff import RandomSource

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base32


def new_id(prefix: str, now: datetime, rng: RandomSource) -> str:
    """48 bits of milliseconds since the epoch, then 80 random bits, as 26 base32 characters."""
    value = (int(now.timestamp() * 1000) << 80) | rng.getrandbits(80)
    chars = []
    for _ in range(26):
        value, digit = divmod(value, 32)
        chars.append(_ALPHABET[digit])
    return f"{prefix}_{''.join(reversed(chars))}"
