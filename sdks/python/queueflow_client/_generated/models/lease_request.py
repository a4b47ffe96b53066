from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="LeaseRequest")


@_attrs_define
class LeaseRequest:
    """
    Attributes:
        queues (list[str]):
        lease_seconds (float | Unset):  Default: 30.0.
        max_jobs (int | Unset):  Default: 1.
        task_names (list[str] | None | Unset):
        wait_seconds (float | Unset):  Default: 0.0.
        worker_id (None | str | Unset):
    """

    queues: list[str]
    lease_seconds: float | Unset = 30.0
    max_jobs: int | Unset = 1
    task_names: list[str] | None | Unset = UNSET
    wait_seconds: float | Unset = 0.0
    worker_id: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        queues = self.queues

        lease_seconds = self.lease_seconds

        max_jobs = self.max_jobs

        task_names: list[str] | None | Unset
        if isinstance(self.task_names, Unset):
            task_names = UNSET
        elif isinstance(self.task_names, list):
            task_names = self.task_names

        else:
            task_names = self.task_names

        wait_seconds = self.wait_seconds

        worker_id: None | str | Unset
        if isinstance(self.worker_id, Unset):
            worker_id = UNSET
        else:
            worker_id = self.worker_id

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "queues": queues,
            }
        )
        if lease_seconds is not UNSET:
            field_dict["lease_seconds"] = lease_seconds
        if max_jobs is not UNSET:
            field_dict["max_jobs"] = max_jobs
        if task_names is not UNSET:
            field_dict["task_names"] = task_names
        if wait_seconds is not UNSET:
            field_dict["wait_seconds"] = wait_seconds
        if worker_id is not UNSET:
            field_dict["worker_id"] = worker_id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        queues = cast(list[str], d.pop("queues"))

        lease_seconds = d.pop("lease_seconds", UNSET)

        max_jobs = d.pop("max_jobs", UNSET)

        def _parse_task_names(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                task_names_type_0 = cast(list[str], data)

                return task_names_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        task_names = _parse_task_names(d.pop("task_names", UNSET))

        wait_seconds = d.pop("wait_seconds", UNSET)

        def _parse_worker_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        worker_id = _parse_worker_id(d.pop("worker_id", UNSET))

        lease_request = cls(
            queues=queues,
            lease_seconds=lease_seconds,
            max_jobs=max_jobs,
            task_names=task_names,
            wait_seconds=wait_seconds,
            worker_id=worker_id,
        )

        return lease_request
