from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="RateLimit")


@_attrs_define
class RateLimit:
    """
    Attributes:
        jobs (int):
        per_seconds (float):
    """

    jobs: int
    per_seconds: float

    def to_dict(self) -> dict[str, Any]:
        jobs = self.jobs

        per_seconds = self.per_seconds

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "jobs": jobs,
                "per_seconds": per_seconds,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        jobs = d.pop("jobs")

        per_seconds = d.pop("per_seconds")

        rate_limit = cls(
            jobs=jobs,
            per_seconds=per_seconds,
        )

        return rate_limit
