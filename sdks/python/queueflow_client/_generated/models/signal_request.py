from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="SignalRequest")


@_attrs_define
class SignalRequest:
    """
    Attributes:
        payload (Any | Unset):
    """

    payload: Any | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        payload = self.payload

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if payload is not UNSET:
            field_dict["payload"] = payload

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        payload = d.pop("payload", UNSET)

        signal_request = cls(
            payload=payload,
        )

        return signal_request
