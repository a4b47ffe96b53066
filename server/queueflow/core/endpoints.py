"""Push endpoints (README.md, "Push delivery"): HTTP URLs that receive a tenant's jobs as signed POSTs.

An endpoint is a row: its rules (`NewEndpoint`, `endpoint_errors`), its secrets (the current one, and for
`SECRET_OVERLAP` after a rotation the previous one: both sign), and its counters. How many of its deliveries are
in flight is not a counter but a count of live *slots* (`EndpointSlot`): a delivery takes a slot under the
endpoint's row lock before its job is claimed, keeps it while its request is in flight (each extension with its
lease), and gives it back with its outcome. A slot whose holder died expires with its hold, so a crashed
process leaks nothing, and `concurrency` bounds the deliveries of every process together (`slots_free`).

What a delivery sends and what its answer means are decided here too: the body and the Stripe-style signature
(`delivery_body`, `signature_header`), and the outcome (`answer_outcome`). Which addresses a delivery may reach is
`address_refusal`'s decision; resolving a name is the caller's (a `ports.Resolver`).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from urllib.parse import urlsplit

import msgspec

from queueflow.core.errors import FieldError
from queueflow.core.jsonvalue import storable_text
from queueflow.core.types import UNCHANGED, Cursor, Job, Unchanged
from queueflow.core.validation import MAX_LEASE_QUEUES, Loc, int_errors, name_errors, text_errors

MAX_CONCURRENCY = 1000
MAX_TIMEOUT_SECONDS = 900
MAX_URL_LENGTH = 2048
MAX_TASK_NAMES = 100
SECRET_PREFIX = "qfsec_"
SECRET_OVERLAP = timedelta(hours=24)
"""How long a rotated-out secret still signs, so receivers can switch to the new one without dropping a delivery."""
SCHEMES = ("http", "https")
MAX_ERROR_LENGTH = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class NewEndpoint:
    name: str
    url: str
    queues: tuple[str, ...] = ("default",)
    task_names: tuple[str, ...] | None = None
    """Only jobs of these tasks are delivered; None: any task of the queues."""
    concurrency: int = 10
    timeout_seconds: int = 30
    paused: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class EndpointPatch:
    """A PATCH: UNCHANGED leaves a field as it is (`task_names` may become None: any task). The name is the
    endpoint's address and does not change."""

    url: str | Unchanged = UNCHANGED
    queues: tuple[str, ...] | Unchanged = UNCHANGED
    task_names: tuple[str, ...] | Unchanged | None = UNCHANGED
    concurrency: int | Unchanged = UNCHANGED
    timeout_seconds: int | Unchanged = UNCHANGED
    paused: bool | Unchanged = UNCHANGED


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    """An endpoint row, with `in_flight` as counted when it was read (its live slots)."""

    id: str
    tenant_id: str
    name: str
    url: str
    queues: tuple[str, ...]
    task_names: tuple[str, ...] | None
    concurrency: int
    timeout_seconds: int
    paused: bool
    secret: str
    previous_secret: str | None
    previous_secret_until: datetime | None
    created_at: datetime
    updated_at: datetime
    delivered: int = 0
    failed: int = 0
    last_error: str | None = None
    last_delivery_at: datetime | None = None
    in_flight: int = 0

    def signing_secrets(self, now: datetime) -> list[str]:
        """The secrets that sign a delivery at `now`: the current one, and the previous one within its overlap."""
        previous = self.previous_secret
        if previous is None or self.previous_secret_until is None or self.previous_secret_until <= now:
            return [self.secret]
        return [self.secret, previous]


@dataclass(frozen=True, slots=True, kw_only=True)
class EndpointQuery:
    """A page of a tenant's endpoints, with their slots held at `now` counted."""

    tenant_id: str
    limit: int
    after: Cursor | None
    now: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class SlotRequest:
    """Take up to `want` delivery slots of the endpoint, each held until `now + hold_seconds`."""

    endpoint_id: str
    want: int
    hold_seconds: float
    now: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class DeliveriesFinished:
    """Deliveries of one endpoint ended: their slots are given back, and its counters record them."""

    endpoint_id: str
    slot_ids: Sequence[str]
    delivered: int
    """How many were answered 2xx (`delivered` + this)."""
    failed: int
    """How many failed (`failed` + this)."""
    last_error: str | None
    """The last failure's reason, `last_error` from now on (None: it stays as it is)."""
    now: datetime


