"""The task the rolling-upgrade test's servers run in-process (`--tasks tests.compat.rolling_tasks:tasks`), with
the previous release's SDK in its servers and today's in today's: it appends its job's id to the file
$QUEUEFLOW_COMPAT_RUNS, one line per execution, so the test counts how often each job ran."""

from __future__ import annotations

import os
import time
from typing import Any

from queueflow_client import JobContext, TaskRegistry

tasks = TaskRegistry()


@tasks.task("record")
def record(payload: dict[str, Any], ctx: JobContext) -> None:  # in a thread of the runner's
    time.sleep(0.01)  # long enough that a stop finds jobs running, short enough to drain in seconds
    # One write per line, O_APPEND: lines of several processes never interleave.
    with open(os.environ["QUEUEFLOW_COMPAT_RUNS"], "a") as runs:
        runs.write(f"{ctx.job_id}\n")
