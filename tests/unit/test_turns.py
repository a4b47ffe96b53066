"""Properties of `in_turns`: the order a lease takes jobs in across tenants and concurrency keys (README, Fairness)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st
from msgspec.structs import replace
from queueflow.core.turns import in_turns, last_keys
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


def keyed(n: int, key: str | None, tenant: str = "a", queue: str = "default") -> Job:
    return replace(job(n, tenant), concurrency_key=key, queue_name=queue)


def test_the_keys_of_a_key_limited_queue_take_turns_after_the_key_served_last() -> None:
    jobs = [keyed(1, "k1"), keyed(2, "k1"), keyed(3, None), keyed(4, "k2"), keyed(5, "k3"), keyed(6, "k1")]
    turns = {("a", "default"): "k1"}
    # The keyed jobs' places (all but the third) are refilled in key turns from k2 on; the keyless job keeps its own.
    assert [j.id for j in in_turns(jobs, None, turns)] == [
        "job_0004", "job_0005", "job_0003", "job_0001", "job_0002", "job_0006",
    ]  # fmt: skip
    assert [j.id for j in in_turns(jobs, None, {("a", "default"): None})] == [
        "job_0001", "job_0004", "job_0003", "job_0005", "job_0002", "job_0006",
    ]  # fmt: skip
    # Without a key limit (no entry), claim order; another tenant's or queue's keys are not this queue's.
    assert [j.id for j in in_turns(jobs, None)] == [f"job_000{n}" for n in range(1, 7)]
    assert [j.id for j in in_turns(jobs, None, {("b", "default"): None})] == [f"job_000{n}" for n in range(1, 7)]
    assert last_keys(in_turns(jobs, None, turns), turns) == {("a", "default"): "k1"}
    assert last_keys([keyed(7, None)], turns) == {}


def test_a_key_limited_queue_keeps_its_places_among_the_tenants_other_queues() -> None:
    jobs = [keyed(1, "k1"), keyed(2, None, queue="other"), keyed(3, "k1"), keyed(4, "k2")]
    ordered = in_turns(jobs, None, {("a", "default"): None})
    assert [(j.queue_name, j.concurrency_key) for j in ordered] == [
        ("default", "k1"), ("other", None), ("default", "k2"), ("default", "k1"),
    ]  # fmt: skip


@given(
    st.lists(st.sampled_from(["k1", "k2", "k3", "é", "Z", None]), min_size=1, max_size=60),
    st.none() | st.sampled_from(["k1", "k2", "zz", "A"]),
)
def test_any_k_consecutive_keyed_jobs_of_the_full_rounds_hold_k_keys(keys: list[str | None], after: str | None) -> None:
    jobs = [keyed(n, key) for n, key in enumerate(keys)]
    ordered = in_turns(jobs, None, {("a", "default"): after})
    assert sorted(j.id for j in ordered) == sorted(j.id for j in jobs)
    # Jobs without a key keep their places in claim order.
    assert [n for n, j in enumerate(ordered) if j.concurrency_key is None] == [
        n for n, key in enumerate(keys) if key is None
    ]
    present = {key for key in keys if key is not None}
    turned = [j.concurrency_key for j in ordered if j.concurrency_key is not None]
    if not present:
        return
    k = len(present)
    rounds = min(keys.count(key) for key in present)
    full = turned[: k * rounds]
    for start in range(len(full) - k + 1):
        assert len(set(full[start : start + k])) == k
    # Each round starts after `after`, in code-point order.
    first_round = turned[:k]
    expected = sorted(present)
    if after is not None:
        expected = [key for key in expected if key > after] + [key for key in expected if key <= after]
    assert first_round == expected
    # Within a key, claim order.
    for key in present:
        mine = [j.scheduled_at for j in ordered if j.concurrency_key == key]
        assert mine == sorted(mine)
