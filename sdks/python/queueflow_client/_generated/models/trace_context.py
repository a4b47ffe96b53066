from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="TraceContext")


@_attrs_define
class TraceContext:
    """
    Attributes:
        traceparent (str):
        tracestate (None | str):
    """

    traceparent: str
    tracestate: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        traceparent = self.traceparent

        tracestate: None | str
        tracestate = self.tracestate

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "traceparent": traceparent,
                "tracestate": tracestate,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        traceparent = d.pop("traceparent")

        def _parse_tracestate(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        tracestate = _parse_tracestate(d.pop("tracestate"))

        trace_context = cls(
            traceparent=traceparent,
            tracestate=tracestate,
        )

        trace_context.additional_properties = d
        return trace_context

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
