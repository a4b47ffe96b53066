from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.heartbeat_result_outcome import HeartbeatResultOutcome

T = TypeVar("T", bound="HeartbeatResult")


@_attrs_define
class HeartbeatResult:
    """
    Attributes:
        id (str):
        locked_until (datetime.datetime | None):
        outcome (HeartbeatResultOutcome):
    """

    id: str
    locked_until: datetime.datetime | None
    outcome: HeartbeatResultOutcome
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        locked_until: None | str
        if isinstance(self.locked_until, datetime.datetime):
            locked_until = self.locked_until.isoformat()
        else:
            locked_until = self.locked_until

        outcome = self.outcome.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "locked_until": locked_until,
                "outcome": outcome,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        def _parse_locked_until(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                locked_until_type_0 = datetime.datetime.fromisoformat(data)

                return locked_until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        locked_until = _parse_locked_until(d.pop("locked_until"))

        outcome = HeartbeatResultOutcome(d.pop("outcome"))

        heartbeat_result = cls(
            id=id,
            locked_until=locked_until,
            outcome=outcome,
        )

        heartbeat_result.additional_properties = d
        return heartbeat_result

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
