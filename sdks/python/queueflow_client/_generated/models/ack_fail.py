from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="AckFail")


@_attrs_define
class AckFail:
    """
    Attributes:
        error (str):
        id (str):
        lease_token (str):
        retry_after_seconds (float | None | Unset):
        retryable (bool | Unset):  Default: True.
    """

    error: str
    id: str
    lease_token: str
    retry_after_seconds: float | None | Unset = UNSET
    retryable: bool | Unset = True

    def to_dict(self) -> dict[str, Any]:
        error = self.error

        id = self.id

        lease_token = self.lease_token

        retry_after_seconds: float | None | Unset
        if isinstance(self.retry_after_seconds, Unset):
            retry_after_seconds = UNSET
        else:
            retry_after_seconds = self.retry_after_seconds

        retryable = self.retryable

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "error": error,
                "id": id,
                "lease_token": lease_token,
            }
        )
        if retry_after_seconds is not UNSET:
            field_dict["retry_after_seconds"] = retry_after_seconds
        if retryable is not UNSET:
            field_dict["retryable"] = retryable

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        error = d.pop("error")

        id = d.pop("id")

        lease_token = d.pop("lease_token")

        def _parse_retry_after_seconds(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        retry_after_seconds = _parse_retry_after_seconds(d.pop("retry_after_seconds", UNSET))

        retryable = d.pop("retryable", UNSET)

        ack_fail = cls(
            error=error,
            id=id,
            lease_token=lease_token,
            retry_after_seconds=retry_after_seconds,
            retryable=retryable,
        )

        return ack_fail
