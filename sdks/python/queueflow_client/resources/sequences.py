"""`client.sequences`: resume a halted sequence (`Sequences` sync, `AsyncSequences` async).

client.jobs.enqueue("post_entry", payload={...}, sequence=Sequence("account-7", on_failure="halt"))
client.sequences.resume("account-7")  # the jobs a dead-lettered halting job held may run
"""

from __future__ import annotations

from queueflow_client import _calls
from queueflow_client.resources._base import Resource
from queueflow_client.types import SequenceResumed

__all__ = ["AsyncSequences", "Sequences"]


class Sequences(Resource):
    def resume(self, key: str) -> SequenceResumed:
        """Move the sequence `key` past the dead-lettered `halt` job that holds it (NotFoundError: no job has the
        key; InvalidStateError: nothing blocks it)."""
        result: SequenceResumed = self._send(_calls.resume_sequence(key))
        return result


class AsyncSequences(Resource):
    async def resume(self, key: str) -> SequenceResumed:
        """Move the sequence `key` past the dead-lettered `halt` job that holds it (NotFoundError: no job has the
        key; InvalidStateError: nothing blocks it)."""
        result: SequenceResumed = await self._send(_calls.resume_sequence(key))
        return result
