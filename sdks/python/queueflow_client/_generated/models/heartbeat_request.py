from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="HeartbeatRequest")


@_attrs_define
class HeartbeatRequest:
    """
    Attributes:
        lease_token (str):
        lease_seconds (float | Unset):  Default: 30.0.
        progress (Any | Unset):
    """

    lease_token: str
    lease_seconds: float | Unset = 30.0
    progress: Any | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        lease_token = self.lease_token

        lease_seconds = self.lease_seconds

        progress = self.progress

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "lease_token": lease_token,
            }
        )
        if lease_seconds is not UNSET:
            field_dict["lease_seconds"] = lease_seconds
        if progress is not UNSET:
            field_dict["progress"] = progress

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        lease_token = d.pop("lease_token")

        lease_seconds = d.pop("lease_seconds", UNSET)

        progress = d.pop("progress", UNSET)

        heartbeat_request = cls(
            lease_token=lease_token,
            lease_seconds=lease_seconds,
            progress=progress,
        )

        return heartbeat_request
