"""The ledger: what really happened, recorded outside QueueFlow, in one SQLite file every process writes to.

Task code (in SDK workers and in servers' in-process runners) records each execution as it starts and each
outcome the server acknowledged; the driver records what it enqueued and when it injected each fault. The
invariants are checked by comparing this file with the jobs table. SQLite in WAL mode with autocommit: a row is
durable once its INSERT returns, so a SIGKILLed process loses nothing it recorded.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

ENV = "QUEUEFLOW_CHAOS_LEDGER"

SCHEMA = """
CREATE TABLE IF NOT EXISTS executions (job_id TEXT, delivery INT, nonce TEXT, pid INT, at REAL);
CREATE TABLE IF NOT EXISTS returns (job_id TEXT, delivery INT, nonce TEXT, pid INT, at REAL);
CREATE TABLE IF NOT EXISTS outcomes (job_id TEXT, kind TEXT, nonce TEXT, acked INT, pid INT, at REAL);
CREATE TABLE IF NOT EXISTS enqueued (job_id TEXT, kind TEXT, at REAL);
CREATE TABLE IF NOT EXISTS faults (kind TEXT, pid INT, at REAL);
CREATE INDEX IF NOT EXISTS outcomes_at ON outcomes (at);
"""


class Ledger:
    def __init__(self, path: str | Path) -> None:
        # Many processes write at once: wait for the file lock rather than fail.
        self.db = sqlite3.connect(str(path), timeout=60, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)

    @classmethod
    def from_env(cls) -> Ledger:
        return cls(os.environ[ENV])

    def executed(self, job_id: str, delivery: int, nonce: str) -> None:
        self.db.execute("INSERT INTO executions VALUES (?, ?, ?, ?, ?)", (job_id, delivery, nonce, os.getpid(), now()))

    def returned(self, job_id: str, delivery: int, nonce: str) -> None:
        """An execution's task returned (or raised): for the jobs of sequences, whose executions must not overlap."""
        self.db.execute("INSERT INTO returns VALUES (?, ?, ?, ?, ?)", (job_id, delivery, nonce, os.getpid(), now()))

    def outcome(self, job_id: str, kind: str, nonce: str | None, acked: bool) -> None:
        row = (job_id, kind, nonce, int(acked), os.getpid(), now())
        self.db.execute("INSERT INTO outcomes VALUES (?, ?, ?, ?, ?, ?)", row)

    def enqueued(self, job_ids: list[str], kind: str) -> None:
        at = now()
        self.db.executemany("INSERT INTO enqueued VALUES (?, ?, ?)", [(job_id, kind, at) for job_id in job_ids])

    def fault(self, kind: str, pid: int | None = None) -> float:
        """A fault injected now; `pid`, the process it killed (whose leases are then stranded)."""
        at = now()
        self.db.execute("INSERT INTO faults VALUES (?, ?, ?)", (kind, pid, at))
        return at

    def load_journal(self, path: Path) -> None:
        """Rows a TypeScript worker appended as JSON lines (Node 20 has no SQLite); a line a SIGKILL cut short
        was never a complete record and is skipped."""
        if not path.exists():
            return
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if row["table"] in ("executions", "returns"):
                values = (row["job_id"], row["delivery"], row["nonce"], row["pid"], row["at"])
                self.db.execute(f"INSERT INTO {row['table']} VALUES (?, ?, ?, ?, ?)", values)
            else:
                values = (row["job_id"], row["kind"], row["nonce"], row["acked"], row["pid"], row["at"])
                self.db.execute("INSERT INTO outcomes VALUES (?, ?, ?, ?, ?, ?)", values)

    def rows(self, sql: str, *args: object) -> list[tuple[object, ...]]:
        return self.db.execute(sql, args).fetchall()

    def close(self) -> None:
        self.db.close()


def now() -> float:
    """Wall-clock time, comparable across the processes of one machine."""
    return time.time()
