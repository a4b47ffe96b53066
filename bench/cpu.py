"""CPU time by party, from /proc: a process and the processes it forked (a server, a worker), the machine's cores,
and the PostgreSQL backends serving one database while they come and go (`BackendCpu`).

A backend's CPU is read from its /proc/<pid>/stat by the pid `pg_stat_activity` lists for the database, so this
works only where PostgreSQL runs on the same host and pid namespace as the bench (as `make bench` runs it); where
none of the listed pids can be read, the figure is "not measured", never 0.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import asyncpg

PROC = Path("/proc")
TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE_EVERY = 0.1
"""Seconds between two readings of a database's backends during a measurement: a backend that ends between two
loses only its last tenth of a second, and the sampling costs the harness about 2 ms of CPU a second."""


@dataclass(frozen=True, slots=True)
class Stat:
    """What a process's /proc/<pid>/stat says that matters here."""

    cpu: float
    """utime + stime, seconds: every thread's, not its children's."""
    started: int
    """Clock ticks after boot at which it started: with the pid, it names a process (a pid is reused)."""


def parse_stat(text: str) -> Stat:
    # The command name (field 2) is in parentheses and may hold spaces and parentheses itself: the fields are
    # what follows its last ")". Field 3 (state) is index 0 of that rest; utime, stime and starttime are fields
    # 14, 15 and 22 of proc(5).
    fields = text.rsplit(")", 1)[1].split()
    return Stat((int(fields[11]) + int(fields[12])) / TICKS, int(fields[19]))


def read_stat(pid: int, proc: Path = PROC) -> Stat:
    """OSError when the process has ended (or is not visible here)."""
    # os.read rather than Path.read_text: a sample reads a dozen of these, and this takes half the time (9 µs).
    descriptor = os.open(proc / str(pid) / "stat", os.O_RDONLY)
    try:
        return parse_stat(os.read(descriptor, 4096).decode(errors="replace"))
    finally:
        os.close(descriptor)


def read_stats(pids: Iterable[int], proc: Path = PROC) -> dict[int, Stat]:
    """The processes of `pids` still running, by pid."""
    found = {}
    for pid in pids:
        try:
            found[pid] = read_stat(pid, proc)
        except (OSError, IndexError, ValueError):  # it ended (its file gone, or read half-written at its exit)
            continue
    return found


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time process `pid` has used so far (every thread)."""
    return read_stat(pid).cpu


def machine_busy_seconds() -> float:
    """CPU seconds all cores have spent busy since boot (/proc/stat's first line: everything but idle and iowait),
    whoever ran: a second server process can only go faster if the cores have time left over for it."""
    fields = [int(value) for value in (PROC / "stat").read_text().split("\n", 1)[0].split()[1:]]
    idle, iowait = fields[3], fields[4]
    return (sum(fields[:8]) - idle - iowait) / TICKS


def children(pid: int) -> list[int]:
    """The processes `pid` forked that are still running: each thread's `children` file (proc(5),
    CONFIG_PROC_CHILDREN)."""
    found = []
    for listed in (PROC / str(pid) / "task").glob("*/children"):
        try:
            found += [int(child) for child in listed.read_text().split()]
        except OSError:  # the thread exited while we looked
            continue
    return found


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid` and of its running descendants. A child that has exited is counted in its
    parent's cutime only once reaped, so this is exact for a tree whose processes all run through the phase timed
    (a pre-forked server's)."""
    return process_cpu_seconds(pid) + sum(tree_cpu_seconds(child) for child in children(pid))


