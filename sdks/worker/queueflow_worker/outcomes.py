"""How a delivery ended: the `Outcome` a worker records, and the text a failure stores as its `error_message` —
its one-line summary first (what lists show), then the traceback beginning in the task, at most
`MAX_ERROR_CHARS`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from queueflow_worker.context import Delivery, Fatal, Retry

__all__ = ["MAX_ERROR_CHARS", "Outcome", "answers_in_order", "error_text", "fate", "outcome_of", "runner_code"]

T = TypeVar("T")

MAX_ERROR_CHARS = 65_536
"""The longest `error_message` the server stores."""


@dataclass(slots=True)
class Outcome:
    """How one delivery ended, to record: completed with `result` when `error` is None, else failed. Not changed
    once made (not frozen only because a frozen dataclass's __init__ costs four times as much, once per job)."""

    job_id: str
    lease_token: str
    result: Any = None
    error: str | None = None
    retryable: bool = True
    retry_after_seconds: float | None = None


def answers_in_order(outcomes: Sequence[Outcome], answers: Sequence[T]) -> list[T | None]:
    """Per outcome, its answer from an ack that sent the completions, then the failures, each in `outcomes`' order
    (as `POST /v1/worker/ack` and `Engine.ack` answer; None where the answer is short). Matched by position, never
    by job id: one batch may hold two deliveries of one job (an expired lease's and the new one's)."""
    if len(answers) == len(outcomes) and all(o.error is None for o in outcomes):
        return list(answers)  # only completions: the answers are in the outcomes' order (a worker's usual ack)
    sent = [o for o in outcomes if o.error is None] + [o for o in outcomes if o.error is not None]
    answered = iter(answers)
    by_outcome = {id(o): next(answered, None) for o in sent}
    return [by_outcome[id(o)] for o in outcomes]


def fate(job: Delivery, outcome: Outcome) -> str:
    """What the server does with a failed delivery, as far as the job tells (a leased job knows its retries)."""
    if not outcome.retryable:
        return "dead-lettered"
    retries, done = getattr(job, "max_retries", None), getattr(job, "retry_count", None)
    if not isinstance(retries, int) or not isinstance(done, int):
        return "retried if it has retries left"
    return "dead-lettered: no retries left" if done >= retries else f"retry {done + 1} of {retries} follows"


_machinery = [
    os.path.dirname(module.__file__ or "") + os.sep
    for module in (asyncio, concurrent.futures, sys.modules[__package__ or "queueflow_worker"])
]
"""The folders whose frames are the runner's own, not the task's."""


def runner_code(path: str) -> None:
    """Count the frames of the package whose module is at `path` as the runner's own: a stored traceback begins
    after them. For a task registry that wraps tasks in code of its own (the SDK's, its typed tasks)."""
    folder = os.path.dirname(path) + os.sep
    if folder not in _machinery:
        _machinery.append(folder)


def _trimmed(exc: BaseException) -> BaseException:
    """`exc` with the runner's own frames (the worker loop, the registry, asyncio, the thread pool) cut from the
    start of its traceback, so that it begins in the task."""
    machinery = tuple(_machinery)
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None and tb.tb_frame.f_code.co_filename.startswith(machinery):
        tb = tb.tb_next
    return exc.with_traceback(tb)


def outcome_of(job_id: str, token: str, work: asyncio.Task[Any]) -> Outcome:
    if work.cancelled():
        return Outcome(job_id, token, error="the task was cancelled")
    exc = work.exception()
    if exc is not None and not isinstance(exc, Retry):
        exc = _trimmed(exc)
    if exc is None:
        result = work.result()
        if result is not None:
            try:
                json.dumps(result, allow_nan=False)
            except (TypeError, ValueError) as problem:
                return Outcome(job_id, token, error=f"the task's result is not JSON: {problem}", retryable=False)
        return Outcome(job_id, token, result=result)
    if isinstance(exc, Retry):
        return Outcome(job_id, token, error=_bounded(str(exc)), retry_after_seconds=exc.after)
    if isinstance(exc, Fatal):
        return Outcome(job_id, token, error=error_text(exc, str(exc) or "fatal"), retryable=False)
    return Outcome(job_id, token, error=error_text(exc, f"{type(exc).__name__}: {exc}"))


def error_text(exc: BaseException, summary: str) -> str:
    """What a failure stores as its `error_message`: `summary` on the first line (what lists show), then the
    traceback; at most `MAX_ERROR_CHARS`, keeping the traceback's end (where it failed) when it is cut."""
    trace = "".join(traceback.format_exception(exc)).rstrip()
    return _bounded(f"{summary}\n\n{trace}", keep=len(summary))


def _bounded(text: str, *, keep: int = 0) -> str:
    """`text` fit to be stored: no NUL (PostgreSQL text holds none), at most `MAX_ERROR_CHARS` characters, with
    the first `keep` characters and the end kept when it is cut."""
    text = text.replace("\x00", "")
    if len(text) <= MAX_ERROR_CHARS:
        return text or "the task failed"
    keep = min(keep, MAX_ERROR_CHARS // 2)
    cut = "\n[… traceback cut …]\n"
    return text[:keep] + cut + text[len(text) - (MAX_ERROR_CHARS - keep - len(cut)) :]
