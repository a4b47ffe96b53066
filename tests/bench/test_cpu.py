"""CPU by party (bench/cpu.py → the report): reading /proc/<pid>/stat, the attribution of a database's backends
as they come and go (on a fake /proc and a fake connection), and the CPU-by-party table and ratio it feeds."""

from __future__ import annotations

import asyncio
import math
import os
import time
from pathlib import Path

import pytest

from bench import figures
from bench.cpu import TICKS, BackendCpu, Ledger, PostgresCpu, Stat, parse_stat, read_stat, read_stats, tree_cpu_seconds
from bench.machine import Machine
from bench.report import Results
from bench.scenarios.http_throughput import HttpRun
from bench.scenarios.worker_drains import DrainRun, WorkerDrain


def stat_line(pid: int, utime: int, stime: int, started: int, comm: str = "postgres") -> str:
    # proc(5): pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
    # cutime cstime priority nice num_threads itrealvalue starttime vsize …
    rest = ["S", "1", "1", "1", "0", "-1", "4194368", "7", "0", "0", "0", str(utime), str(stime), "50", "60", "20",
            "0", "1", "0", str(started), "1000", "10"]  # fmt: skip
    return f"{pid} ({comm}) {' '.join(rest)}\n"


def write(proc: Path, pid: int, utime: int, stime: int = 0, started: int = 1000) -> None:
    (proc / str(pid)).mkdir(exist_ok=True)
    (proc / str(pid) / "stat").write_text(stat_line(pid, utime, stime, started))


def end(proc: Path, pid: int) -> None:
    (proc / str(pid) / "stat").unlink()
    (proc / str(pid)).rmdir()


def test_a_stat_line_gives_utime_plus_stime_and_the_start_time_whatever_the_command_name() -> None:
    for comm in ("postgres", "a b) S 1 2 (c", "))"):
        assert parse_stat(stat_line(42, 300, 200, 98765, comm)) == Stat(500 / TICKS, 98765)


def test_this_process_read_from_proc_agrees_with_its_own_clock() -> None:
    deadline = time.process_time() + 0.05
    while time.process_time() < deadline:  # some CPU to read
        pass
    read, own = read_stat(os.getpid()).cpu, time.process_time()
    assert own - 0.05 <= read <= own + 2 / TICKS
    assert tree_cpu_seconds(os.getpid()) >= read
    assert read_stat(os.getpid()).started == read_stat(os.getpid()).started


def test_a_process_that_has_ended_is_left_out_of_a_reading(tmp_path: Path) -> None:
    write(tmp_path, 10, 5)
    assert read_stats([10, 11], tmp_path) == {10: Stat(5 / TICKS, 1000)}


def test_backends_count_from_the_first_reading_or_from_0_when_they_start_later_and_keep_their_last_at_exit() -> None:
    ledger = Ledger()
    ledger.open([1, 2], {1: Stat(10.0, 100), 2: Stat(20.0, 100)})
    ledger.sample([1, 2, 3], {1: Stat(11.0, 100), 2: Stat(20.5, 100), 3: Stat(0.25, 500)})
    # 2 has ended (not listed, not found); 3 still runs, no longer listed as the pids are read.
    ledger.sample([1], {1: Stat(12.0, 100), 3: Stat(0.75, 500)})
    assert ledger.seconds == pytest.approx(2.0 + 0.5 + 0.75)
    assert (ledger.processes, ledger.started, ledger.ended) == (3, 1, 1)
    assert ledger.measured


def test_a_reused_pid_is_a_new_process_counted_only_when_it_serves_the_database() -> None:
    ledger = Ledger()
    ledger.open([7], {7: Stat(3.0, 100)})
    ledger.sample([7], {7: Stat(4.0, 100)})
    ledger.sample([], {7: Stat(50.0, 900)})  # 7 ended; its pid now names another database's backend
    assert ledger.seconds == pytest.approx(1.0)
    ledger.sample([7], {7: Stat(0.5, 950)})  # and then one of ours
    assert ledger.seconds == pytest.approx(1.5)
    assert ledger.processes == 2


def test_backends_listed_but_never_readable_are_not_measured_rather_than_0() -> None:
    ledger = Ledger()
    ledger.open([5, 6], {})
    ledger.sample([5, 6], {})
    assert not ledger.measured
    idle = Ledger()
    idle.open([], {})
    idle.sample([], {})
    assert idle.measured
    assert idle.seconds == 0


