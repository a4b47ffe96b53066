"""The committed generated core is exactly what spec/openapi.json generates (`make sdk-python` fixes a diff)."""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "sdks" / "python"
COMMITTED = SDK / "queueflow_client" / "_generated"
IGNORED = {"__pycache__", ".ruff_cache"}


def differences(committed: Path, generated: Path, prefix: str = "") -> list[str]:
    compared = filecmp.dircmp(committed, generated, ignore=sorted(IGNORED))
    found = [f"only committed: {prefix}{name}" for name in compared.left_only]
    found += [f"only generated: {prefix}{name}" for name in compared.right_only]
    _, mismatch, errors = filecmp.cmpfiles(committed, generated, compared.common_files, shallow=False)
    found += [f"differs: {prefix}{name}" for name in mismatch + errors]
    for name in compared.common_dirs:
        found += differences(committed / name, generated / name, f"{prefix}{name}/")
    return found


def test_the_committed_core_matches_the_spec(tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    output = tmp_path / "_generated"
    subprocess.run(
        [bin_dir / "openapi-python-client", "generate", "--path", ROOT / "spec" / "openapi.json",
         "--config", SDK / "openapi-python-client.yaml", "--meta", "none", "--output-path", output,
         "--overwrite", "--fail-on-warning"],
        check=True, capture_output=True, cwd=tmp_path,
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"},
    )  # fmt: skip
    assert differences(COMMITTED, output) == [], "the generated core is stale: run `make sdk-python` and commit"
