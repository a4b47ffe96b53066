"""`python -m build sdks/python` makes a wheel that installs into a fresh virtualenv and imports."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

SDK = Path(__file__).resolve().parents[2] / "sdks" / "python"


def test_the_wheel_installs_and_imports(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", dist, SDK], check=True, capture_output=True)
    (wheel,) = dist.glob("queueflow_client-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--quiet", wheel], check=True, capture_output=True)
    probe = "import queueflow_client as q; print(q.__version__, q.QueueFlow.__name__, q.Worker.__name__)"
    out = subprocess.run([python, "-c", probe], check=True, capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.split() == ["0.1.0", "QueueFlow", "Worker"]
    # The operator CLI is a console script of the wheel.
    usage = subprocess.run([env_dir / "bin" / "queueflow-client", "--help"], capture_output=True, text=True, check=True)
    assert "jobs" in usage.stdout
    assert "dlq" in usage.stdout
