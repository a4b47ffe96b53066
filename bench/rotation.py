"""Paired repetitions: a figure and its baseline measured side by side, repetition after repetition.

On a shared 2-core machine the speed drifts over minutes by more than the figures' margins (1.6× within half an
hour has been seen), so a figure is compared with the baseline measured beside it, in the same repetition
(`stats.paired`), never with one measured minutes apart. A rotation runs its entries in order, every other
repetition in reverse, so that no entry always comes right after the same neighbour (or always first, into a
machine still busy with what ran before).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

Entry = TypeVar("Entry")


class StepRunner(Protocol):
    """`bench.run.Steps`: runs a named step, records its failure, says whether it succeeded."""

    async def __call__(self, name: str, body: Callable[[], Awaitable[None]]) -> bool: ...


def order(entries: Sequence[Entry], repetition: int) -> list[Entry]:
    """The entries in the order repetition `repetition` (from 1) runs them: forward when odd, reversed when even."""
    return list(entries) if repetition % 2 else list(entries)[::-1]


async def rotate(
    step: StepRunner,
    title: str,
    entries: Sequence[Entry],
    repetitions: int,
    run: Callable[[Entry, int], Awaitable[None]],
) -> None:
    """`repetitions` steps named `title, repetition N`, each running every entry (`run(entry, N)`) in `order`."""
    for number in range(1, repetitions + 1):

        async def repetition(number: int = number) -> None:
            for entry in order(entries, number):
                await run(entry, number)

        await step(f"{title}, repetition {number}", repetition)