class DeliveryVerdict(StrEnum):
    COMPLETE = "complete"
    RETRY = "retry"
    DEAD_LETTER = "dead_letter"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an endpoint's answer (or its absence) means for the job."""

    verdict: DeliveryVerdict
    result: object = None
    error: str | None = None
    retry_after_seconds: float | None = None


# --- rules ----------------------------------------------------------------------------------------------------------


def endpoint_errors(new: NewEndpoint) -> list[FieldError]:
    errors = name_errors(new.name, ("name",))
    errors += url_errors(new.url, ("url",))
    errors += _queue_errors(new.queues, ("queues",))
    errors += _task_name_errors(new.task_names, ("task_names",))
    errors += int_errors(new.concurrency, ("concurrency",), 1, MAX_CONCURRENCY)
    errors += int_errors(new.timeout_seconds, ("timeout_seconds",), 1, MAX_TIMEOUT_SECONDS)
    return errors


def endpoint_storage_errors(endpoint: Endpoint) -> list[FieldError]:
    """What a store cannot keep (text PostgreSQL refuses: NUL, lone surrogates), at the field it came from."""
    texts: list[tuple[Loc, str | None]] = [
        (("tenant_id",), endpoint.tenant_id),
        (("name",), endpoint.name),
        (("url",), endpoint.url),
        (("secret",), endpoint.secret),
        (("previous_secret",), endpoint.previous_secret),
    ]
    texts += [(("queues", index), queue) for index, queue in enumerate(endpoint.queues)]
    texts += [(("task_names", index), name) for index, name in enumerate(endpoint.task_names or ())]
    return [FieldError(loc, "cannot be stored") for loc, text in texts if text is not None and not storable_text(text)]


def error_text(error: str) -> str:
    """A delivery's error as `last_error` and `error_message` keep it: bounded, and storable whatever the endpoint
    sent."""
    text = error if len(error) <= MAX_ERROR_LENGTH else error[: MAX_ERROR_LENGTH - 1] + "…"
    return text.encode("utf-8", "replace").decode().replace("\x00", "\ufffd")


def patch_errors(patch: EndpointPatch) -> list[FieldError]:
    errors: list[FieldError] = []
    if not isinstance(patch.url, Unchanged):
        errors += url_errors(patch.url, ("url",))
    if not isinstance(patch.queues, Unchanged):
        errors += _queue_errors(patch.queues, ("queues",))
    if not isinstance(patch.task_names, Unchanged):
        errors += _task_name_errors(patch.task_names, ("task_names",))
    if not isinstance(patch.concurrency, Unchanged):
        errors += int_errors(patch.concurrency, ("concurrency",), 1, MAX_CONCURRENCY)
    if not isinstance(patch.timeout_seconds, Unchanged):
        errors += int_errors(patch.timeout_seconds, ("timeout_seconds",), 1, MAX_TIMEOUT_SECONDS)
    return errors


def patched(endpoint: Endpoint, patch: EndpointPatch, now: datetime) -> Endpoint:
    fields = {
        name: getattr(patch, name)
        for name in EndpointPatch.__dataclass_fields__
        if not isinstance(getattr(patch, name), Unchanged)
    }
    return replace(endpoint, **fields, updated_at=now)


def rotated(endpoint: Endpoint, secret: str, now: datetime) -> Endpoint:
    """The endpoint with `secret` as its secret, and the one it replaces signing too until `SECRET_OVERLAP` from
    now (a secret rotated out before that is dropped at once: two secrets sign at most)."""
    return replace(
        endpoint, secret=secret, previous_secret=endpoint.secret, previous_secret_until=now + SECRET_OVERLAP,
        updated_at=now,
    )  # fmt: skip


def masked(secret: str) -> str:
    """What a read shows of a secret: enough to tell two apart, never enough to sign."""
    return f"{SECRET_PREFIX}…{secret[-4:]}"


def url_errors(url: str, loc: Loc) -> list[FieldError]:
    errors = text_errors(url, loc, max_len=MAX_URL_LENGTH)
    if errors:
        return errors
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port out of range
    except ValueError:
        return [FieldError(loc, "must be an http or https URL")]
    if parts.scheme.lower() not in SCHEMES:
        return [FieldError(loc, "must be an http or https URL")]
    if not parts.hostname:
        return [FieldError(loc, "must name a host")]
    if parts.username is not None or parts.password is not None:
        return [FieldError(loc, "must not carry credentials (the signature authenticates the server)")]
    return []