class FakeConnection:
    """Lists the pids of each step of `script` in turn (the last again and again), writing and removing their
    /proc files as the step says, as pg_stat_activity would list backends that come and go."""

    def __init__(self, proc: Path, script: list[dict[int, int | None]], background: dict[int, int]) -> None:
        self.proc, self.script, self.background = proc, script, background
        self.calls = 0
        self.done = asyncio.Event()
        self.excluded: list[int] = []

    def get_server_pid(self) -> int:
        return 99

    async def fetch(self, sql: str, database: str, exclude: list[int]) -> list[dict[str, object]]:
        assert database == "bench_db"
        self.excluded = exclude
        step = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        if self.calls >= len(self.script):
            self.done.set()
        for pid, utime in step.items():
            if utime is None:
                if (self.proc / str(pid)).exists():
                    end(self.proc, pid)
            else:
                write(self.proc, pid, utime, started=pid)
        for pid, utime in self.background.items():
            write(self.proc, pid, utime, started=pid)
        listed = [{"pid": pid, "ours": True} for pid, utime in step.items() if utime is not None]
        return listed + [{"pid": pid, "ours": False} for pid in self.background]


async def test_the_sampler_follows_backends_through_a_measurement(tmp_path: Path) -> None:
    script: list[dict[int, int | None]] = [
        {1: 100, 2: 200},  # at the start
        {1: 150, 2: 230, 3: 40},  # 3 connects
        {1: 180, 2: None, 3: 60},  # 2 disconnects: its last reading stands
    ]
    connection = FakeConnection(tmp_path, script, background={500: 1000})
    sampler = BackendCpu(connection, "bench_db", exclude=[42], every=0.001, proc=tmp_path)  # type: ignore[arg-type]
    async with sampler:
        await connection.done.wait()
        connection.background[500] = 1030
    assert connection.excluded == [42, 99]
    assert sampler.result is not None
    assert sampler.result.backends == pytest.approx((80 + 30 + 60) / TICKS)
    assert sampler.result.background == pytest.approx(30 / TICKS)
    assert (sampler.result.processes, sampler.result.started, sampler.result.ended) == (3, 1, 1)


def results() -> Results:
    return Results("test", Machine("now", 2, 1.0, "cpu", "0 0 0", "PostgreSQL 15", "abc"))


def http_run(jobs: int, server: float, postgres: float | None, client: float) -> HttpRun:
    return HttpRun(jobs, 1.0, server, client, 0, PostgresCpu(postgres, 0.01, 4))


def test_the_batched_drains_server_per_postgres_is_the_median_of_its_repetitions_ratios() -> None:
    run = results()
    # 1,000 jobs a repetition: server 40, 60, 50 µs a job; PostgreSQL 100, 100, 200 µs.
    batched = [http_run(1000, 0.04, 0.1, 0.03), http_run(1000, 0.06, 0.1, 0.03), http_run(1000, 0.05, 0.2, 0.03)]
    figures.cpu_by_party(run, {"batched": batched})
    [figure] = [each for each in run.figures if each.label.startswith("server CPU per job, HTTP batched drain")]
    assert figure.value == pytest.approx(50)
    assert figure.baseline == pytest.approx(100)
    assert figure.ratio == pytest.approx(0.4)  # of 0.4, 0.6, 0.25; the medians' ratio would be 0.5
    assert figure.met
    [row] = run.parties
    assert (row.server, row.postgres, row.client) == pytest.approx((50, 100, 30))
    assert row.total == pytest.approx(190)  # the median of 170, 190, 280
    assert row.background == pytest.approx(10)
    table = run.markdown()
    assert "## CPU per job, by party" in table
    assert "| HTTP batched drain: lease 100 + ack 100, 4 workers | 1,000 jobs/s | 50 µs a job | 100 µs a job |" in table
    assert "| 0.400 | 10 µs a job |" in table


def test_without_postgres_readings_the_ratio_is_not_measured_rather_than_0() -> None:
    run = results()
    figures.cpu_by_party(run, {"batched": [http_run(1000, 0.04, None, 0.03)]})
    [figure] = [each for each in run.figures if each.label.startswith("server CPU per job")]
    assert math.isnan(figure.value)
    assert figure.met is None
    assert "| not measured (PostgreSQL's processes not readable in /proc here) |" in run.table()
    assert "| 40 µs a job | not measured | 30 µs a job | not measured | — |" in run.cpu_table()


def test_the_in_process_runner_is_the_server_and_has_no_client() -> None:
    run = results()
    drain = DrainRun("in-process", None, 1000, 0.5, 0.08, 0.002, 50_000_000, "0 0 0", postgres=PostgresCpu(0.1, 0.0))
    sdk = DrainRun("Python SDK", None, 1000, 0.5, 0.07, 0.06, 50_000_000, "0 0 0", postgres=PostgresCpu(0.1, 0.0))
    figures.workers(run, {WorkerDrain("in-process"): [drain], WorkerDrain("Python SDK"): [sdk]}, [], {})
    inside, python = run.parties
    assert (inside.server, inside.client, inside.total) == pytest.approx((80, None, 180))
    assert (python.server, python.client, python.total) == pytest.approx((60, 70, 230))
    assert "| — (none: the tasks run in the server) |" in run.cpu_table()
