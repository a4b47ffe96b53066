"""Fair leasing across tenants, as an order (README.md, "Fairness"). No I/O here: both stores claim in this order."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from itertools import zip_longest

from queueflow.core.types import Job


def in_turns(jobs: Iterable[Job], after_tenant: str | None) -> list[Job]:
    """`jobs` in the order a lease takes them (README.md, "Fairness"): the tenants in turn, round by round.

    Round r holds each tenant's r-th job in claim order (priority desc, scheduled_at, created_at, id, across the
    queues leased); within a round the tenants follow each other in code-point order, starting with the first one
    after `after_tenant` (the tenant the previous lease served last) and wrapping around. So with k tenants, any k
    consecutive single-job leases serve each of them once, whatever their backlogs.
    """
    by_tenant: dict[str, list[Job]] = {}
    for job in sorted(jobs, key=lambda job: (-job.priority, job.scheduled_at, job.created_at, job.id)):
        by_tenant.setdefault(job.tenant_id, []).append(job)
    tenants = sorted(by_tenant)
    if after_tenant is not None:
        first = bisect_right(tenants, after_tenant)
        tenants = tenants[first:] + tenants[:first]
    return [job for turn in zip_longest(*(by_tenant[tenant] for tenant in tenants)) for job in turn if job is not None]
