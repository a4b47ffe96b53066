"""How big each scenario is: `full` for `make bench` (≥ 3 repetitions, under 20 minutes on 2 cores), `smoke` for
`make bench-smoke` and the test suite (every code path once, tiny, no speed asserted)."""

from __future__ import annotations

from dataclasses import dataclass

from bench.scenarios.workflows import Shape


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    repetitions: int
    # pgbench transactions per client (4 clients): claim 1 + complete 1, claim 100 + complete 100, 100-row INSERT.
    raw_single_tx: int
    raw_batched_tx: int
    raw_insert_tx: int
    warm_up_jobs: int
    """Jobs drained through the server before any HTTP figure is taken (a tenth of them one at a time)."""
    enqueue_rows: int
    """HTTP batch enqueue: rows per repetition, 1,000 a request."""
    single_drain_jobs: int
    batched_drain_jobs: int
    wake_samples: int
    due_samples: int
    """Delayed jobs, and again retried jobs, each leased by a parked long-poll."""
    lease_samples: int
    finished_rows: int
    """Finished rows in the table for the lease-latency comparison."""
    peers: bool
    pgqueuer_jobs: int
    procrastinate_jobs: int
    per_request_requests: int = 4_000
    """Requests per route in each round of the per-request CPU scenario (`bench.scenarios.per_request`)."""
    prefork_requests: int = 4_000
    """Single-job enqueues per side and repetition of `--workers 2` ÷ `--workers 1` (`bench.scenarios.prefork`)."""
    worker_jobs: int = 0
    """No-op jobs each worker drain (in-process, Python SDK, TypeScript SDK; default settings, then concurrency 10
    and 100) takes from a backlog."""
    worker_repetitions: int = 0
    """Repetitions of the worker drains and of PgQueuer's drain, their baseline (0: `repetitions`). A drain of
    20,000 no-op jobs lasts about a second, so one repetition moves with the machine's load: two drains side by side
    differ by up to ±20% (sd ≈ 9%, measured in alternating A/B runs of concurrency 10 and 100), more than the
    differences the figures look for (the medians of c100 ÷ c10 came out 1.00–1.06 over 6–16 pairs). The median of
    nine pairs has a standard error of about 4%; of five, 5%."""
    worker_long_jobs: int = 0
    """A longer drain per SDK worker, whose peak RSS shows whether memory stays flat, and the TypeScript worker's
    live heap after a full GC at its end whether anything is kept per job (0: none)."""
    debounce_rounds: int = 100
    """Enqueues per key in the debounce burst (on `DEBOUNCE_KEYS` keys: 100 × 100 = 10,000)."""
    debounce_seconds: float = 3.0
    """The burst's `debounce_seconds`: longer than any key's gap between two of its enqueues."""
    sequence_jobs: int = 0
    """Jobs of the one sequence 8 workers drain (`bench.scenarios.sequence_drain`; 0: not run)."""
    expiring_jobs: int = 0
    """Jobs with a deadline enqueued while slower workers drain them (`bench.scenarios.expiring`; 0: not run)."""
    expiring_batches: int = 20
    """The batches they are enqueued in, `expiring_batch_every` seconds apart."""
    expiring_batch_every: float = 0.25
    expiring_deadlines: tuple[float, float] = (1.0, 8.0)
    """Each job's `expires_in_seconds`, drawn uniformly from this range."""
    sequence_claim_jobs: int = 100_000
    """Pending jobs a queue of each layout of the sequence claim's figure (`sequence_claim_cost`: sequences of 100)."""
    sequence_claim_pairs: int = 60
    """Alternating claims of each layout (plain, plain without the condition, spread, runs); the first sixth warm up."""
    session_settle: float = 1.2
    """Seconds to let backends flush their statistics before each session count."""
    server_args: tuple[str, ...] = ()
    """Extra `queueflow serve` flags. The full profile runs the defaults, as users do."""
    small_workflows: int = 0
    """Workflows of 3 chained no-op steps created at once (0: no workflow scenario at all)."""
    fanout_widths: tuple[int, ...] = ()
    """Fan-outs 1 → W → 1 (W + 2 steps, so 9,998 is the widest a 10,000-step workflow holds); the
    narrowest is the baseline of the server's CPU per step."""
    chain_lengths: tuple[int, ...] = ()
    child_workflows: int = 0
    """Child workflows of one parent, each a chain (issue 44's figure; 0: not run)."""
    dbos_max_width: int = 0
    """The widest fan-out DBOS runs (it takes about 10 ms a child on 2 cores: 10,000 would add minutes)."""
    workflow_bound: float = 300.0
    """Seconds one run of a workflow shape may take before it is stopped and reported "not run" (on a quiet machine
    the longest, DBOS's 1,000-wide fan-out, takes about 10 s; on one shared by several busy processes, 10 times
    that)."""
    delayed_samples: int = 0
    """Delayed jobs the in-process runner takes, for its lateness after their due time."""
    growth_steps: int = 0
    """Steps added in one call, against a workflow of as many created (0: none of issue 31's scenarios)."""
    growth_pairs: int = 0
    """A/B pairs of each growth comparison (adding ÷ creating; adding to a large workflow ÷ to a small one)."""
    growth_large: int = 0
    """Steps of the large workflow that 10 steps are added to."""
    signal_samples: int = 0
    """Signals sent, one at a time, each to a workflow `a → wait(signal) → b` (to `b` starting)."""
    sleep_samples: int = 0
    """Workflows `wait(seconds=1) → b` created at once (the wait's end after its due time)."""
    event_width: int = 0
    """Job triggers one event matches, against a batch of as many jobs (0: none of issue 44's scenarios)."""
    event_pairs: int = 0
    """A/B pairs of that comparison."""
    event_triggers: int = 0
    """The tenant's triggers when events that match 2 of them are sent by 8 clients (÷ single enqueues)."""
    event_requests: int = 0
    """Events sent (and single jobs enqueued) for one pair of those rates."""
    event_rate_pairs: int = 0
    """Pairs of those rates (events/s, enqueues/s), measured one beside the other."""
    deadline_samples: int = 0
    """Workflows with a 1 s deadline created at once, for how late after it they end (0: not run)."""
    push_jobs: int = 0
    """No-op jobs of each drain of the push scenario (`bench.scenarios.push`): the Python SDK worker's, the push
    drain at concurrency 50, and the push drain beside a hung endpoint (0: not run)."""
    push_repetitions: int = 0
    """Repetitions of those three drains, each one's ratios paired within it (0: `repetitions`)."""
    push_latency_samples: int = 0
    """Jobs enqueued one at a time to an idle endpoint, for enqueue → delivery received."""
    push_two_servers_jobs: int = 0
    """Jobs two servers push to one endpoint of concurrency 5, the receiver counting the requests in flight."""

    @property
    def workflow_shapes(self) -> list[Shape]:
        return [
            *([Shape("workflows", self.small_workflows)] if self.small_workflows else []),
            *(Shape("fan-out", width) for width in self.fanout_widths),
            *(Shape("chain", length) for length in self.chain_lengths),
            *([Shape("children", self.child_workflows)] if self.child_workflows else []),
        ]

    @property
    def drain_repetitions(self) -> int:
        """How many times the worker drains and PgQueuer's drain run."""
        return self.worker_repetitions or self.repetitions


