"""The `queueflow` wheel is a whole server: installed into a fresh virtualenv in an empty folder, far from this
checkout, it creates its schema (`queueflow migrate`) and serves (`queueflow serve`) one job through."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import httpx
import pytest

from tests import pg
from tests.e2e.live import live_server

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"QUEUEFLOW_API_KEYS": "key-t=tenant-t", "QUEUEFLOW_WORKER_KEYS": "key-w"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a fresh virtualenv holding the built `queueflow` wheel, and `queueflow-worker`'s (its `tasks`
    extra: the in-process runner imports it).

    Its dependencies are borrowed from the running environment (a .pth line naming its site-packages) rather
    than downloaded again: what is on trial is the wheel's own contents. A .pth line adds a folder without
    reading the .pth files inside it, so the checkout's editable install of `queueflow` does not come along."""
    root = tmp_path_factory.mktemp("server-wheel")
    dist = root / "dist"
    build = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", dist, ROOT]
    subprocess.run(build, check=True, capture_output=True)
    # From a copy: the SDK's wheel test may be building sdks/worker in place at the same time (another xdist worker).
    worker_source = root / "worker"
    shutil.copytree(ROOT / "sdks" / "worker", worker_source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    subprocess.run([*build[:-1], worker_source], check=True, capture_output=True)
    (wheel,) = dist.glob("queueflow-*.whl")
    (worker,) = dist.glob("queueflow_worker-*.whl")
    venv.create(root / "venv", with_pip=False)
    python = root / "venv" / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    borrowed = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib"), *site.getsitepackages()}
    (Path(purelib) / "borrowed.pth").write_text("".join(f"{path}\n" for path in sorted(borrowed)))
    install = [sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", wheel, worker]
    subprocess.run(install, check=True, capture_output=True)
    return python


def test_the_installed_wheel_migrates_and_serves(installed: Path, tmp_path: Path) -> None:
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    # Nothing of the checkout may leak in: no PYTHONPATH, and a working directory with no alembic.ini.
    env = {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "VIRTUAL_ENV")}
    url = pg.blocking(pg.create_database)
    try:
        migrate = subprocess.run(
            [installed, "-m", "queueflow.cli", "migrate", "--database-url", url],
            cwd=empty, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert migrate.returncode == 0, migrate.stderr
        where = subprocess.run(
            [installed, "-c", "import queueflow; print(queueflow.__file__)"],
            cwd=empty, env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert not where.stdout.startswith(str(ROOT)), "the test ran the checkout, not the wheel"
        # The in-process runner's module imports: its worker loop came from queueflow-worker's wheel.
        runner = subprocess.run(
            [installed, "-c", "import queueflow.runtime.inprocess as r; print(r.WorkerLoop.__module__)"],
            cwd=empty, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert (runner.returncode, runner.stdout.strip()) == (0, "queueflow_worker.loop"), runner.stderr
        with live_server("--database-url", url, env={**env, **KEYS}, python=installed, cwd=empty) as base:
            tenant = {"Authorization": "Bearer key-t"}
            worker = {"Authorization": "Bearer key-w"}
            assert httpx.get(f"{base}/readyz").status_code == 200
            created = httpx.post(f"{base}/v1/jobs", json={"task_name": "hello"}, headers=tenant)
            assert created.status_code == 201, created.text
            (job,) = httpx.post(f"{base}/v1/worker/lease", json={"queues": ["default"]}, headers=worker).json()["jobs"]
            assert job["id"] == created.json()["id"]
            done = httpx.post(
                f"{base}/v1/worker/jobs/{job['id']}/complete",
                json={"lease_token": job["lease_token"], "result": {"ok": True}},
                headers=worker,
            )
            assert done.status_code == 200, done.text
            final = httpx.get(f"{base}/v1/jobs/{job['id']}", headers=tenant).json()
            assert (final["status"], final["result"]) == ("completed", {"ok": True})
            # The dashboard's templates and vendored assets are package data: they must be in the wheel.
            sign_in = httpx.get(f"{base}/ui/sign-in")
            assert sign_in.status_code == 200
            assert "Tenant key" in sign_in.text
            assert httpx.get(f"{base}/ui/static/htmx.min.js").status_code == 200
            assert httpx.get(f"{base}/ui/static/dashboard.css").status_code == 200
            # So are the API docs' bundles (Redoc, Swagger UI): the docs work with no network.
            for docs, asset in [("/schema", "redoc.standalone.js"), ("/schema/swagger", "swagger-ui-bundle.js")]:
                assert f"/ui/static/{asset}" in httpx.get(f"{base}{docs}").text
                assert httpx.get(f"{base}/ui/static/{asset}").status_code == 200
            assert httpx.get(f"{base}/ui/static/swagger-ui.css").status_code == 200
    finally:
        pg.blocking(lambda: pg.drop_database(url))
