"""W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` and `tracestate` a job carries from
its enqueue to its worker, so the task's span joins the trace of the request that enqueued it.

Pure: a header that does not parse is ignored, as the recommendation asks of a receiver (the request goes on,
untraced), never an error.
"""

from __future__ import annotations

import re

TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$")
MAX_TRACESTATE = 512
"""The recommendation's limit for what a receiver must propagate; a longer tracestate is dropped."""


def trace_context(traceparent: str | None, tracestate: str | None = None) -> dict[str, str] | None:
    """`{"traceparent": …, "tracestate"?: …}` for a valid `traceparent` (tracestate only with one), else None."""
    if traceparent is None:
        return None
    match = TRACEPARENT.fullmatch(traceparent.strip())
    if match is None:
        return None
    version, trace_id, parent_id, _flags, rest = match.groups()
    # Version ff is invalid; version 00 has nothing after the flags; all-zero ids are invalid.
    if version == "ff" or (version == "00" and rest) or set(trace_id) == {"0"} or set(parent_id) == {"0"}:
        return None
    context = {"traceparent": traceparent.strip()}
    if tracestate is not None and tracestate.strip() and len(tracestate) <= MAX_TRACESTATE and tracestate.isascii():
        context["tracestate"] = tracestate.strip()
    return context
