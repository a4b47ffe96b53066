from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.ack_result_outcome import AckResultOutcome
from ..models.ack_result_status_type_1 import AckResultStatusType1
from ..models.ack_result_status_type_2_type_1 import AckResultStatusType2Type1
from ..models.ack_result_status_type_3_type_1 import AckResultStatusType3Type1

T = TypeVar("T", bound="AckResult")


@_attrs_define
class AckResult:
    """
    Attributes:
        id (str):
        outcome (AckResultOutcome):
        status (AckResultStatusType1 | AckResultStatusType2Type1 | AckResultStatusType3Type1 | None):
    """

    id: str
    outcome: AckResultOutcome
    status: AckResultStatusType1 | AckResultStatusType2Type1 | AckResultStatusType3Type1 | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        outcome = self.outcome.value

        status: None | str
        if (
            isinstance(self.status, AckResultStatusType1)
            or isinstance(self.status, AckResultStatusType2Type1)
            or isinstance(self.status, AckResultStatusType3Type1)
        ):
            status = self.status.value
        else:
            status = self.status

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "outcome": outcome,
                "status": status,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        outcome = AckResultOutcome(d.pop("outcome"))

        def _parse_status(
            data: object,
        ) -> AckResultStatusType1 | AckResultStatusType2Type1 | AckResultStatusType3Type1 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                status_type_1 = AckResultStatusType1(data)

                return status_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                status_type_2_type_1 = AckResultStatusType2Type1(data)

                return status_type_2_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                status_type_3_type_1 = AckResultStatusType3Type1(data)

                return status_type_3_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AckResultStatusType1 | AckResultStatusType2Type1 | AckResultStatusType3Type1 | None, data)

        status = _parse_status(d.pop("status"))

        ack_result = cls(
            id=id,
            outcome=outcome,
            status=status,
        )

        ack_result.additional_properties = d
        return ack_result

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
