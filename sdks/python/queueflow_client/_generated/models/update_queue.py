from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.rate_limit import RateLimit


T = TypeVar("T", bound="UpdateQueue")


@_attrs_define
class UpdateQueue:
    """
    Attributes:
        concurrency_limit (int | None | Unset):
        key_concurrency_limit (int | None | Unset):
        paused (bool | Unset):
        rate_limit (None | RateLimit | Unset):
    """

    concurrency_limit: int | None | Unset = UNSET
    key_concurrency_limit: int | None | Unset = UNSET
    paused: bool | Unset = UNSET
    rate_limit: None | RateLimit | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.rate_limit import RateLimit

        concurrency_limit: int | None | Unset
        if isinstance(self.concurrency_limit, Unset):
            concurrency_limit = UNSET
        else:
            concurrency_limit = self.concurrency_limit

        key_concurrency_limit: int | None | Unset
        if isinstance(self.key_concurrency_limit, Unset):
            key_concurrency_limit = UNSET
        else:
            key_concurrency_limit = self.key_concurrency_limit

        paused = self.paused

        rate_limit: dict[str, Any] | None | Unset
        if isinstance(self.rate_limit, Unset):
            rate_limit = UNSET
        elif isinstance(self.rate_limit, RateLimit):
            rate_limit = self.rate_limit.to_dict()
        else:
            rate_limit = self.rate_limit

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if concurrency_limit is not UNSET:
            field_dict["concurrency_limit"] = concurrency_limit
        if key_concurrency_limit is not UNSET:
            field_dict["key_concurrency_limit"] = key_concurrency_limit
        if paused is not UNSET:
            field_dict["paused"] = paused
        if rate_limit is not UNSET:
            field_dict["rate_limit"] = rate_limit

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.rate_limit import RateLimit

        d = dict(src_dict)

        def _parse_concurrency_limit(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        concurrency_limit = _parse_concurrency_limit(d.pop("concurrency_limit", UNSET))

        def _parse_key_concurrency_limit(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        key_concurrency_limit = _parse_key_concurrency_limit(d.pop("key_concurrency_limit", UNSET))

        paused = d.pop("paused", UNSET)

        def _parse_rate_limit(data: object) -> None | RateLimit | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                rate_limit_type_0 = RateLimit.from_dict(data)

                return rate_limit_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RateLimit | Unset, data)

        rate_limit = _parse_rate_limit(d.pop("rate_limit", UNSET))

        update_queue = cls(
            concurrency_limit=concurrency_limit,
            key_concurrency_limit=key_concurrency_limit,
            paused=paused,
            rate_limit=rate_limit,
        )

        return update_queue
