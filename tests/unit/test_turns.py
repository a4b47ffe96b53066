"""The order a lease takes jobs in across tenants (README.md, "Fairness"), as a property of `in_turns`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st
from queueflow.core.turns import in_turns
from queueflow.core.types import BackoffPolicy, Job, JobStatus

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def job(n: int, tenant: str, priority: int = 0) -> Job:
    return Job(
        id=f"job_{n:04}",
        tenant_id=tenant,
        queue_name="default",
        task_name="x",
        payload={},
        status=JobStatus.PENDING,
        priority=priority,
        scheduled_at=NOW + timedelta(seconds=n),
        max_retries=0,
        backoff=BackoffPolicy(),
        timeout_seconds=None,
        metadata={},
        created_at=NOW,
    )


def test_round_by_round_each_tenant_in_claim_order_starting_after_the_given_tenant() -> None:
    jobs = [job(1, "b"), job(2, "a"), job(3, "c"), job(4, "a", priority=9), job(5, "b")]
    assert [j.id for j in in_turns(jobs, None)] == ["job_0004", "job_0001", "job_0003", "job_0002", "job_0005"]
    assert [j.tenant_id for j in in_turns(jobs, "a")] == ["b", "c", "a", "b", "a"]
    assert [j.tenant_id for j in in_turns(jobs, "c")] == ["a", "b", "c", "a", "b"]
    assert [j.tenant_id for j in in_turns(jobs, "bb")] == ["c", "a", "b", "a", "b"]
    assert in_turns([], "a") == []


@given(
    st.lists(st.sampled_from(["a", "b", "c", "d", "é", "Z"]), min_size=1, max_size=60),
    st.none() | st.sampled_from(["a", "c", "zz", "", "é"]),
)
def test_any_k_consecutive_jobs_of_the_full_rounds_hold_k_tenants(tenants: list[str], after: str | None) -> None:
    ordered = in_turns([job(n, tenant) for n, tenant in enumerate(tenants)], after)
    assert sorted(j.id for j in ordered) == sorted(f"job_{n:04}" for n in range(len(tenants)))
    k = len(set(tenants))
    rounds = min(tenants.count(tenant) for tenant in set(tenants))  # rounds in which every tenant still has a job
    full = ordered[: k * rounds]
    for start in range(len(full) - k + 1):
        assert len({j.tenant_id for j in full[start : start + k]}) == k
    # Within a tenant, claim order.
    for tenant in set(tenants):
        mine = [j.scheduled_at for j in ordered if j.tenant_id == tenant]
        assert mine == sorted(mine)