class Ledger:
    """The CPU a changing set of processes spent between the first reading and the last.

    A process read at `open` counts from that reading; one first read later started after it (the set is listed
    before it is read, and a backend belongs to one database for life), so it counts from 0. A process that ends
    keeps its last reading: what it spent after that is missed, which the sampling interval bounds. Processes are
    known by pid and start time, so a pid reused by a newer process is a new process."""

    def __init__(self) -> None:
        self._first: dict[tuple[int, int], float] = {}
        self._last: dict[tuple[int, int], float] = {}
        self._running: set[tuple[int, int]] = set()
        self._later: set[tuple[int, int]] = set()
        self._listed = False

    def open(self, listed: Collection[int], readings: Mapping[int, Stat]) -> None:
        self._read(listed, readings, before=True)

    def sample(self, listed: Collection[int], readings: Mapping[int, Stat]) -> None:
        """`readings`: of the pids listed now and of every one read before (to follow one no longer listed)."""
        self._read(listed, readings, before=False)

    def _read(self, listed: Collection[int], readings: Mapping[int, Stat], *, before: bool) -> None:
        self._listed = self._listed or bool(listed)
        running = set()
        for pid, stat in readings.items():
            key = (pid, stat.started)
            if key not in self._first:
                if pid not in listed:  # a known pid taken by another process since: not ours
                    continue
                self._first[key] = stat.cpu if before else 0.0
                if not before:
                    self._later.add(key)
            self._last[key] = stat.cpu
            running.add(key)
        self._running = running

    @property
    def pids(self) -> set[int]:
        return {pid for pid, _ in self._first}

    @property
    def measured(self) -> bool:
        """Whether any process listed could be read at all (PostgreSQL in another pid namespace: none is)."""
        return bool(self._first) or not self._listed

    @property
    def seconds(self) -> float:
        return sum(self._last[key] - first for key, first in self._first.items())

    @property
    def processes(self) -> int:
        return len(self._first)

    @property
    def started(self) -> int:
        """Processes first read after `open`."""
        return len(self._later)

    @property
    def ended(self) -> int:
        """Processes read once that the last reading did not find."""
        return len(self._first.keys() - self._running)


@dataclass(frozen=True, slots=True)
class PostgresCpu:
    """PostgreSQL's CPU over one measurement."""

    backends: float | None
    """CPU seconds of the backends serving the database (None: their processes could not be read)."""
    background: float | None
    """CPU seconds of the cluster's background processes (WAL writer, checkpointer, background writer, launchers):
    shared by every database, so not the measurement's alone, and never added to it."""
    processes: int = 0
    started: int = 0
    ended: int = 0

    def describe(self) -> str:
        return (
            f"{self.processes} backends read ({self.started} started during it, {self.ended} ended during it)"
            if self.backends is not None
            else "PostgreSQL's processes not readable in /proc here"
        )


_LISTED = """
SELECT pid, datname IS NOT NULL AS ours FROM pg_stat_activity
 WHERE (datname = $1 OR (datname IS NULL AND backend_type <> 'client backend')) AND pid <> ALL($2::int[])
"""


class BackendCpu:
    """`async with` it around a measurement: the CPU of the backends serving `database` (by `pg_stat_activity`'s
    `datname`), listed and read from /proc every SAMPLE_EVERY seconds on `connection` (a connection of its own,
    opened before the measurement, so it is not a new session in it), then its `result`. The harness's own
    connections (`exclude`, and this one) are not counted: they poll and seed, they are not the load."""

    def __init__(
        self,
        connection: asyncpg.Connection,
        database: str,
        exclude: Collection[int] = (),
        every: float = SAMPLE_EVERY,
        proc: Path = PROC,
    ) -> None:
        self._connection, self._database, self._every, self._proc = connection, database, every, proc
        self._exclude = [*exclude, connection.get_server_pid()]
        self._backends, self._background = Ledger(), Ledger()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.result: PostgresCpu | None = None

    async def __aenter__(self) -> BackendCpu:
        ours, others = await self._list()
        self._backends.open(ours, read_stats(ours, self._proc))
        self._background.open(others, read_stats(others, self._proc))
        self._task = asyncio.create_task(self._sample_until_stopped())
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # Stopped by an event, not cancelled: a query cancelled mid-flight makes asyncpg send a cancel request.
        self._stop.set()
        assert self._task is not None
        await self._task
        if kind is None:
            await self._sample(last=True)
            self.result = PostgresCpu(
                self._backends.seconds if self._backends.measured else None,
                self._background.seconds if self._background.measured else None,
                self._backends.processes,
                self._backends.started,
                self._backends.ended,
            )

    async def _sample_until_stopped(self) -> None:
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._stop.wait(), self._every)
            except TimeoutError:
                await self._sample()

    async def _sample(self, *, last: bool = False) -> None:
        # The background processes live as long as the cluster: read at the start and the end only.
        ours, others = await self._list()
        self._backends.sample(ours, read_stats({*ours, *self._backends.pids}, self._proc))
        if last:
            self._background.sample(others, read_stats({*others, *self._background.pids}, self._proc))

    async def _list(self) -> tuple[list[int], list[int]]:
        rows = await self._connection.fetch(_LISTED, self._database, self._exclude)
        return [row["pid"] for row in rows if row["ours"]], [row["pid"] for row in rows if not row["ours"]]
