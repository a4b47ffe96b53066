"""The TypeScript SDK's build (`npm run build`: src/ → dist/, src/ and test/ → dist-test/), made only when a source
changed since the last one.

A build rewrites every output file in place, so nothing may run from dist/ while one is under way; a build that
would change nothing is therefore worth skipping: with it, the test suite's users of dist/ (the bench's smoke run,
the chaos soak's TypeScript workers) share one build and run side by side (tests/conftest.py), where each used to
build again and wait for the others. Stale is judged as make judges it: a source newer than the oldest output (tsc
writes every output each build, so the oldest output is as old as the last build)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

__all__ = ["build", "stale"]

SOURCES = (
    "src",
    "test",
    "package.json",
    "package-lock.json",
    "tsconfig.json",
    "tsconfig.build.json",
    "tsconfig.test.json",
)
OUTPUTS = ("dist", "dist-test")


def _files(package: Path, names: tuple[str, ...]) -> Iterator[Path]:
    for name in names:
        path = package / name
        if path.is_dir():
            yield from (each for each in path.rglob("*") if each.is_file())
        elif path.is_file():
            yield path


def stale(package: Path) -> bool:
    """Whether `package` (a TypeScript SDK's folder) has no build, or a source newer than its build."""
    if not all((package / name).is_dir() for name in OUTPUTS):
        return True
    built = min((path.stat().st_mtime for path in _files(package, OUTPUTS)), default=0.0)
    return any(path.stat().st_mtime > built for path in _files(package, SOURCES))


def build(package: Path, *, timeout: float = 300) -> None:
    """`npm run build` in `package` unless its build is up to date; a failed build raises with npm's output."""
    if not stale(package):
        return
    done = subprocess.run(["npm", "run", "build"], cwd=package, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"npm run build failed in {package}:\n{done.stdout[-6000:]}\n{done.stderr[-4000:]}")
