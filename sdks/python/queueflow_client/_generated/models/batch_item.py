from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.backoff import Backoff
    from ..models.batch_item_metadata import BatchItemMetadata
    from ..models.batch_item_payload import BatchItemPayload


T = TypeVar("T", bound="BatchItem")


@_attrs_define
class BatchItem:
    """
    Attributes:
        task_name (str):
        backoff (Backoff | Unset):
        concurrency_key (None | str | Unset): The group a queue's key_concurrency_limit counts this job in, e.g. a user
            id
        delay_seconds (float | None | Unset):
        idempotency_key (None | str | Unset):
        max_retries (int | Unset):  Default: 3.
        metadata (BatchItemMetadata | Unset):
        payload (BatchItemPayload | Unset):
        priority (int | Unset):  Default: 0.
        queue_name (str | Unset):  Default: 'default'.
        run_at (datetime.datetime | None | Unset):
        timeout_seconds (float | None | Unset):
    """

    task_name: str
    backoff: Backoff | Unset = UNSET
    concurrency_key: None | str | Unset = UNSET
    delay_seconds: float | None | Unset = UNSET
    idempotency_key: None | str | Unset = UNSET
    max_retries: int | Unset = 3
    metadata: BatchItemMetadata | Unset = UNSET
    payload: BatchItemPayload | Unset = UNSET
    priority: int | Unset = 0
    queue_name: str | Unset = "default"
    run_at: datetime.datetime | None | Unset = UNSET
    timeout_seconds: float | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        task_name = self.task_name

        backoff: dict[str, Any] | Unset = UNSET
        if not isinstance(self.backoff, Unset):
            backoff = self.backoff.to_dict()

        concurrency_key: None | str | Unset
        if isinstance(self.concurrency_key, Unset):
            concurrency_key = UNSET
        else:
            concurrency_key = self.concurrency_key

        delay_seconds: float | None | Unset
        if isinstance(self.delay_seconds, Unset):
            delay_seconds = UNSET
        else:
            delay_seconds = self.delay_seconds

        idempotency_key: None | str | Unset
        if isinstance(self.idempotency_key, Unset):
            idempotency_key = UNSET
        else:
            idempotency_key = self.idempotency_key

        max_retries = self.max_retries

        metadata: dict[str, Any] | Unset = UNSET
        if not isinstance(self.metadata, Unset):
            metadata = self.metadata.to_dict()

        payload: dict[str, Any] | Unset = UNSET
        if not isinstance(self.payload, Unset):
            payload = self.payload.to_dict()

        priority = self.priority

        queue_name = self.queue_name

        run_at: None | str | Unset
        if isinstance(self.run_at, Unset):
            run_at = UNSET
        elif isinstance(self.run_at, datetime.datetime):
            run_at = self.run_at.isoformat()
        else:
            run_at = self.run_at

        timeout_seconds: float | None | Unset
        if isinstance(self.timeout_seconds, Unset):
            timeout_seconds = UNSET
        else:
            timeout_seconds = self.timeout_seconds

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "task_name": task_name,
            }
        )
        if backoff is not UNSET:
            field_dict["backoff"] = backoff
        if concurrency_key is not UNSET:
            field_dict["concurrency_key"] = concurrency_key
        if delay_seconds is not UNSET:
            field_dict["delay_seconds"] = delay_seconds
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key
        if max_retries is not UNSET:
            field_dict["max_retries"] = max_retries
        if metadata is not UNSET:
            field_dict["metadata"] = metadata
        if payload is not UNSET:
            field_dict["payload"] = payload
        if priority is not UNSET:
            field_dict["priority"] = priority
        if queue_name is not UNSET:
            field_dict["queue_name"] = queue_name
        if run_at is not UNSET:
            field_dict["run_at"] = run_at
        if timeout_seconds is not UNSET:
            field_dict["timeout_seconds"] = timeout_seconds

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.backoff import Backoff
        from ..models.batch_item_metadata import BatchItemMetadata
        from ..models.batch_item_payload import BatchItemPayload

        d = dict(src_dict)
        task_name = d.pop("task_name")

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

        def _parse_delay_seconds(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        delay_seconds = _parse_delay_seconds(d.pop("delay_seconds", UNSET))

        def _parse_idempotency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotency_key", UNSET))

        max_retries = d.pop("max_retries", UNSET)

        _metadata = d.pop("metadata", UNSET)
        metadata: BatchItemMetadata | Unset
        if isinstance(_metadata, Unset):
            metadata = UNSET
        else:
            metadata = BatchItemMetadata.from_dict(_metadata)

        _payload = d.pop("payload", UNSET)
        payload: BatchItemPayload | Unset
        if isinstance(_payload, Unset):
            payload = UNSET
        else:
            payload = BatchItemPayload.from_dict(_payload)

        priority = d.pop("priority", UNSET)

        queue_name = d.pop("queue_name", UNSET)

        def _parse_run_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                run_at_type_0 = datetime.datetime.fromisoformat(data)

                return run_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        run_at = _parse_run_at(d.pop("run_at", UNSET))

        def _parse_timeout_seconds(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        timeout_seconds = _parse_timeout_seconds(d.pop("timeout_seconds", UNSET))

        batch_item = cls(
            task_name=task_name,
            backoff=backoff,
            concurrency_key=concurrency_key,
            delay_seconds=delay_seconds,
            idempotency_key=idempotency_key,
            max_retries=max_retries,
            metadata=metadata,
            payload=payload,
            priority=priority,
            queue_name=queue_name,
            run_at=run_at,
            timeout_seconds=timeout_seconds,
        )

        return batch_item
