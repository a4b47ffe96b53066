from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..models.backoff_strategy import BackoffStrategy
from ..types import UNSET, Unset

T = TypeVar("T", bound="Backoff")


@_attrs_define
class Backoff:
    """
    Attributes:
        base_seconds (float | Unset):  Default: 1.0.
        jitter (bool | Unset):  Default: True.
        max_seconds (float | Unset):  Default: 3600.0.
        strategy (BackoffStrategy | Unset):  Default: BackoffStrategy.EXPONENTIAL.
    """

    base_seconds: float | Unset = 1.0
    jitter: bool | Unset = True
    max_seconds: float | Unset = 3600.0
    strategy: BackoffStrategy | Unset = BackoffStrategy.EXPONENTIAL

    def to_dict(self) -> dict[str, Any]:
        base_seconds = self.base_seconds

        jitter = self.jitter

        max_seconds = self.max_seconds

        strategy: str | Unset = UNSET
        if not isinstance(self.strategy, Unset):
            strategy = self.strategy.value

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if base_seconds is not UNSET:
            field_dict["base_seconds"] = base_seconds
        if jitter is not UNSET:
            field_dict["jitter"] = jitter
        if max_seconds is not UNSET:
            field_dict["max_seconds"] = max_seconds
        if strategy is not UNSET:
            field_dict["strategy"] = strategy

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        base_seconds = d.pop("base_seconds", UNSET)

        jitter = d.pop("jitter", UNSET)

        max_seconds = d.pop("max_seconds", UNSET)

        _strategy = d.pop("strategy", UNSET)
        strategy: BackoffStrategy | Unset
        if isinstance(_strategy, Unset):
            strategy = UNSET
        else:
            strategy = BackoffStrategy(_strategy)

        backoff = cls(
            base_seconds=base_seconds,
            jitter=jitter,
            max_seconds=max_seconds,
            strategy=strategy,
        )

        return backoff
