from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.added_step_on_failure import AddedStepOnFailure
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.added_step_payload import AddedStepPayload
    from ..models.backoff import Backoff
    from ..models.wait_spec import WaitSpec


T = TypeVar("T", bound="AddedStep")


@_attrs_define
class AddedStep:
    """
    Attributes:
        name (str):
        backoff (Backoff | Unset):
        concurrency_key (None | str | Unset): The group a queue's key_concurrency_limit counts this job in, e.g. a user
            id
        depends_on (list[str] | Unset):
        max_retries (int | Unset):
        on_failure (AddedStepOnFailure | Unset):  Default: AddedStepOnFailure.HALT.
        payload (AddedStepPayload | Unset):
        priority (int | Unset):
        queue_name (str | Unset):
        required_by (list[str] | Unset):
        task_name (None | str | Unset):
        timeout_seconds (float | None | Unset):
        wait (None | Unset | WaitSpec):
    """

    name: str
    backoff: Backoff | Unset = UNSET
    concurrency_key: None | str | Unset = UNSET
    depends_on: list[str] | Unset = UNSET
    max_retries: int | Unset = UNSET
    on_failure: AddedStepOnFailure | Unset = AddedStepOnFailure.HALT
    payload: AddedStepPayload | Unset = UNSET
    priority: int | Unset = UNSET
    queue_name: str | Unset = UNSET
    required_by: list[str] | Unset = UNSET
    task_name: None | str | Unset = UNSET
    timeout_seconds: float | None | Unset = UNSET
    wait: None | Unset | WaitSpec = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.wait_spec import WaitSpec

        name = self.name

        backoff: dict[str, Any] | Unset = UNSET
        if not isinstance(self.backoff, Unset):
            backoff = self.backoff.to_dict()

        concurrency_key: None | str | Unset
        if isinstance(self.concurrency_key, Unset):
            concurrency_key = UNSET
        else:
            concurrency_key = self.concurrency_key

        depends_on: list[str] | Unset = UNSET
        if not isinstance(self.depends_on, Unset):
            depends_on = self.depends_on

        max_retries = self.max_retries

        on_failure: str | Unset = UNSET
        if not isinstance(self.on_failure, Unset):
            on_failure = self.on_failure.value

        payload: dict[str, Any] | Unset = UNSET
        if not isinstance(self.payload, Unset):
            payload = self.payload.to_dict()

        priority = self.priority

        queue_name = self.queue_name

        required_by: list[str] | Unset = UNSET
        if not isinstance(self.required_by, Unset):
            required_by = self.required_by

        task_name: None | str | Unset
        if isinstance(self.task_name, Unset):
            task_name = UNSET
        else:
            task_name = self.task_name

        timeout_seconds: float | None | Unset
        if isinstance(self.timeout_seconds, Unset):
            timeout_seconds = UNSET
        else:
            timeout_seconds = self.timeout_seconds

        wait: dict[str, Any] | None | Unset
        if isinstance(self.wait, Unset):
            wait = UNSET
        elif isinstance(self.wait, WaitSpec):
            wait = self.wait.to_dict()
        else:
            wait = self.wait

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if backoff is not UNSET:
            field_dict["backoff"] = backoff
        if concurrency_key is not UNSET:
            field_dict["concurrency_key"] = concurrency_key
        if depends_on is not UNSET:
            field_dict["depends_on"] = depends_on
        if max_retries is not UNSET:
            field_dict["max_retries"] = max_retries
        if on_failure is not UNSET:
            field_dict["on_failure"] = on_failure
        if payload is not UNSET:
            field_dict["payload"] = payload
        if priority is not UNSET:
            field_dict["priority"] = priority
        if queue_name is not UNSET:
            field_dict["queue_name"] = queue_name
        if required_by is not UNSET:
            field_dict["required_by"] = required_by
        if task_name is not UNSET:
            field_dict["task_name"] = task_name
        if timeout_seconds is not UNSET:
            field_dict["timeout_seconds"] = timeout_seconds
        if wait is not UNSET:
            field_dict["wait"] = wait

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.added_step_payload import AddedStepPayload
        from ..models.backoff import Backoff
        from ..models.wait_spec import WaitSpec

        d = dict(src_dict)
        name = d.pop("name")

        _backoff = d.pop("backoff", UNSET)
        backoff: Backoff | Unset
        if isinstance(_backoff, Unset):
            backoff = UNSET
        else:
            backoff = Backoff.from_dict(_backoff)

        def _parse_concurrency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        concurrency_key = _parse_concurrency_key(d.pop("concurrency_key", UNSET))

        depends_on = cast(list[str], d.pop("depends_on", UNSET))

        max_retries = d.pop("max_retries", UNSET)

        _on_failure = d.pop("on_failure", UNSET)
        on_failure: AddedStepOnFailure | Unset
        if isinstance(_on_failure, Unset):
            on_failure = UNSET
        else:
            on_failure = AddedStepOnFailure(_on_failure)

        _payload = d.pop("payload", UNSET)
        payload: AddedStepPayload | Unset
        if isinstance(_payload, Unset):
            payload = UNSET
        else:
            payload = AddedStepPayload.from_dict(_payload)

        priority = d.pop("priority", UNSET)

        queue_name = d.pop("queue_name", UNSET)

        required_by = cast(list[str], d.pop("required_by", UNSET))

        def _parse_task_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        task_name = _parse_task_name(d.pop("task_name", UNSET))

        def _parse_timeout_seconds(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        timeout_seconds = _parse_timeout_seconds(d.pop("timeout_seconds", UNSET))

        def _parse_wait(data: object) -> None | Unset | WaitSpec:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                wait_type_0 = WaitSpec.from_dict(data)

                return wait_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WaitSpec, data)

        wait = _parse_wait(d.pop("wait", UNSET))

        added_step = cls(
            name=name,
            backoff=backoff,
            concurrency_key=concurrency_key,
            depends_on=depends_on,
            max_retries=max_retries,
            on_failure=on_failure,
            payload=payload,
            priority=priority,
            queue_name=queue_name,
            required_by=required_by,
            task_name=task_name,
            timeout_seconds=timeout_seconds,
            wait=wait,
        )

        return added_step
