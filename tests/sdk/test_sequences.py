"""`sequence=Sequence(...)` and `sequences.resume(key)` through the Python SDK against the real app: enqueue, a
batch, Job's fields, the list filter, and resume's 404 and 409 as errors."""

from __future__ import annotations

import pytest
from queueflow_client import AsyncQueueFlow, InvalidStateError, NotFoundError, Sequence


async def test_enqueue_in_a_sequence_list_it_and_resume_errors(client: AsyncQueueFlow) -> None:
    first = await client.jobs.enqueue("post", sequence=Sequence("account-7", on_failure="halt"))
    [second] = await client.jobs.enqueue_many([{"task_name": "post", "sequence": {"key": "account-7"}}])
    assert (first.sequence_key, second.sequence_key, first.blocked_by) == ("account-7", "account-7", None)
    listed = await client.jobs.list_page(sequence_key="account-7")
    assert [job.id for job in listed.items] == [second.id, first.id]
    with pytest.raises(InvalidStateError):
        await client.sequences.resume("account-7")  # nothing blocks it
    with pytest.raises(NotFoundError):
        await client.sequences.resume("no-such-account")


async def test_a_bad_sequence_option_is_refused_before_anything_is_sent(client: AsyncQueueFlow) -> None:
    with pytest.raises(ValueError, match="on_failure"):
        await client.jobs.enqueue("post", sequence={"key": "k", "on_failure": "stop"})
    with pytest.raises(TypeError, match="unknown sequence option"):
        await client.jobs.enqueue("post", sequence={"key": "k", "order": 1})
