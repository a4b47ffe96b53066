"""Steps that wait: for a signal (with an optional timeout) or for a time. A wait step has no job; when its
dependencies are done it becomes `waiting`, holding no worker, with a due time kept on its row:

    pending ──dependencies done──▶ waiting ──its signal (kept before or arriving now)──▶ completed (the payload)
                                      ├──its seconds have passed──────────────────────▶ completed (null)
                                      └──its timeout has passed, no signal───────────▶ failed (on_failure applies)

`due_at` is when a waiting step must be looked at: its sleep's end, its signal's timeout (None: no timeout), or
the moment its signal was kept. A process in `worker` or `all` mode ends each due wait (`due_report`); a signal's
request ends its step at once the same way. Every end of a wait is a step finish (`core.finish`) guarded by the
row it was decided on (`WaitEnd`: its due time, and whether a signal was kept), so of a timeout and a signal that
race, or two processes at one due time, exactly one is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from queueflow.core.errors import FieldError, InvalidState, NotFound
from queueflow.core.jsonvalue import same_json
from queueflow.core.types import JSON
from queueflow.core.validation import Loc, name_errors, number_errors

MAX_WAIT_SECONDS = 31_536_000.0  # a year
MIN_SLEEP_SECONDS = 0.001
MIN_TIMEOUT_SECONDS = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Wait:
    """`signal` (and an optional `timeout_seconds`), or `seconds`: exactly one of the two forms."""

    signal: str | None = None
    timeout_seconds: float | None = None
    seconds: float | None = None

    def due(self, became_waiting: datetime, signalled: bool) -> datetime | None:
        """When a step that became `waiting` at `became_waiting` is due: at once with a kept signal, else when its
        sleep ends or its signal times out (None: a signal with no timeout waits for it alone)."""
        if signalled:
            return became_waiting
        length = self.seconds if self.seconds is not None else self.timeout_seconds
        return None if length is None else became_waiting + timedelta(seconds=length)

    def to_json(self) -> dict[str, JSON]:
        if self.signal is not None:
            shape: dict[str, JSON] = {"signal": self.signal}
            if self.timeout_seconds is not None:
                shape["timeout_seconds"] = self.timeout_seconds
            return shape
        return {"seconds": self.seconds}

    @classmethod
    def from_json(cls, value: dict[str, JSON]) -> Wait:
        signal, timeout, seconds = value.get("signal"), value.get("timeout_seconds"), value.get("seconds")
        return cls(
            signal=signal if isinstance(signal, str) else None,
            timeout_seconds=float(timeout) if isinstance(timeout, int | float) else None,
            seconds=float(seconds) if isinstance(seconds, int | float) else None,
        )


def wait_errors(wait: Wait, loc: Loc) -> list[FieldError]:
    if not isinstance(wait, Wait):
        return [FieldError(loc, "must be {signal, timeout_seconds?} or {seconds}")]
    if (wait.signal is None) == (wait.seconds is None):
        return [FieldError(loc, "must name a signal or a number of seconds, not both")]
    if wait.signal is None:
        errors = number_errors(wait.seconds or 0.0, (*loc, "seconds"), MIN_SLEEP_SECONDS, MAX_WAIT_SECONDS)
        if wait.timeout_seconds is not None:
            errors.append(FieldError((*loc, "timeout_seconds"), "only a signal wait has a timeout"))
        return errors
    errors = name_errors(wait.signal, (*loc, "signal"))
    if wait.timeout_seconds is not None:
        errors += number_errors(wait.timeout_seconds, (*loc, "timeout_seconds"), MIN_TIMEOUT_SECONDS, MAX_WAIT_SECONDS)
    return errors


@dataclass(frozen=True, slots=True, kw_only=True)
class KeptSignal:
    """A signal received for a step, kept on its row (it may come before the step waits)."""

    payload: JSON
    received_at: datetime


class SignalAction(StrEnum):
    REPEAT = "repeat"
    """The same signal again: nothing changes."""
    KEEP = "keep"
    """Keep it on the step; a `waiting` step is due at once (and ended by the request)."""


def on_signal(
    workflow_running: bool, name: str, step_status: str | None, kept: KeptSignal | None, payload: JSON
) -> SignalAction:
    """What a signal `name` with `payload` does to the workflow's step waiting for it (`step_status` None: no step
    waits for `name`), in the contract's order: no such step 404; a repeat, equal 200 (whatever the workflow's
    status), different 409; a workflow not running, or a step that can no longer wait, 409."""
    if step_status is None:
        raise NotFound(f"no step of the workflow waits for the signal {name!r}")
    if kept is not None:
        if same_json(kept.payload, payload):
            return SignalAction.REPEAT
        raise InvalidState(f"the signal {name!r} was received already, with another payload")
    if not workflow_running:
        raise InvalidState("the workflow is not running")
    if step_status not in ("pending", "waiting"):
        raise InvalidState(f"the step waiting for {name!r} is {step_status}; it can no longer wait")
    return SignalAction.KEEP


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitEnd:
    """The row a wait's end was decided on: a finish of the step applies only while it still reads so."""

    due_at: datetime | None
    signalled: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildEnd:
    """How a child workflow ended: its status and its final context."""

    status: str
    context: JSON


@dataclass(frozen=True, slots=True, kw_only=True)
class DueWait:
    """A `waiting` step to end now (due, or with a signal kept), as read from its row; or a child step (`wait`
    None) whose child workflow `child_workflow_id` ended (`child`: how, once read), or that could not create it."""

    workflow_id: str
    name: str
    wait: Wait | None
    due_at: datetime | None
    signal: KeptSignal | None
    child_workflow_id: str | None = None
    child: ChildEnd | None = None


def is_due(due: DueWait, now: datetime) -> bool:
    return due.signal is not None or (due.due_at is not None and due.due_at <= now)
