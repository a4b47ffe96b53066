"""`make release` (scripts/release.py) on a copy of this tree, in a repository of its own, with stand-in commands
for the spec rebuild and the tests: it refuses a dirty tree, a branch other than main, a version not after the
current; a failing step leaves the tree as it was; a release writes one version everywhere, turns "Unreleased"
into the release's section, commits, tags, and pins itself as the previous release in a second commit."""

from __future__ import annotations

import datetime
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.unit.test_versions import ROOT, written_versions

sys.path.insert(0, str(ROOT / "scripts"))
import release


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The files of this tree that a release touches, committed on `main` of a new repository."""
    root = tmp_path / "repo"
    for path in (
        *release.PYPROJECTS,
        *release.PY_VERSIONS,
        release.TS_VERSION,
        "sdks/typescript/package.json",
        "sdks/typescript/package-lock.json",
        "CHANGELOG.md",
        release.PIN,
    ):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, root / path)
    git(root.parent, "init", "-q", "-b", "main", str(root))
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start", "--allow-empty")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tree")
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@t")
    return root


def test_a_release_writes_one_version_commits_tags_and_pins_itself(tree: Path) -> None:
    commit = release.release("9.8.7", "true", "true", root=tree, today=datetime.date(2026, 12, 4))
    assert set(written_versions(tree).values()) == {"9.8.7"}
    assert "## Unreleased\n\n## 9.8.7 — 2026-12-04\n" in (tree / "CHANGELOG.md").read_text()
    assert git(tree, "log", "--format=%s", "-2").splitlines() == [
        "compat: the tests hold main to 9.8.7, the previous release from now on",
        "Release 9.8.7",
    ]
    assert git(tree, "rev-parse", "v9.8.7^{commit}") == commit
    pinned = tomllib.loads((tree / release.PIN).read_text())
    assert (pinned["version"], pinned["commit"], pinned["sdks_keep_unknown_values"]) == ("9.8.7", commit, True)
    assert git(tree, "status", "--porcelain") == ""


@pytest.mark.parametrize("failing", ["regenerate", "test"])
def test_a_failing_step_leaves_the_tree_as_it_was(tree: Path, failing: str) -> None:
    head = git(tree, "rev-parse", "HEAD")
    commands = {"regenerate": "true", "test": "true", failing: "false"}
    with pytest.raises(release.Refused, match="failed"):
        release.release("9.8.7", commands["regenerate"], commands["test"], root=tree)
    assert (git(tree, "rev-parse", "HEAD"), git(tree, "status", "--porcelain")) == (head, "")
    assert git(tree, "tag") == ""


def test_it_refuses_a_dirty_tree_another_branch_or_an_older_version(tree: Path) -> None:
    current = release.current_version(tree)
    with pytest.raises(release.Refused, match="not after"):
        release.release(current, "true", "true", root=tree)
    with pytest.raises(release.Refused, match="not a version"):
        release.release("1.0", "true", "true", root=tree)
    (tree / "CHANGELOG.md").write_text("edited")
    with pytest.raises(release.Refused, match="changes"):
        release.release("9.8.7", "true", "true", root=tree)
    git(tree, "checkout", "-q", "--", ".")
    git(tree, "checkout", "-q", "-b", "topic")
    with pytest.raises(release.Refused, match="from main"):
        release.release("9.8.7", "true", "true", root=tree)