def _queue_errors(queues: Sequence[str], loc: Loc) -> list[FieldError]:
    if not 1 <= len(queues) <= MAX_LEASE_QUEUES:
        return [FieldError(loc, f"must name 1–{MAX_LEASE_QUEUES} queues")]
    return [error for index, queue in enumerate(queues) for error in name_errors(queue, (*loc, index))]


def _task_name_errors(task_names: Sequence[str] | None, loc: Loc) -> list[FieldError]:
    if task_names is None:
        return []
    if not 1 <= len(task_names) <= MAX_TASK_NAMES:
        return [FieldError(loc, f"must name 1–{MAX_TASK_NAMES} tasks, or be null for any")]
    return [error for index, name in enumerate(task_names) for error in text_errors(name, (*loc, index), max_len=200)]


# --- where a delivery may go ---------------------------------------------------------------------------------------


def address_refusal(address: str) -> str | None:
    """Why a delivery may not connect to `address` (an IP address, as text) without `--allow-private-endpoints`,
    or None when it may: only globally routable unicast addresses are reachable (an IPv4 address mapped into IPv6
    is judged as itself)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"{address!r} is not an IP address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for kind, applies in (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
    ):
        if applies:
            return f"{ip} is a {kind} address"
    if not ip.is_global:
        return f"{ip} is not a public address"
    return None


def host_of(url: str) -> tuple[str, int]:
    """The host (without IPv6 brackets) and port a checked URL connects to."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    return parts.hostname or "", port


def literal_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


# --- what a delivery sends --------------------------------------------------------------------------------------


def delivery_body(job: Job) -> bytes:
    """`{"job": <LeasedJob without lease_token, with deadline>, "delivery": <delivery_count>}` as sent (the
    signature is over these exact bytes)."""
    fields = msgspec.to_builtins(job)
    fields.pop("lease_token", None)
    deadline = job.deadline
    fields["deadline"] = None if deadline is None else msgspec.to_builtins(deadline)
    return msgspec.json.encode({"job": fields, "delivery": job.delivery_count})


def signature_header(secrets: Sequence[str], body: bytes, timestamp: int) -> str:
    """`t=<unix>,v1=<hex>[,v1=<hex>]`: one HMAC-SHA256 of `"<t>.<body>"` per signing secret."""
    signed = f"{timestamp}.".encode() + body
    signatures = (hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest() for secret in secrets)
    return ",".join([f"t={timestamp}", *(f"v1={signature}" for signature in signatures)])


# --- what its answer means ---------------------------------------------------------------------------------------


def answer_outcome(status: int, headers: Mapping[str, str], body: bytes | None) -> Outcome:
    """The endpoint answered `status` (`headers` with lower-case names; `body` None when it was longer than a
    result may be). 2xx completes the job, with a JSON body as its result (else null); anything else fails the
    delivery: retried by the job's backoff or after `Retry-After` seconds, or dead-lettered at once when the answer
    says `QueueFlow-Retryable: false`."""
    if 200 <= status < 300:
        return Outcome(DeliveryVerdict.COMPLETE, result=_json_or_none(body, headers))
    error = f"the endpoint answered {status}"
    if headers.get("queueflow-retryable", "").strip().lower() == "false":
        return Outcome(DeliveryVerdict.DEAD_LETTER, error=error + " (QueueFlow-Retryable: false)")
    return Outcome(DeliveryVerdict.RETRY, error=error, retry_after_seconds=retry_after(headers.get("retry-after")))


def retry_after(value: str | None) -> float | None:
    """`Retry-After` in delay-seconds (an HTTP date is not honoured: the job's backoff applies)."""
    if value is None or not value.strip().isdigit():
        return None
    return float(min(int(value.strip()), 315_360_000))


def _json_or_none(body: bytes | None, headers: Mapping[str, str]) -> object:
    if not body or "json" not in headers.get("content-type", "application/json").lower():
        return None
    try:
        return msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return None


def slots_free(concurrency: int, live: int, want: int) -> int:
    """How many slots a taker gets: what it wants, within what the endpoint's concurrency leaves."""
    return max(0, min(want, concurrency - live))
