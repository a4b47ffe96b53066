"""Retry delays. Pure: the random source is an argument, so tests pin it."""

from __future__ import annotations

from typing import Protocol

from queueflow.core.types import BackoffPolicy, BackoffStrategy


class RandomSource(Protocol):
    def uniform(self, a: float, b: float) -> float: ...

    def getrandbits(self, k: int, /) -> int: ...


def base_delay(policy: BackoffPolicy, retry_count: int) -> float:
    """The delay before retry number `retry_count + 1`, capped, before jitter.

    `retry_count` counts the retries already made, so the first retry waits `base_seconds` in every strategy.
    """
    base = policy.base_seconds
    if policy.strategy is BackoffStrategy.EXPONENTIAL:
        # 2**n overflows a float long before any sane cap; the cap wins as soon as it is reached.
        if retry_count >= 1024:
            return policy.max_seconds
        delay = base * 2.0**retry_count
    elif policy.strategy is BackoffStrategy.LINEAR:
        delay = base * (retry_count + 1)
    else:
        delay = base
    return min(delay, policy.max_seconds)


def backoff_delay(policy: BackoffPolicy, retry_count: int, rng: RandomSource) -> float:
    """Seconds to wait before the next delivery; with jitter, drawn uniformly from [delay/2, delay]."""
    delay = base_delay(policy, retry_count)
    if policy.jitter:
        return rng.uniform(delay / 2, delay)
    return delay
