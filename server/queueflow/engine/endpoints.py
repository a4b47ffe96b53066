"""Push endpoint use cases (`Engine.endpoints`): a tenant's endpoints, and where a delivery may connect.

`core.endpoints` decides (the rules, which addresses are refused, the rotation); this module reads the clock,
makes secrets and ids, resolves names through the `Resolver` port, and has the store record. Unless private
endpoints are allowed (`EngineSettings.allow_private_endpoints`), a URL whose host resolves to an address
`core.endpoints.address_refusal` refuses is a 400 at creation and on every change of URL, and is checked again
before every new connection a delivery makes (`addresses`). The delivery loop takes and gives back its slots
here too.
"""

from __future__ import annotations

import builtins
import secrets
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from queueflow.core.backoff import RandomSource
from queueflow.core.cursor import page, page_after
from queueflow.core.endpoints import (
    SECRET_PREFIX,
    DeliveriesFinished,
    Endpoint,
    EndpointPatch,
    EndpointQuery,
    NewEndpoint,
    SlotRequest,
    address_refusal,
    endpoint_errors,
    error_text,
    host_of,
    patch_errors,
    patched,
    rotated,
)
from queueflow.core.errors import FieldError, InvalidState, NotFound, ValidationError
from queueflow.core.ids import new_id
from queueflow.core.types import Page, Unchanged
from queueflow.core.validation import check
from queueflow.ports import Clock, Resolver, Store

UPDATE_ATTEMPTS = 5
TICK = timedelta(microseconds=1)

Change = Callable[[Endpoint, datetime], Endpoint]
"""An edit of the endpoint as read, at a time (`core.endpoints.patched`, `rotated`)."""


class Refused(OSError):
    """A delivery may not connect where its endpoint's URL leads (the message says why). An OSError, as a failed
    name lookup is, so an HTTP client reports it as the connection error it is."""


