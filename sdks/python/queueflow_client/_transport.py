"""How a call reaches the server: the request a call describes is sent by httpx; this layer adds auth, timeouts,
retries and errors.

A `Call` describes one request (built by its route, `_calls.routes`) and how to read the answer. The sync
and async transports send it the same way:

- a 2xx answer is decoded and parsed into the call's return type;
- a problem answer raises the matching `errors.APIError` subclass;
- a 503, or a connection that failed before the request went out, is retried for every call, with exponential
  backoff and jitter: the server did nothing;
- any other transport failure (a timeout or reset after the request was sent) is retried only for a call that
  is `replayable`, one whose repeat cannot do anything twice (reads, and writes keyed by an Idempotency-Key or a
  lease token).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

import httpx

from queueflow_client._version import USER_AGENT
from queueflow_client.errors import APIConnectionError, APIError, APITimeoutError, error_from_response

try:  # the optional `otel` extra: opentelemetry-api
    from opentelemetry import propagate as otel_propagate
except ImportError:  # pragma: no cover - exercised where the extra is not installed
    otel_propagate = None  # type: ignore[assignment]

T = TypeVar("T")

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 2

# Failures that happen before a single byte of the request is sent: repeating the request cannot repeat an effect.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    request: dict[str, Any]
    """The arguments of `httpx.Client.request` (`Route.request` builds them)."""
    decode: Callable[[bytes], T]
    """A 2xx answer's body (b"" when empty) → the value the caller gets."""
    replayable: bool


def call(request: dict[str, Any], parse: Callable[[Any], T], *, replayable: bool) -> Call[T]:
    """A call of `request`, whose answer is read by `parse` from its decoded JSON (None for an empty body)."""
    return Call(request, partial(_parsed, parse), replayable)


def decoding_call(request: dict[str, Any], decode: Callable[[bytes], T], *, replayable: bool) -> Call[T]:
    """`call`, whose answer's bytes go to `decode` as they came: for a decoder that reads JSON and builds the
    value in one step (the worker's lease)."""
    return Call(request, decode, replayable)


def encoded_call(request: dict[str, Any], content: bytes, decode: Callable[[bytes], T], *, replayable: bool) -> Call[T]:
    """`decoding_call` of a route's `request` (no body) whose body is encoded already (`content`, JSON)."""
    headers = {**request.get("headers", {}), "Content-Type": "application/json"}
    return Call(request | {"content": content, "headers": headers}, decode, replayable)


def _parsed(parse: Callable[[Any], T], content: bytes) -> T:
    return parse(json.loads(content) if content else None)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = DEFAULT_MAX_RETRIES
    base_delay: float = 0.5
    max_delay: float = 8.0

    def delay(self, attempt: int) -> float:
        """Before retry `attempt` (0 for the first): exponential, capped, drawn from [delay/2, delay]."""
        ceiling = min(self.max_delay, self.base_delay * 2**attempt)
        return random.uniform(ceiling / 2, ceiling)


ONCE = RetryPolicy(max_retries=0)
"""For a caller that makes a call again itself (the worker's acks and releases, on the worker loop's clock)."""


def is_transient(exc: Exception) -> bool:
    """Whether a call that failed with `exc` may succeed if made again: it got no answer, or a 5xx (the server is
    restarting, or its database is away)."""
    return isinstance(exc, APIConnectionError) or (isinstance(exc, APIError) and exc.status >= 500)


def may_have_landed(exc: Exception) -> bool:
    """Whether the server may have acted on a call that failed with `exc`: not when the request never left (the
    connection was refused) nor when the server answered 503 (it did nothing)."""
    if isinstance(exc, APIConnectionError):
        return not isinstance(exc.__cause__, _NOT_SENT)
    return not (isinstance(exc, APIError) and exc.status == 503)


