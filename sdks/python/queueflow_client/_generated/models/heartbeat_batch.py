from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.heartbeat_item import HeartbeatItem


T = TypeVar("T", bound="HeartbeatBatch")


@_attrs_define
class HeartbeatBatch:
    """
    Attributes:
        jobs (list[HeartbeatItem]):
        lease_seconds (float | Unset):  Default: 30.0.
    """

    jobs: list[HeartbeatItem]
    lease_seconds: float | Unset = 30.0

    def to_dict(self) -> dict[str, Any]:
        jobs = []
        for jobs_item_data in self.jobs:
            jobs_item = jobs_item_data.to_dict()
            jobs.append(jobs_item)

        lease_seconds = self.lease_seconds

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "jobs": jobs,
            }
        )
        if lease_seconds is not UNSET:
            field_dict["lease_seconds"] = lease_seconds

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.heartbeat_item import HeartbeatItem

        d = dict(src_dict)
        jobs = []
        _jobs = d.pop("jobs")
        for jobs_item_data in _jobs:
            jobs_item = HeartbeatItem.from_dict(jobs_item_data)

            jobs.append(jobs_item)

        lease_seconds = d.pop("lease_seconds", UNSET)

        heartbeat_batch = cls(
            jobs=jobs,
            lease_seconds=lease_seconds,
        )

        return heartbeat_batch