class Endpoints:
    def __init__(
        self, store: Store, clock: Clock, rng: RandomSource, resolver: Resolver, *, allow_private: bool
    ) -> None:
        self.store = store
        self.clock = clock
        self.rng = rng
        self.resolver = resolver
        self.allow_private = allow_private

    async def create(self, tenant_id: str, new: NewEndpoint) -> Endpoint:
        """Create an endpoint with a new secret (the answer is the only read that shows it). A taken name is
        InvalidState; a URL that leads where deliveries may not go is a ValidationError."""
        check(endpoint_errors(new))
        await self._check_url(new.url)
        now = self.clock.now()
        endpoint = Endpoint(
            id=new_id("ep", now, self.rng),
            tenant_id=tenant_id,
            name=new.name,
            url=new.url,
            queues=tuple(dict.fromkeys(new.queues)),
            task_names=None if new.task_names is None else tuple(dict.fromkeys(new.task_names)),
            concurrency=new.concurrency,
            timeout_seconds=new.timeout_seconds,
            paused=new.paused,
            secret=new_secret(),
            previous_secret=None,
            previous_secret_until=None,
            created_at=now,
            updated_at=now,
        )
        return await self.store.endpoint_insert(endpoint)

    async def get(self, tenant_id: str, name: str) -> Endpoint:
        endpoint = await self.store.endpoint_get(name, tenant_id=tenant_id, now=self.clock.now())
        if endpoint is None:
            raise NotFound(f"no endpoint {name!r}")
        return endpoint

    async def list(self, tenant_id: str, *, limit: int = 50, cursor: str | None = None) -> Page[Endpoint]:
        after = page_after(limit, cursor)
        query = EndpointQuery(tenant_id=tenant_id, limit=limit + 1, after=after, now=self.clock.now())
        return page(await self.store.endpoint_list(query), limit)

    async def update(self, tenant_id: str, name: str, patch: EndpointPatch) -> Endpoint:
        """Change some of an endpoint's settings (pausing stops new deliveries; those in flight finish)."""
        check(patch_errors(patch))
        if not isinstance(patch.url, Unchanged):
            await self._check_url(patch.url)
        return await self._change(tenant_id, name, lambda current, now: patched(current, patch, now))

    async def rotate_secret(self, tenant_id: str, name: str) -> Endpoint:
        """A new secret, returned in full; the previous one signs too for `core.endpoints.SECRET_OVERLAP`."""
        secret = new_secret()
        return await self._change(tenant_id, name, lambda current, now: rotated(current, secret, now))

    async def delete(self, tenant_id: str, name: str) -> None:
        """Delete an endpoint: no new deliveries; those in flight finish or expire."""
        if not await self.store.endpoint_delete(name, tenant_id=tenant_id):
            raise NotFound(f"no endpoint {name!r}")

    async def addresses(self, host: str, port: int) -> builtins.list[str]:
        """Resolve `host` once and check every address it gave: where a delivery's new connection may go (the
        first of them). `Refused` when it resolves to nothing, or (unless private endpoints are allowed) to any
        address `core.endpoints.address_refusal` refuses: a name that also leads inside is not to be trusted."""
        addresses = await self.resolver.resolve(host, port)
        if not addresses:
            raise Refused(f"{host} does not resolve")
        if not self.allow_private:
            for address in addresses:
                if (refusal := address_refusal(address)) is not None:
                    raise Refused(f"{host} resolves to {refusal}; private endpoints are not allowed on this server")
        return addresses

    async def _check_url(self, url: str) -> None:
        if self.allow_private:
            return
        try:
            await self.addresses(*host_of(url))
        except Refused as exc:
            raise ValidationError.of([FieldError(("url",), str(exc))]) from None

    # --- the delivery loop's (`runtime.delivery`) ----------------------------------------------------------------

    async def deliverable(self) -> builtins.list[Endpoint]:
        """Every tenant's endpoints that are not paused."""
        return await self.store.endpoint_deliverable()

    async def take_slots(self, endpoint_id: str, want: int, hold_seconds: float) -> builtins.list[str]:
        """Up to `want` delivery slots of the endpoint, as many as its concurrency leaves (across processes)."""
        request = SlotRequest(endpoint_id=endpoint_id, want=want, hold_seconds=hold_seconds, now=self.clock.now())
        return await self.store.endpoint_slots_take(request)

    async def hold_slots(self, slot_ids: Sequence[str], hold_seconds: float) -> int:
        now = self.clock.now()
        return await self.store.endpoint_slots_hold(slot_ids, until=now + timedelta(seconds=hold_seconds), now=now)

    async def release_slots(self, slot_ids: Sequence[str]) -> None:
        if slot_ids:
            await self.store.endpoint_slots_release(slot_ids)

    async def finished(self, endpoint_id: str, ended: Sequence[tuple[str, str | None]]) -> None:
        """Deliveries of the endpoint ended, each (slot, error; None: answered 2xx): their slots back, the
        endpoint's counters moved (its `last_error` the last failure's)."""
        errors = [error for _, error in ended if error is not None]
        finished = DeliveriesFinished(
            endpoint_id=endpoint_id,
            slot_ids=[slot for slot, _ in ended],
            delivered=len(ended) - len(errors),
            failed=len(errors),
            last_error=error_text(errors[-1]) if errors else None,
            now=self.clock.now(),
        )
        await self.store.endpoint_deliveries_finish(finished)

    async def _change(self, tenant_id: str, name: str, change: Change) -> Endpoint:
        for _ in range(UPDATE_ATTEMPTS):
            current = await self.get(tenant_id, name)
            now = max(self.clock.now(), current.updated_at + TICK)  # tells every edit apart, even at one reading
            stored = await self.store.endpoint_update(change(current, now), expected_updated_at=current.updated_at)
            if stored is not None:
                return replace(stored, in_flight=current.in_flight)
        raise InvalidState(f"endpoint {name!r} kept changing while this update was applied; try again")


def new_secret() -> str:
    """A signing secret: 256 bits from the OS's CSPRNG (never the engine's seeded `rng`)."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)