FULL = Profile(
    name="full",
    repetitions=3,
    raw_single_tx=1500,
    raw_batched_tx=50,
    raw_insert_tx=250,
    warm_up_jobs=4_000,
    enqueue_rows=30_000,
    single_drain_jobs=2_000,
    batched_drain_jobs=20_000,
    wake_samples=300,
    due_samples=300,
    lease_samples=500,
    finished_rows=2_000_000,
    peers=True,
    pgqueuer_jobs=30_000,
    procrastinate_jobs=1_000,
    worker_jobs=20_000,
    worker_repetitions=9,
    worker_long_jobs=200_000,
    sequence_jobs=10_000,
    expiring_jobs=10_000,
    small_workflows=1_000,
    # The widest fan-out is 9,998 wide: with its root and its join, a workflow of 10,000 steps (the limit).
    fanout_widths=(10, 100, 1_000, 9_998),
    chain_lengths=(300, 3_000),
    child_workflows=100,
    dbos_max_width=1_000,
    delayed_samples=200,
    growth_steps=1_000,
    growth_pairs=9,
    growth_large=5_000,
    signal_samples=200,
    sleep_samples=200,
    event_width=1_000,
    event_pairs=9,
    event_triggers=10_000,
    event_requests=2_000,
    event_rate_pairs=7,
    deadline_samples=200,
    push_jobs=20_000,
    push_repetitions=5,
    push_latency_samples=200,
    push_two_servers_jobs=2_000,
)

SMOKE = Profile(
    name="smoke",
    repetitions=1,
    raw_single_tx=10,
    raw_batched_tx=2,
    raw_insert_tx=2,
    warm_up_jobs=200,
    enqueue_rows=2_000,
    single_drain_jobs=40,
    batched_drain_jobs=400,
    wake_samples=5,
    due_samples=4,
    lease_samples=20,
    finished_rows=5_000,
    peers=False,
    pgqueuer_jobs=0,
    procrastinate_jobs=0,
    per_request_requests=100,
    prefork_requests=80,
    worker_jobs=200,
    worker_long_jobs=400,
    # A due-later job waits for the 5 s safety poll today; the smoke proves the path works, not how fast.
    session_settle=0.2,
    debounce_rounds=3,
    debounce_seconds=0.5,
    sequence_jobs=20,
    expiring_jobs=200,
    expiring_batches=2,
    expiring_batch_every=0.05,
    expiring_deadlines=(0.1, 0.3),
    sequence_claim_jobs=10_000,
    sequence_claim_pairs=6,
    server_args=("--safety-poll", "1"),
    small_workflows=5,
    fanout_widths=(5, 10),
    chain_lengths=(5,),
    child_workflows=3,
    dbos_max_width=10,
    workflow_bound=60.0,
    delayed_samples=5,
    growth_steps=20,
    growth_pairs=1,
    growth_large=50,
    signal_samples=3,
    sleep_samples=3,
    event_width=20,
    event_pairs=1,
    event_triggers=40,
    event_requests=16,
    event_rate_pairs=1,
    deadline_samples=3,
    push_jobs=200,
    push_repetitions=1,
    push_latency_samples=5,
    push_two_servers_jobs=40,
)

PROFILES = {profile.name: profile for profile in (FULL, SMOKE)}
