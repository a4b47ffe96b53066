"""Typed tasks: `@tasks.task(name)` returns a `Task` handle — the function, callable as before, which also
enqueues jobs of its task with the function's own payload type, checked by mypy:

    class Email(TypedDict):
        to: str

    @tasks.task("send_email")
    async def send_email(payload: Email, ctx: JobContext) -> dict[str, bool]: ...

    send_email.enqueue(client, {"to": "ada@example.com"})        # a payload that is not an Email fails mypy
    await send_email.enqueue_async(async_client, {"to": "ada@example.com"}, priority=5)

A payload may also be a dataclass, a msgspec `Struct` or a Pydantic model: the handle sends it as a JSON object,
and the worker turns the job's payload back into that type before calling the function (with msgspec, when it
is installed, for dataclasses and Structs; `model_validate` for Pydantic). A payload that does not fit the type
fails the job for good (`Fatal`): it would not fit on a retry either. Such a task may return one too (it is
stored as JSON). A `dict`, `Mapping` or `TypedDict` payload reaches the function as the decoded dict, unwrapped:
no cost per job.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, Unpack

from queueflow_worker.context import Fatal, JobContext, TaskFunction

from queueflow_client.options import EnqueueOptions, JobOptions

if TYPE_CHECKING:
    from queueflow_client.client import AsyncQueueFlow, QueueFlow
    from queueflow_client.types import Job

__all__ = ["EnqueueOptions", "Task", "encode", "runnable"]

P = TypeVar("P")
R = TypeVar("R")


class Task(Generic[P, R]):
    """A registered task: call it as its function; enqueue jobs of it with a payload of its type."""

    def __init__(self, name: str, function: Callable[[P, JobContext], R]) -> None:
        self.name = name
        self.function = function
        functools.update_wrapper(self, function)

    def __call__(self, payload: P, ctx: JobContext) -> R:
        return self.function(payload, ctx)

    def enqueue(self, client: QueueFlow, payload: P, **options: Unpack[EnqueueOptions]) -> Job:
        """Enqueue a job of this task (`client.jobs.enqueue(name, payload=…, **options)`)."""
        return client.jobs.enqueue(self.name, payload=encode(payload), **options)

    async def enqueue_async(self, client: AsyncQueueFlow, payload: P, **options: Unpack[EnqueueOptions]) -> Job:
        """`enqueue` with an `AsyncQueueFlow`."""
        return await client.jobs.enqueue(self.name, payload=encode(payload), **options)

    def job(self, payload: P, **options: Unpack[EnqueueOptions]) -> JobOptions:
        """One item for `jobs.enqueue_many`."""
        return {"task_name": self.name, "payload": encode(payload), **options}

    def __repr__(self) -> str:
        return f"<Task {self.name!r}: {self.function!r}>"


def encode(value: Any) -> Any:
    """A dataclass, msgspec Struct or Pydantic model as JSON-ready builtins; anything else as it is."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        msgspec = _msgspec()
        return msgspec.to_builtins(value) if msgspec is not None else dataclasses.asdict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    msgspec = _msgspec()
    if msgspec is not None and isinstance(value, msgspec.Struct):
        return msgspec.to_builtins(value)
    return value


def runnable(function: TaskFunction) -> TaskFunction:
    """What a worker calls for `function`: itself, unless its payload or result is a dataclass, Struct or
    model; then a wrapper (as async as the function) that converts the payload in and the result out."""
    payload_type, result_type = _types(function)
    decode = _decoder(payload_type) if payload_type is not None else None
    if decode is None and result_type is None:
        return function
    convert = decode or _same

    if inspect.iscoroutinefunction(function):

        async def run_async(payload: dict[str, Any], ctx: JobContext) -> Any:
            return encode(await function(convert(payload), ctx))

        return functools.wraps(function)(run_async)

    def run(payload: dict[str, Any], ctx: JobContext) -> Any:
        return encode(function(convert(payload), ctx))

    return functools.wraps(function)(run)


def _same(payload: dict[str, Any]) -> Any:
    return payload


def _types(function: TaskFunction) -> tuple[type | None, type | None]:
    """The payload's and the result's types when they are classes to convert; None otherwise."""
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # an annotation that cannot be resolved here (a local class): passed as the dict
        return None, None
    parameters = [p for p in inspect.signature(function).parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
    payload = hints.get(parameters[0].name) if parameters else None
    result = hints.get("return")  # an async function's is what it returns once awaited
    return (payload if _is_model(payload) else None), (result if _is_model(result) else None)


def _is_model(hint: Any) -> bool:
    if not isinstance(hint, type) or typing.is_typeddict(hint):
        return False
    if dataclasses.is_dataclass(hint) or callable(getattr(hint, "model_validate", None)):
        return True
    msgspec = _msgspec()
    return msgspec is not None and issubclass(hint, msgspec.Struct)


def _decoder(cls: type) -> Callable[[dict[str, Any]], Any]:
    validate = getattr(cls, "model_validate", None)
    msgspec = _msgspec()

    def decode(payload: dict[str, Any]) -> Any:
        try:
            if callable(validate):
                return validate(payload)
            if msgspec is not None:
                return msgspec.convert(payload, cls)
            return cls(**payload)
        except Exception as exc:  # the payload does not fit: no retry would change that
            raise Fatal(f"the payload does not fit {cls.__name__}: {exc}") from exc

    return decode


@functools.cache
def _msgspec() -> Any:
    try:
        import msgspec
    except ImportError:  # pragma: no cover - msgspec is optional
        return None
    return msgspec
