from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.ack_complete import AckComplete
    from ..models.ack_fail import AckFail


T = TypeVar("T", bound="AckRequest")


@_attrs_define
class AckRequest:
    """
    Attributes:
        complete (list[AckComplete] | Unset):
        fail (list[AckFail] | Unset):
    """

    complete: list[AckComplete] | Unset = UNSET
    fail: list[AckFail] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        complete: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.complete, Unset):
            complete = []
            for complete_item_data in self.complete:
                complete_item = complete_item_data.to_dict()
                complete.append(complete_item)

        fail: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.fail, Unset):
            fail = []
            for fail_item_data in self.fail:
                fail_item = fail_item_data.to_dict()
                fail.append(fail_item)

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if complete is not UNSET:
            field_dict["complete"] = complete
        if fail is not UNSET:
            field_dict["fail"] = fail

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.ack_complete import AckComplete
        from ..models.ack_fail import AckFail

        d = dict(src_dict)
        _complete = d.pop("complete", UNSET)
        complete: list[AckComplete] | Unset = UNSET
        if _complete is not UNSET:
            complete = []
            for complete_item_data in _complete:
                complete_item = AckComplete.from_dict(complete_item_data)

                complete.append(complete_item)

        _fail = d.pop("fail", UNSET)
        fail: list[AckFail] | Unset = UNSET
        if _fail is not UNSET:
            fail = []
            for fail_item_data in _fail:
                fail_item = AckFail.from_dict(fail_item_data)

                fail.append(fail_item)

        ack_request = cls(
            complete=complete,
            fail=fail,
        )

        return ack_request
