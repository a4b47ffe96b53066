"""A throwaway PostgreSQL cluster for an endurance run: initdb in a temporary folder with the machine's binaries, on a
free port of 127.0.0.1, trust authentication, user `postgres`; stopped and removed when the run ends, however it ends.

It keeps PostgreSQL's defaults — autovacuum above all. The machine's shared server runs with autovacuum off (the CI
image's setting), which production never does: nothing then ANALYZEs or vacuums, so a recovery after a held horizon
never recovers and a plan cached on an empty table is never made again, and the figures measure that instead. A
cluster of the run's own may also be restarted for real (`restart`), which a shared server may not.

initdb and pg_ctl refuse to run as root: as root they run as the `postgres` user, in a folder it owns.

The chaos suite's `pg_restart` scenario (tests/chaos/scenario.py) restarts a cluster made here too, with settings of
its own (`own_cluster`'s `settings`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from bench.server import free_port

VERSION = 15
SETTINGS = ("autovacuum", "shared_buffers", "synchronous_commit", "fsync", "max_connections")
"""What a report says of the server it ran on: the settings that change what the harness measures."""

_CONFIG = """
# bench/endurance/cluster.py: PostgreSQL's defaults but where it listens.
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{data}'
"""
"""Appended to initdb's postgresql.conf. max_connections stays at its default of 100: the harness and one system at
a time (QueueFlow's server pool, or a peer's connections, the faults' and the probe's) use well under it, as they
did on the shared server, whose 100 the test suite shares too. No library is preloaded: pgstattuple, which the probe
reads, is an extension each database creates (`Probe.open`)."""


def bindir() -> Path:
    """Where the machine's PostgreSQL 15 programs are: `pg_config --bindir` when it names them, else Debian's path."""
    candidates = []
    if pg_config := shutil.which("pg_config"):
        found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False).stdout.strip()
        candidates.append(Path(found))
    candidates.append(Path(f"/usr/lib/postgresql/{VERSION}/bin"))
    for folder in candidates:
        if (folder / "initdb").exists() and (folder / "pg_ctl").exists():
            return folder
    raise RuntimeError(
        f"no initdb and pg_ctl in {', '.join(map(str, candidates))}: install postgresql-{VERSION}, "
        "or run against a server of your own (--shared-server, QUEUEFLOW_BENCH_DATABASE_URL)"
    )


@dataclass(frozen=True, slots=True)
class Cluster:
    folder: Path
    """The temporary folder: the data directory, and the server's log beside it."""
    port: int
    bin: Path

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def log(self) -> Path:
        return self.folder / "server.log"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, program: str, *argv: str) -> None:
        # runuser rather than sudo: it is in util-linux (always there) and asks nothing of PAM or sudoers.
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        done = subprocess.run(
            [*prefix, str(self.bin / program), *argv], capture_output=True, text=True, cwd=self.folder, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(argv)} failed ({done.returncode}): {done.stdout}{done.stderr}")

    def _pg_ctl(self, *argv: str) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", *argv)

    def init(self, settings: Mapping[str, str]) -> None:
        # --no-sync: a cluster thrown away after the run need not survive a crash of the machine during initdb.
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
        with (self.data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write(_CONFIG.format(port=self.port, data=self.data))
            conf.writelines(f"{name} = {value}\n" for name, value in settings.items())

    def start(self) -> None:
        self._pg_ctl("start")

    def restart(self) -> None:
        """`pg_ctl restart -m fast`: every session is ended (its transaction rolled back), the server shut down
        cleanly and started again; returns once it accepts connections."""
        self._pg_ctl("restart", "-m", "fast")

    def stop(self) -> None:
        try:
            self._pg_ctl("stop", "-m", "fast")
        except RuntimeError:
            self._pg_ctl("stop", "-m", "immediate")


@contextmanager
def own_cluster(keep_log: Path | None = None, settings: Mapping[str, str] | None = None) -> Iterator[Cluster]:
    """A new cluster, started; stopped and its folder removed when the block ends (an exception or Ctrl-C too), its
    server log first copied to `keep_log` if given (the run's other logs are kept: so is the server's). `settings`:
    lines of postgresql.conf beyond PostgreSQL's defaults (none for an endurance run)."""
    programs = bindir()
    folder = Path(tempfile.mkdtemp(prefix="queueflow-endurance-pg-"))
    cluster = Cluster(folder, free_port(), programs)
    try:
        if os.geteuid() == 0:
            shutil.chown(folder, "postgres", "postgres")
        cluster.init(settings or {})
        cluster.start()
        yield cluster
    finally:
        try:
            if (cluster.data / "postmaster.pid").exists():
                cluster.stop()
        finally:
            if keep_log is not None:
                with contextlib.suppress(OSError):  # no log (initdb failed) or nowhere to put it: remove the rest
                    shutil.copyfile(cluster.log, keep_log)
            shutil.rmtree(folder, ignore_errors=True)


async def restart(cluster: Cluster) -> None:
    """`Cluster.restart` off the event loop: the run's connections see the server go and come back meanwhile."""
    await asyncio.to_thread(cluster.restart)


async def settings(url: str) -> dict[str, str]:
    """SETTINGS as the server reports them (`shared_buffers` as `SHOW` writes it: 128MB)."""
    connection = await asyncpg.connect(url)
    try:
        return {name: await connection.fetchval(f"SHOW {name}") for name in SETTINGS}
    finally:
        await connection.close()
