"""`make release VERSION=x.y.z`: one version for the server and both SDKs, from one commit (docs/compatibility.md).

Refuses unless the tree is clean and on `main`, and the version is a new, higher `x.y.z`. Then writes the version
everywhere tests/unit/test_versions.py reads it, turns CHANGELOG.md's "Unreleased" into the release's section,
rebuilds the spec and both SDK cores, and runs the tests: if any of that fails, the tree is put back as it was.
Otherwise it commits "Release x.y.z", tags it `vx.y.z`, and pins it as the previous release for the next one
(compat/previous-release.toml) in a second commit.

    python scripts/release.py VERSION [--regenerate CMD] [--test CMD]

`--regenerate` (default `make spec sdks`) and `--test` (default `make test`) are shell commands; tests of this
script give it cheaper ones.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")
PYPROJECTS = ("pyproject.toml", "sdks/python/pyproject.toml", "sdks/worker/pyproject.toml")
PY_VERSIONS = (
    "server/queueflow/__init__.py",
    "sdks/python/queueflow_client/_version.py",
    "sdks/worker/queueflow_worker/__init__.py",
)
TS_VERSION = "sdks/typescript/src/version.ts"
PIN = "compat/previous-release.toml"


class Refused(Exception):
    """Why no release was made; the tree is as it was."""


def git(*args: str, root: Path = ROOT) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()


def current_version(root: Path) -> str:
    match = re.search(r'^__version__ = "([^"]+)"$', (root / PY_VERSIONS[0]).read_text(), re.M)
    if match is None:
        raise Refused(f"no __version__ in {PY_VERSIONS[0]}")
    return match.group(1)


def check(root: Path, version: str) -> None:
    if git("status", "--porcelain", root=root):
        raise Refused("the working tree has changes: commit or remove them first")
    if git("rev-parse", "--abbrev-ref", "HEAD", root=root) != "main":
        raise Refused("releases are made from main")
    new, old = SEMVER.match(version), SEMVER.match(current_version(root))
    if new is None:
        raise Refused(f"{version!r} is not a version x.y.z")
    if old is not None and tuple(map(int, new.groups())) <= tuple(map(int, old.groups())):
        raise Refused(f"{version} is not after the current {current_version(root)}")


def write_versions(root: Path, version: str, today: datetime.date) -> None:
    def sub(path: str, pattern: str, replacement: str) -> None:
        file = root / path
        text, count = re.subn(pattern, replacement, file.read_text(), count=1, flags=re.M)
        if count != 1:
            raise Refused(f"{path}: found no version to replace")
        file.write_text(text)

    for path in PYPROJECTS:
        sub(path, r'^version = "[^"]+"$', f'version = "{version}"')
    for path in PY_VERSIONS:
        sub(path, r'^__version__ = "[^"]+"$', f'__version__ = "{version}"')
    sub(TS_VERSION, r'^export const VERSION = "[^"]+";$', f'export const VERSION = "{version}";')
    for path in ("sdks/typescript/package.json", "sdks/typescript/package-lock.json"):
        manifest = json.loads((root / path).read_text())
        manifest["version"] = version
        if "packages" in manifest:
            manifest["packages"][""]["version"] = version
        (root / path).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    sub("CHANGELOG.md", r"^## Unreleased$", f"## Unreleased\n\n## {version} — {today.isoformat()}")


def pin(root: Path, version: str, commit: str) -> None:
    (root / PIN).write_text(
        "# The release the compatibility tests (tests/compat) hold this tree to. Written by `make release`\n"
        "# (scripts/release.py) as it makes a release; docs/compatibility.md says what is checked.\n"
        f'version = "{version}"\n'
        f'commit = "{commit}"\n'
        "# Whether its SDKs read an enum value they do not know without failing (from 0.2 on, both do).\n"
        "sdks_keep_unknown_values = true\n"
        "# Today's TypeScript test files (names without .js) that need what its server lacks: left out when today's\n"
        "# suite runs against its server.\n"
        "newer_typescript_tests = []\n"
        "\n"
        "# Enum fields that may gain values although its SDKs predate sdks_keep_unknown_values: none, from 0.2 on.\n"
        "[tolerated_new_values]\n"
    )


def release(version: str, regenerate: str, test: str, root: Path = ROOT, today: datetime.date | None = None) -> str:
    """Make the release; its commit. Refused (the tree as it was) if anything fails before the commit."""
    check(root, version)
    try:
        write_versions(root, version, today or datetime.datetime.now(datetime.UTC).date())
        for step, command in (("regenerating the spec and SDK cores", regenerate), ("the tests", test)):
            if subprocess.run(command, shell=True, cwd=root, check=False).returncode != 0:
                raise Refused(f"{step} failed ({command})")
    except BaseException:
        git("checkout", "--", ".", root=root)
        git("clean", "-fdq", "--", "spec", "sdks", root=root)
        raise
    git("commit", "-qam", f"Release {version}", root=root)
    commit = git("rev-parse", "HEAD", root=root)
    git("tag", "-a", f"v{version}", "-m", f"QueueFlow {version}", root=root)
    pin(root, version, commit)
    git("commit", "-qam", f"compat: the tests hold main to {version}, the previous release from now on", root=root)
    return commit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make release", description=__doc__.split("\n\n")[0])
    parser.add_argument("version", help="the new version, x.y.z")
    parser.add_argument("--regenerate", default="make spec sdks", help="rebuilds the spec and the SDK cores")
    parser.add_argument("--test", default="make test", help="the tests a release must pass")
    args = parser.parse_args(argv)
    try:
        commit = release(args.version, args.regenerate, args.test)
    except Refused as refused:
        print(f"make release: refused: {refused}", file=sys.stderr)
        return 1
    print(f"released {args.version} at {commit[:12]} (tag v{args.version}); publish from that tag")
    return 0


if __name__ == "__main__":
    sys.exit(main())
