"""PgBouncer in transaction mode, for tests: Debian's `pgbouncer` (`make test` installs it), started on a port
of its own with a configuration written into a temporary folder, in front of the server a test database lives on.

Transaction mode hands each transaction (each statement, outside one) whichever server connection is free, so a
client's session state does not follow it: a named prepared statement, a LISTEN, a SET. PgBouncer 1.18 (Debian 12)
does not carry protocol-level prepared statements across server connections either (1.21 learnt to).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Self

from sqlalchemy.engine import make_url


def binary() -> str | None:
    return shutil.which("pgbouncer") or next((p for p in ("/usr/sbin/pgbouncer",) if os.access(p, os.X_OK)), None)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PgBouncer:
    """`with PgBouncer(server_url) as bouncer: bouncer.url(database)` — a URL that reaches `database` on the server
    of `server_url` through PgBouncer in transaction mode, `pool_size` server connections per database."""

    def __init__(self, server_url: str, *, pool_size: int = 8) -> None:
        found = binary()
        if found is None:
            raise RuntimeError("pgbouncer is not installed (`make test` installs Debian's)")
        self.binary = found
        server = make_url(server_url)
        self.server_host = server.host or "127.0.0.1"
        self.server_port = server.port or 5432
        self.user = server.username or "postgres"
        self.pool_size = pool_size
        self.port = _free_port()
        self.work = Path(tempfile.mkdtemp(prefix="queueflow-pgbouncer-"))
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, database: str) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def start(self, timeout: float = 10) -> None:
        config = self.work / "pgbouncer.ini"
        (self.work / "users.txt").write_text(f'"{self.user}" ""\n')
        config.write_text(
            "\n".join(
                [
                    "[databases]",
                    f"* = host={self.server_host} port={self.server_port}",
                    "[pgbouncer]",
                    "listen_addr = 127.0.0.1",
                    f"listen_port = {self.port}",
                    "unix_socket_dir =",
                    "auth_type = trust",
                    f"auth_file = {self.work / 'users.txt'}",
                    "pool_mode = transaction",
                    f"default_pool_size = {self.pool_size}",
                    "max_client_conn = 1000",
                    "server_reset_query =",
                    f"logfile = {self.work / 'pgbouncer.log'}",
                    "log_connections = 0",
                    "log_disconnections = 0",
                    "",
                ]
            )
        )
        argv = [self.binary, str(config)]
        if os.geteuid() == 0:  # PgBouncer refuses to run as root; -u switches to the owner of PostgreSQL's files
            os.chmod(self.work, 0o755)
            shutil.chown(self.work, "postgres", "postgres")
            argv[1:1] = ["-u", "postgres"]
        self.process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        # PgBouncer announces nothing on stdout when it is ready: poll its port, with a deadline.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                said = self.process.stderr.read().decode() if self.process.stderr else ""
                raise RuntimeError(f"pgbouncer exited: {said}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"pgbouncer did not listen on {self.port} within {timeout} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # SIGTERM: PgBouncer exits at once, closing every connection
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None and self.process.stderr is not None:
            self.process.stderr.close()
        self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.work, ignore_errors=True)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def log(self) -> str:
        path = self.work / "pgbouncer.log"
        return path.read_text() if path.exists() else ""
