"""Unique jobs in the in-memory store: a batch whose items carry `unique` rules (`core.unique`), on the shared
`Tables`. Nothing here awaits, so the whole batch is one atomic step, as PostgreSQL's key locks make it there."""

from __future__ import annotations

import copy
from collections.abc import Sequence

from msgspec.structs import replace

from queueflow.core.types import Job, UniqueOutcome, UniqueRule
from queueflow.core.unique import Ask, matches, resolve, sort_items
from queueflow.stores.memory.state import Tables


class MemoryUnique(Tables):
    def _insert_unique(
        self, jobs: Sequence[Job], rules: Sequence[UniqueRule | None]
    ) -> list[tuple[Job, bool | UniqueOutcome]]:
        """Insert checked `jobs` (`_check_insert`) under their rules: the idempotency key first, then the rule."""
        known = {
            (job.tenant_id, job.idempotency_key): self._out(
                self._jobs[self._idempotency[job.tenant_id, job.idempotency_key]]
            )
            for job in jobs
            if job.idempotency_key is not None and (job.tenant_id, job.idempotency_key) in self._idempotency
        }
        items = sort_items(jobs, rules, known)
        several = len(jobs) > 1
        asks = [
            Ask(job, rule, self._unique_found(job, rule), index if several else None)
            for index, job, rule in items.asking
        ]
        decisions = {index: decision for (index, _, _), decision in zip(items.asking, resolve(asks), strict=True)}
        # Decided (a Duplicate raised nothing written): now the writes, in the batch's order.
        woken: set[str] = set()
        results: list[tuple[Job, bool | UniqueOutcome]] = []
        for index, job in enumerate(jobs):
            if index in items.settled:
                results.append((items.settled[index], False))
            elif index in items.repeats:
                results.append((results[items.repeats[index]][0], False))
            elif index in decisions and decisions[index].outcome is UniqueOutcome.SKIPPED:
                results.append((self._out(decisions[index].job), UniqueOutcome.SKIPPED))
            elif index in decisions and decisions[index].outcome is UniqueOutcome.REPLACED:
                new = decisions[index].job
                stored = self._jobs[new.id] = replace(
                    new, payload=copy.deepcopy(new.payload), metadata=copy.deepcopy(new.metadata)
                )
                woken.add(stored.queue_name)  # it may be due sooner
                results.append((self._out(stored), UniqueOutcome.REPLACED))
            else:
                stored = self._store_new(job)
                woken.add(stored.queue_name)
                results.append((self._out(stored), True))
        if self._wakeups is not None:
            for queue in woken:
                self._wakeups.notify(queue)
        return results

    def _unique_found(self, job: Job, rule: UniqueRule) -> Job | None:
        """The newest job of `job`'s tenant that `rule` counts, as of the row's `created_at` (the enqueue's now)."""
        ids = self._unique.get((job.tenant_id, rule.key), ())
        found = [self._jobs[i] for i in ids if matches(rule, self._jobs[i], job.created_at)]
        return max(found, key=lambda existing: (existing.created_at, existing.id), default=None)
