from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.rate_limit import RateLimit


T = TypeVar("T", bound="Queue")


@_attrs_define
class Queue:
    """
    Attributes:
        cancelled (int):
        completed (int):
        concurrency_limit (int | None):
        dead_letter (int):
        key_concurrency_limit (int | None):
        name (str):
        oldest_pending_age_seconds (float | None):
        paused (bool):
        pending (int):
        rate_limit (None | RateLimit):
        retrying (int):
        running (int):
        scheduled (int):
    """

    cancelled: int
    completed: int
    concurrency_limit: int | None
    dead_letter: int
    key_concurrency_limit: int | None
    name: str
    oldest_pending_age_seconds: float | None
    paused: bool
    pending: int
    rate_limit: None | RateLimit
    retrying: int
    running: int
    scheduled: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.rate_limit import RateLimit

        cancelled = self.cancelled

        completed = self.completed

        concurrency_limit: int | None
        concurrency_limit = self.concurrency_limit

        dead_letter = self.dead_letter

        key_concurrency_limit: int | None
        key_concurrency_limit = self.key_concurrency_limit

        name = self.name

        oldest_pending_age_seconds: float | None
        oldest_pending_age_seconds = self.oldest_pending_age_seconds

        paused = self.paused

        pending = self.pending

        rate_limit: dict[str, Any] | None
        if isinstance(self.rate_limit, RateLimit):
            rate_limit = self.rate_limit.to_dict()
        else:
            rate_limit = self.rate_limit

        retrying = self.retrying

        running = self.running

        scheduled = self.scheduled

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cancelled": cancelled,
                "completed": completed,
                "concurrency_limit": concurrency_limit,
                "dead_letter": dead_letter,
                "key_concurrency_limit": key_concurrency_limit,
                "name": name,
                "oldest_pending_age_seconds": oldest_pending_age_seconds,
                "paused": paused,
                "pending": pending,
                "rate_limit": rate_limit,
                "retrying": retrying,
                "running": running,
                "scheduled": scheduled,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.rate_limit import RateLimit

        d = dict(src_dict)
        cancelled = d.pop("cancelled")

        completed = d.pop("completed")

        def _parse_concurrency_limit(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        concurrency_limit = _parse_concurrency_limit(d.pop("concurrency_limit"))

        dead_letter = d.pop("dead_letter")

        def _parse_key_concurrency_limit(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        key_concurrency_limit = _parse_key_concurrency_limit(d.pop("key_concurrency_limit"))

        name = d.pop("name")

        def _parse_oldest_pending_age_seconds(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        oldest_pending_age_seconds = _parse_oldest_pending_age_seconds(d.pop("oldest_pending_age_seconds"))

        paused = d.pop("paused")

        pending = d.pop("pending")

        def _parse_rate_limit(data: object) -> None | RateLimit:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                rate_limit_type_0 = RateLimit.from_dict(data)

                return rate_limit_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RateLimit, data)

        rate_limit = _parse_rate_limit(d.pop("rate_limit"))

        retrying = d.pop("retrying")

        running = d.pop("running")

        scheduled = d.pop("scheduled")

        queue = cls(
            cancelled=cancelled,
            completed=completed,
            concurrency_limit=concurrency_limit,
            dead_letter=dead_letter,
            key_concurrency_limit=key_concurrency_limit,
            name=name,
            oldest_pending_age_seconds=oldest_pending_age_seconds,
            paused=paused,
            pending=pending,
            rate_limit=rate_limit,
            retrying=retrying,
            running=running,
            scheduled=scheduled,
        )

        queue.additional_properties = d
        return queue

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
