"""bench.typescript_build: the TypeScript SDK is built again only when a source is newer than its build."""

from __future__ import annotations

import os
from pathlib import Path

from bench.typescript_build import stale


def touch(path: Path, mtime: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x")
    os.utime(path, (mtime, mtime))


def test_a_build_is_stale_when_missing_or_older_than_a_source(tmp_path: Path) -> None:
    touch(tmp_path / "src" / "index.ts", 1000)
    touch(tmp_path / "package.json", 1000)
    assert stale(tmp_path)  # never built
    touch(tmp_path / "dist" / "index.js", 2000)
    assert stale(tmp_path)  # dist-test missing
    touch(tmp_path / "dist-test" / "test" / "a.test.js", 2000)
    assert not stale(tmp_path)
    touch(tmp_path / "test" / "a.test.ts", 3000)  # a test changed after the build
    assert stale(tmp_path)
    touch(tmp_path / "dist-test" / "test" / "a.test.js", 4000)
    assert stale(tmp_path)  # dist/ is still older than the test: the oldest output counts
    touch(tmp_path / "dist" / "index.js", 4000)
    assert not stale(tmp_path)