def _headers(api_key: str | None) -> dict[str, str]:
    headers = {"User-Agent": USER_AGENT}
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def _configure(http: httpx.Client | httpx.AsyncClient, base_url: str, api_key: str | None) -> None:
    http.base_url = httpx.URL(base_url)
    http.headers.update(_headers(api_key))
    if otel_propagate is not None:
        # An enqueue made inside a span carries it (W3C traceparent), so the job's task joins the caller's trace.
        hooks = http.event_hooks
        hooks["request"] = [
            *hooks.get("request", []),
            _inject_trace_context if isinstance(http, httpx.Client) else _ainject,
        ]
        http.event_hooks = hooks


def _inject_trace_context(request: httpx.Request) -> None:
    if otel_propagate is not None:
        otel_propagate.inject(request.headers)


async def _ainject(request: httpx.Request) -> None:
    _inject_trace_context(request)


def _decide(call: Call[Any], attempt: int, policy: RetryPolicy, exc: httpx.TransportError | None) -> bool:
    """Whether to try `call` again after attempt `attempt` failed (with `exc`, or with a 503 when None)."""
    if attempt >= policy.max_retries:
        return False
    return exc is None or isinstance(exc, _NOT_SENT) or call.replayable


def _failure(exc: httpx.TransportError, retries: int, base_url: httpx.URL) -> APIConnectionError:
    """The error for a request that got no answer, naming where it went and what the last try ran into."""
    try:
        where = f"{exc.request.method} {exc.request.url}"
    except RuntimeError:  # httpx sets the request on every error raised from a send; a transport of a test may not
        where = str(base_url)
    tried = f" (tried {retries + 1} times)" if retries else ""
    reason = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(f"no answer from {where} within the client's timeout{tried}: {reason}")
    return APIConnectionError(f"cannot reach QueueFlow at {where}{tried}: {reason}")


def _result(call: Call[T], response: httpx.Response) -> T:
    status = int(response.status_code)
    if 200 <= status < 300:
        return call.decode(response.content)
    raise error_from_response(status, response.content)


class SyncTransport:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout: float,
        retry: RetryPolicy,
        http_client: httpx.Client | None = None,
    ) -> None:
        self._owns_http = http_client is None
        http = http_client or httpx.Client(timeout=timeout)
        _configure(http, base_url, api_key)
        self.http = http
        self.retry = retry

    def __call__(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            try:
                response = self.http.request(**call.request)
            except httpx.TransportError as exc:
                if not _decide(call, attempt, self.retry, exc):
                    raise _failure(exc, attempt, self.http.base_url) from exc
            else:
                if int(response.status_code) != 503 or not _decide(call, attempt, self.retry, None):
                    return _result(call, response)
            time.sleep(self.retry.delay(attempt))
            attempt += 1

    def close(self) -> None:
        if self._owns_http:
            self.http.close()


class AsyncTransport:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout: float,
        retry: RetryPolicy,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._owns_http = http_client is None
        http = http_client or httpx.AsyncClient(timeout=timeout)
        _configure(http, base_url, api_key)
        self.http = http
        self.retry = retry

    async def __call__(self, call: Call[T], *, retry: RetryPolicy | None = None) -> T:
        result, _ = await self.send(call, retry=retry)
        return result

    async def send(self, call: Call[T], *, retry: RetryPolicy | None = None) -> tuple[T, bool]:
        """The answer, and whether an earlier attempt may have reached the server (it was sent and then failed,
        and the call was replayed): then a write's answer may describe the effect of that earlier attempt.
        `retry`: this call's policy, instead of the transport's."""
        policy = retry or self.retry
        attempt = 0
        replayed = False
        while True:
            try:
                response = await self.http.request(**call.request)
            except httpx.TransportError as exc:
                if not _decide(call, attempt, policy, exc):
                    raise _failure(exc, attempt, self.http.base_url) from exc
                replayed = replayed or not isinstance(exc, _NOT_SENT)
            else:
                if int(response.status_code) != 503 or not _decide(call, attempt, policy, None):
                    return _result(call, response), replayed
            await asyncio.sleep(policy.delay(attempt))
            attempt += 1

    async def aclose(self) -> None:
        if self._owns_http:
            await self.http.aclose()
