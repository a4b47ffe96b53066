"""The previous release (compat/previous-release.toml) as the compatibility tests use it: its files, read from git,
and its artifacts built once per commit under .compat/ (a cache, ignored by git), under a file lock so that
pytest-xdist's workers build them once between them.

- `tree()`: its files (`git archive` of its commit).
- `server_venv()`: a virtualenv with its server and its SDKs installed from its tree: its `queueflow` binary.
- `sdk_venv()`: a virtualenv with today's server (editable, this checkout) and its Python SDKs, built as the wheels
  a user installs.
"""

from __future__ import annotations

import fcntl
import io
import os
import subprocess
import sys
import tarfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".compat"
PIN = ROOT / "compat" / "previous-release.toml"


@dataclass(frozen=True, slots=True)
class Release:
    version: str
    commit: str
    sdks_keep_unknown_values: bool
    """Whether its SDKs read an enum value they do not know without failing (from 0.2 on)."""
    newer_typescript_tests: frozenset[str]
    """Today's TypeScript test files that need what its server lacks."""
    tolerated_new_values: dict[str, str]
    """Enum fields that may gain values although its SDKs predate `sdks_keep_unknown_values`: field → why."""

    @property
    def home(self) -> Path:
        return CACHE / self.commit[:12]


@cache
def previous() -> Release:
    pinned = tomllib.loads(PIN.read_text())
    return Release(
        pinned["version"],
        pinned["commit"],
        pinned["sdks_keep_unknown_values"],
        frozenset(pinned["newer_typescript_tests"]),
        dict(pinned["tolerated_new_values"]),
    )


def git_show(path: str) -> bytes:
    """A file of the previous release, as committed."""
    return subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{previous().commit}:{path}"], capture_output=True, check=True
    ).stdout


@contextmanager
def _building(name: str) -> Iterator[Path | None]:
    """The lock for building `name` under the release's home: yields its path, or None when it is built already."""
    home = previous().home
    home.mkdir(parents=True, exist_ok=True)
    target = home / name
    with (home / f".{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (home / f".{name}.done").exists():
            yield None
            return
        yield target
        (home / f".{name}.done").touch()


def tree() -> Path:
    """The previous release's files, extracted once."""
    target = previous().home / "tree"
    with _building("tree") as building:
        if building is not None:
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", "--format=tar", previous().commit],
                capture_output=True,
                check=True,
            ).stdout
            building.mkdir(parents=True, exist_ok=True)
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                tar.extractall(building, filter="data")
    return target


def _venv(path: Path, *packages: str) -> None:
    """A virtualenv at `path` with `packages` (pip arguments) installed, by uv as `make` installs .venv."""
    uv = Path(sys.executable).parent / "uv"
    subprocess.run([str(uv), "venv", "--quiet", "--python", sys.executable, str(path)], check=True)
    subprocess.run(
        [str(uv), "pip", "install", "--quiet", "--python", str(path / "bin" / "python"), *packages],
        check=True,
        env={**os.environ, "VIRTUAL_ENV": str(path)},
    )


def server_venv() -> Path:
    """A virtualenv holding the previous release's server (and its SDKs, which its server imports): its `bin/`."""
    source = tree()
    target = previous().home / "server-venv"
    with _building("server-venv") as building:
        if building is not None:
            _venv(building, str(source), str(source / "sdks" / "worker"), str(source / "sdks" / "python"))
    return target / "bin"


def sdk_venv() -> Path:
    """A virtualenv holding today's server (this checkout, editable, with its test dependencies) and the previous
    release's Python SDKs, with the test tools its own suite asked for (its `dev` extra: a tool today's tree has
    dropped, as openapi-python-client and the pydantic it brought, is still there for that suite): its `bin/`."""
    source = tree()
    target = previous().home / "sdk-venv"
    with _building("sdk-venv") as building:
        if building is not None:
            _venv(
                building,
                "-e",
                f"{ROOT}[dev]",
                str(source / "sdks" / "worker"),
                str(source / "sdks" / "python"),
                *_dev_extra(source),
            )
    return target / "bin"


def _dev_extra(source: Path) -> list[str]:
    """The requirements of the `dev` extra of the tree at `source` (its server's pyproject.toml)."""
    project = tomllib.loads((source / "pyproject.toml").read_text())["project"]
    return list(project.get("optional-dependencies", {}).get("dev", []))
