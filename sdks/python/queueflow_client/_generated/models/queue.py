from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Queue")


@_attrs_define
class Queue:
    """
    Attributes:
        cancelled (int):
        completed (int):
        dead_letter (int):
        name (str):
        oldest_pending_age_seconds (float | None):
        pending (int):
        retrying (int):
        running (int):
        scheduled (int):
    """

    cancelled: int
    completed: int
    dead_letter: int
    name: str
    oldest_pending_age_seconds: float | None
    pending: int
    retrying: int
    running: int
    scheduled: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cancelled = self.cancelled

        completed = self.completed

        dead_letter = self.dead_letter

        name = self.name

        oldest_pending_age_seconds: float | None
        oldest_pending_age_seconds = self.oldest_pending_age_seconds

        pending = self.pending

        retrying = self.retrying

        running = self.running

        scheduled = self.scheduled

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cancelled": cancelled,
                "completed": completed,
                "dead_letter": dead_letter,
                "name": name,
                "oldest_pending_age_seconds": oldest_pending_age_seconds,
                "pending": pending,
                "retrying": retrying,
                "running": running,
                "scheduled": scheduled,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        cancelled = d.pop("cancelled")

        completed = d.pop("completed")

        dead_letter = d.pop("dead_letter")

        name = d.pop("name")

        def _parse_oldest_pending_age_seconds(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        oldest_pending_age_seconds = _parse_oldest_pending_age_seconds(d.pop("oldest_pending_age_seconds"))

        pending = d.pop("pending")

        retrying = d.pop("retrying")

        running = d.pop("running")

        scheduled = d.pop("scheduled")

        queue = cls(
            cancelled=cancelled,
            completed=completed,
            dead_letter=dead_letter,
            name=name,
            oldest_pending_age_seconds=oldest_pending_age_seconds,
            pending=pending,
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
