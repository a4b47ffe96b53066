"""Fair leasing across tenants and concurrency keys, as an order (README.md, "Fairness"). No I/O here: both stores
claim in this order."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from itertools import zip_longest

from queueflow.core.types import Job

KeyTurns = Mapping[tuple[str, str], str | None]
"""The (tenant, queue) pairs whose concurrency keys take turns (those under a key_concurrency_limit), each with the
key a lease served last there, None if none has yet."""


def in_turns(jobs: Iterable[Job], after_tenant: str | None, key_turns: KeyTurns | None = None) -> list[Job]:
    """`jobs` in the order a lease takes them (README.md, "Fairness"): the tenants in turn, round by round.

    Round r holds each tenant's r-th job in claim order (priority desc, scheduled_at, created_at, id, across the
    queues leased); within a round the tenants follow each other in code-point order, starting with the first one
    after `after_tenant` (the tenant the previous lease served last) and wrapping around. So with k tenants, any k
    consecutive single-job leases serve each of them once, whatever their backlogs.

    Within a (tenant, queue) of `key_turns`, the concurrency keys take turns the same way (`keys_in_turn`): its jobs
    with a key keep the places they have in the tenant's claim order and fill them in key turns; a job without a
    key, which no key limit holds, keeps its own place.
    """
    by_tenant: dict[str, list[Job]] = {}
    for job in sorted(jobs, key=claim_order):
        by_tenant.setdefault(job.tenant_id, []).append(job)
    if key_turns:
        for tenant, its in by_tenant.items():
            by_tenant[tenant] = _with_keys_in_turn(its, key_turns)
    tenants = rotated(sorted(by_tenant), after_tenant)
    return [job for turn in zip_longest(*(by_tenant[tenant] for tenant in tenants)) for job in turn if job is not None]


def claim_order(job: Job) -> tuple[int, object, object, str]:
    return (-job.priority, job.scheduled_at, job.created_at, job.id)


def keys_in_turn(jobs: Sequence[Job], after_key: str | None) -> list[Job]:
    """One (tenant, queue)'s jobs with a concurrency key, in claim order, round by round across their keys, the
    keys in code-point order starting after `after_key`."""
    by_key: dict[str, list[Job]] = {}
    for job in jobs:
        by_key.setdefault(job.concurrency_key or "", []).append(job)
    keys = rotated(sorted(by_key), after_key)
    return [job for turn in zip_longest(*(by_key[key] for key in keys)) for job in turn if job is not None]


def last_keys(ordered: Iterable[Job], key_turns: KeyTurns) -> dict[tuple[str, str], str]:
    """The key each (tenant, queue) of `key_turns` served last in `ordered` (a lease, in the order it took its
    jobs): where the next lease's key turn starts."""
    return {
        (job.tenant_id, job.queue_name): job.concurrency_key
        for job in ordered
        if job.concurrency_key is not None and (job.tenant_id, job.queue_name) in key_turns
    }


def rotated(names: list[str], after: str | None) -> list[str]:
    """Sorted `names`, starting with the first one after `after` and wrapping around."""
    if after is None:
        return names
    first = bisect_right(names, after)
    return names[first:] + names[:first]


def _with_keys_in_turn(jobs: list[Job], key_turns: KeyTurns) -> list[Job]:
    """One tenant's `jobs`, in claim order, with the places of each key-limited queue's keyed jobs refilled in key
    turns."""
    places: dict[str, list[int]] = {}
    for place, job in enumerate(jobs):
        if job.concurrency_key is not None and (job.tenant_id, job.queue_name) in key_turns:
            places.setdefault(job.queue_name, []).append(place)
    if not places:
        return jobs
    refilled = list(jobs)
    for queue, its in places.items():
        turned = keys_in_turn([jobs[place] for place in its], key_turns[jobs[its[0]].tenant_id, queue])
        for place, job in zip(its, turned, strict=True):
            refilled[place] = job
    return refilled
