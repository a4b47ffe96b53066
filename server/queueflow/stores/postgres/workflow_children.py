"""The sweeps of child workflows and deadlines (`core.children`): reads only, for the janitor's heal and the wait
timer. What they find is ended by the ordinary guarded writes (a step's finish, a change of the whole workflow),
so of two processes that find the same row, one records it."""

from __future__ import annotations

from datetime import datetime

from queueflow.core.children import parent_wait
from queueflow.core.waits import DueWait
from queueflow.core.workflow import ParentRef
from queueflow.stores.postgres.connection import Pooled
from queueflow.stores.postgres.workflow_sql import CHILDREN_ENDED, DEADLINES_DUE, NEXT_DEADLINE


class PostgresWorkflowChildren(Pooled):
    async def workflow_children_ended(self, *, limit: int, ended_before: datetime) -> list[DueWait]:
        async with self._connection() as db:
            rows = await db.fetch(CHILDREN_ENDED, limit, ended_before)
        return [
            parent_wait(ParentRef(workflow_id=row["workflow_id"], step=row["name"]), row["child_workflow_id"])
            for row in rows
        ]

    async def workflow_deadlines_due(self, *, limit: int, now: datetime) -> list[str]:
        async with self._connection() as db:
            return [row["id"] for row in await db.fetch(DEADLINES_DUE, now, limit)]

    async def workflow_next_deadline(self) -> datetime | None:
        async with self._connection() as db:
            due: datetime | None = await db.fetchval(NEXT_DEADLINE)
            return due
