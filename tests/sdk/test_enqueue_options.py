"""The enqueue options are defined once (`queueflow_client.options.EnqueueOptions`) and every way of enqueueing
takes exactly that type, so they cannot drift apart again (a typed task's `enqueue` once lacked
`concurrency_key`), nor from the spec's job schemas or the transactional enqueue's SQL parameters."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from queueflow_client import handles, options, transactional
from queueflow_client.options import EnqueueOptions, JobOptions
from queueflow_client.resources import jobs

SCHEMAS = json.loads((Path(__file__).resolve().parents[2] / "spec" / "openapi.json").read_text())["components"][
    "schemas"
]
OPTIONS = EnqueueOptions.__optional_keys__
JOB = {"task_name", "payload"}
"""What names a job beside its options."""
WIRE_NAMES = {"expires_in": "expires_in_seconds"}
"""Options named otherwise on the wire: `expires_in` takes seconds or a timedelta."""
WIRE_OPTIONS = {WIRE_NAMES.get(name, name) for name in OPTIONS}

ENQUEUES: list[Callable[..., Any]] = [
    jobs.Jobs.enqueue,
    jobs.AsyncJobs.enqueue,
    jobs.Jobs.run,
    jobs.AsyncJobs.run,
    handles.Task.enqueue,
    handles.Task.enqueue_async,
    handles.Task.job,
    transactional.enqueue_in,
    transactional.enqueue_in_sync,
]


def test_the_options_are_the_spec_jobs_but_for_what_names_the_job() -> None:
    assert set(SCHEMAS["BatchItem"]["properties"]) - JOB == WIRE_OPTIONS
    # A single enqueue sends its idempotency key as a header, not in the body.
    assert set(SCHEMAS["EnqueueJob"]["properties"]) - JOB == WIRE_OPTIONS - {"idempotency_key"}


def test_an_item_of_a_batch_is_a_job_with_its_options() -> None:
    assert JobOptions.__required_keys__ == {"task_name"}
    assert JobOptions.__optional_keys__ == OPTIONS | {"payload"}


@pytest.mark.parametrize("enqueue", ENQUEUES, ids=lambda f: f"{f.__module__}.{f.__qualname__}")
def test_every_enqueue_takes_the_one_options_type(enqueue: Callable[..., Any]) -> None:
    keywords = [p for p in inspect.signature(enqueue).parameters.values() if p.kind is p.VAR_KEYWORD]
    assert [(p.name, p.annotation) for p in keywords] == [("options", "Unpack[EnqueueOptions]")]
    assert inspect.getmodule(enqueue).EnqueueOptions is options.EnqueueOptions  # type: ignore[union-attr]
    # and no option written out beside it
    assert not OPTIONS & set(inspect.signature(enqueue).parameters)


def test_the_transactional_enqueue_sends_every_option() -> None:
    assert set(transactional._TYPES) == OPTIONS | JOB | {"tenant_id"}


def test_an_unknown_option_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(TypeError, match="unknown enqueue option"):
        transactional.enqueue_in_sync(object(), "t", tenant_id="acme", queue="mail")  # type: ignore[call-arg]


async def test_an_unknown_option_is_refused_before_anything_is_sent_async() -> None:
    with pytest.raises(TypeError, match="unknown enqueue option"):
        await transactional.enqueue_in(object(), "t", tenant_id="acme", queue="mail")  # type: ignore[call-arg]
