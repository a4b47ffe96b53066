from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.release_item import ReleaseItem


T = TypeVar("T", bound="ReleaseRequest")


@_attrs_define
class ReleaseRequest:
    """
    Attributes:
        jobs (list[ReleaseItem]):
    """

    jobs: list[ReleaseItem]

    def to_dict(self) -> dict[str, Any]:
        jobs = []
        for jobs_item_data in self.jobs:
            jobs_item = jobs_item_data.to_dict()
            jobs.append(jobs_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "jobs": jobs,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.release_item import ReleaseItem

        d = dict(src_dict)
        jobs = []
        _jobs = d.pop("jobs")
        for jobs_item_data in _jobs:
            jobs_item = ReleaseItem.from_dict(jobs_item_data)

            jobs.append(jobs_item)

        release_request = cls(
            jobs=jobs,
        )

        return release_request
