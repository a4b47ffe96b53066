"""`python -m build sdks/python` (and `sdks/worker`, which it depends on) makes wheels that install into a fresh
virtualenv and import."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import queueflow_client

SDKS = Path(__file__).resolve().parents[2] / "sdks"


def test_the_wheel_installs_and_imports(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    for sdk in ("worker", "python"):
        build = [sys.executable, "-m", "build", "--wheel", "--outdir", dist, SDKS / sdk]
        subprocess.run(build, check=True, capture_output=True)
    (client,) = dist.glob("queueflow_client-*.whl")
    (worker,) = dist.glob("queueflow_worker-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    # Both at once: the client's dependency on queueflow-worker is met by the wheel beside it.
    subprocess.run([python, "-m", "pip", "install", "--quiet", client, worker], check=True, capture_output=True)
    probe = (
        "import queueflow_client as q, queueflow_worker as w;"
        " print(q.__version__, q.QueueFlow.__name__, q.Worker.__name__, w.__version__, q.JobContext is w.JobContext)"
    )
    out = subprocess.run([python, "-c", probe], check=True, capture_output=True, text=True, cwd=tmp_path)
    version = queueflow_client.__version__  # one version per release (tests/unit/test_versions.py)
    assert out.stdout.split() == [version, "QueueFlow", "Worker", version, "True"]
    # The operator CLI is a console script of the wheel.
    usage = subprocess.run([env_dir / "bin" / "queueflow-client", "--help"], capture_output=True, text=True, check=True)
    assert "jobs" in usage.stdout
    assert "dlq" in usage.stdout
