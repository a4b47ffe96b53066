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


def differences(left: Path, right: Path) -> list[str]:
    compared = filecmp.dircmp(left, right, ignore=sorted(IGNORED))
    found = [f"only in {left.name if side is compared.left_only else 'generated'}: {name}"
             for side in (compared.left_only, compared.right_only) for name in side]  # fmt: skip
    _, mismatch, errors = filecmp.cmpfiles(left, right, compared.common_files, shallow=False)
    found += [f"differs: {name}" for name in mismatch + errors]
    for name in compared.common_dirs:
        found += [f"{name}/{item}" for item in differences(left / name, right / name)]
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
