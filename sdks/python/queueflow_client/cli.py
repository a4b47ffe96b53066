"""`queueflow-client`: the operator's command line, over HTTP with a tenant key, so it works against any server.

    queueflow-client jobs enqueue send_email --payload '{"to": "ada@example.com"}'
    queueflow-client jobs list --status running
    queueflow-client dlq list --queue mail
    queueflow-client dlq replay --all --queue mail
    queueflow-client queues --json
    queueflow-client workflows signal wf_123 approval --payload '{"approved": true}'
    queueflow-client workflows retry wf_123
    queueflow-client endpoints list

The URL and key come from `--url` / `--api-key`, else `QUEUEFLOW_URL` / `QUEUEFLOW_API_KEY` (the URL defaults to
`make run`'s server; no key suits a development-mode server). Answers print as a table, or with `--json` as JSON
for scripts. An error prints one line on stderr and exits 1 (2 for a usage mistake, as argparse does).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from itertools import islice
from typing import Any, TextIO, get_args

import httpx

from queueflow_client.client import QueueFlow
from queueflow_client.errors import ArgumentError, QueueFlowError
from queueflow_client.types import Endpoint, Job, JobStatus, Queue, Schedule, Trigger, Unique, Workflow
from queueflow_client.types import Sequence as InSequence

DEFAULT_URL = "http://127.0.0.1:8000"
STATUSES = list(get_args(JobStatus))
JOB_COLUMNS = ["id", "queue_name", "task_name", "status", "delivery_count", "scheduled_at", "error_message"]


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="queueflow-client", description="Operate a QueueFlow server over its API.")
    root.add_argument("--url", help=f"the server (default $QUEUEFLOW_URL, else {DEFAULT_URL})")
    root.add_argument("--api-key", help="a tenant key (default $QUEUEFLOW_API_KEY; none in development mode)")
    root.add_argument("--json", action="store_true", help="print JSON instead of a table")
    commands = root.add_subparsers(dest="command", required=True)

    jobs = commands.add_parser("jobs", help="enqueue, look at, cancel and retry jobs").add_subparsers(
        dest="action", required=True
    )
    enqueue = jobs.add_parser("enqueue", help="enqueue one job")
    enqueue.add_argument("task_name")
    enqueue.add_argument("--payload", type=json_object, help="a JSON object")
    enqueue.add_argument("--queue", dest="queue_name")
    enqueue.add_argument("--priority", type=int)
    enqueue.add_argument("--delay", dest="delay_seconds", type=float, help="seconds before it is due")
    enqueue.add_argument("--max-retries", type=int)
    enqueue.add_argument("--metadata", type=json_object, help="a JSON object")
    enqueue.add_argument("--idempotency-key")
    enqueue.add_argument(
        "--expires-in", type=float, help="seconds from now: a job not started by then is dead-lettered, never run"
    )
    enqueue.add_argument("--unique-key", help="at most one job of this key that has not finished (see --on-conflict)")
    enqueue.add_argument(
        "--unique-states", type=lambda text: text.split(","), help="comma-separated statuses the key counts"
    )
    enqueue.add_argument("--unique-period", type=int, help="one job of the key per window of this many seconds")
    enqueue.add_argument("--on-conflict", choices=("skip", "replace", "error"), help="default skip")
    enqueue.add_argument("--debounce", type=float, help="run this long after the last enqueue of the key")
    enqueue.add_argument("--debounce-max", type=float, help="never later than this after the first")
    enqueue.add_argument("--sequence-key", help="run after every earlier job of this key, one at a time")
    enqueue.add_argument(
        "--sequence-on-failure",
        choices=("continue", "halt"),
        help="halt: a dead job holds the later ones (default continue)",
    )
    for action in ("get", "cancel", "retry"):
        jobs.add_parser(action, help=f"{action} one job").add_argument("job_id")
    listing = jobs.add_parser("list", help="the newest jobs, filtered")
    listing.add_argument("--status", choices=STATUSES)
    add_filters(listing)

    dlq = commands.add_parser("dlq", help="the dead-letter queue").add_subparsers(dest="action", required=True)
    add_filters(dlq.add_parser("list", help="the newest dead-lettered jobs"))
    replay = dlq.add_parser("replay", help="put dead-lettered jobs back to pending, with a fresh retry budget")
    replay.add_argument("job_ids", nargs="*", metavar="job_id")
    replay.add_argument("--all", action="store_true", help="every dead letter the filters match")
    add_filters(replay, limit=None)

    commands.add_parser("queues", help="every queue with its counts by state")
    workflows = commands.add_parser("workflows", help="look at, signal and retry workflows").add_subparsers(
        dest="action", required=True
    )
    workflows.add_parser("get", help="one workflow and its steps").add_argument("workflow_id")
    signal = workflows.add_parser("signal", help="send a signal to the step of a workflow that waits for it")
    signal.add_argument("workflow_id")
    signal.add_argument("name", help="the signal's name")
    signal.add_argument("--payload", type=json_value, help="any JSON: the waiting step's result (default null)")
    workflows.add_parser(
        "retry", help="run a failed, partially failed or cancelled workflow's unfinished steps again"
    ).add_argument("workflow_id")
    schedules = commands.add_parser("schedules", help="look at cron schedules").add_subparsers(
        dest="action", required=True
    )
    schedules.add_parser("list", help="every schedule")
    endpoints = commands.add_parser("endpoints", help="look at push endpoints").add_subparsers(
        dest="action", required=True
    )
    endpoints.add_parser("list", help="every push endpoint, with its deliveries in flight and its last error")
    triggers = commands.add_parser("triggers", help="look at triggers").add_subparsers(dest="action", required=True)
    triggers.add_parser("list", help="every trigger")
    events = commands.add_parser("events", help="send events").add_subparsers(dest="action", required=True)
    send = events.add_parser("send", help="send an event: every enabled trigger it matches starts")
    send.add_argument("name", help="the event's name, e.g. order.paid")
    send.add_argument("--payload", type=json_object, help="a JSON object (default {})")
    send.add_argument("--id", dest="event_id", help="the event's id: a repeat starts nothing again")
    return root


def add_filters(command: argparse.ArgumentParser, limit: int | None = 20) -> None:
    command.add_argument("--queue", dest="queue_name")
    command.add_argument("--task", dest="task_name")
    command.add_argument("--metadata", type=json_object, help="jobs whose metadata contains this JSON object")
    command.add_argument("--unique-key", help="jobs enqueued with this unique key")
    command.add_argument("--sequence-key", help="jobs of this sequence")
    if limit is not None:
        command.add_argument("--limit", type=int, default=limit, help=f"at most this many (default {limit})")


def json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None


def json_object(text: str) -> dict[str, Any]:
    value = json_value(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, not {type(value).__name__}")
    return value


def main(
    argv: Sequence[str] | None = None, *, http_client: httpx.Client | None = None, out: TextIO | None = None
) -> int:
    """Run one command; `http_client` and `out` are for tests (the default is a fresh client and stdout)."""
    args = parser().parse_args(argv)
    out = out or sys.stdout
    url = args.url or os.environ.get("QUEUEFLOW_URL") or DEFAULT_URL
    key = args.api_key or os.environ.get("QUEUEFLOW_API_KEY") or None
    try:
        with QueueFlow(url, key, http_client=http_client) as client:
            answer = run(client, args)
    except ArgumentError as exc:
        print(f"queueflow-client: {exc}", file=sys.stderr)
        return 2
    except QueueFlowError as exc:
        print(f"queueflow-client: {exc}", file=sys.stderr)
        return 1
    show(answer, as_json=args.json, out=out)
    return 0


def run(client: QueueFlow, args: argparse.Namespace) -> Any:
    """The command's answer: one object or a list of them."""
    command = f"{args.command} {getattr(args, 'action', '')}".strip()
    if command == "jobs enqueue":
        options = (
            "payload",
            "queue_name",
            "priority",
            "delay_seconds",
            "max_retries",
            "metadata",
            "idempotency_key",
            "expires_in",
        )
        return client.jobs.enqueue(
            args.task_name,
            unique=unique_of(args),
            sequence=sequence_of(args),
            **{name: getattr(args, name) for name in options},
        )
    if command in ("jobs get", "jobs cancel", "jobs retry"):
        action: Callable[[str], Job] = getattr(client.jobs, args.action)
        return action(args.job_id)
    if command in ("jobs list", "dlq list"):
        status = "dead_letter" if args.command == "dlq" else args.status
        return list(islice(matching(client, args, status, page_size=min(args.limit, 500)), args.limit))
    if command == "dlq replay":
        if bool(args.job_ids) == args.all:
            raise ArgumentError("give the ids of the jobs to replay, or --all (with filters) for every match")
        # Listed first, then replayed: a replayed job leaves the dead letters, so paging while replaying skips some.
        ids = args.job_ids or [job.id for job in matching(client, args, "dead_letter", page_size=500)]
        return [client.jobs.retry(job_id) for job_id in ids]
    if command == "queues":
        return client.queues.list()
    if command == "workflows get":
        return client.workflows.get(args.workflow_id)
    if command == "workflows signal":
        return client.workflows.signal(args.workflow_id, args.name, args.payload)
    if command == "workflows retry":
        return client.workflows.retry(args.workflow_id)
    if command == "endpoints list":
        return list(client.endpoints.list())
    if command == "triggers list":
        return list(client.triggers.list())
    if command == "events send":
        return client.events.send(args.name, args.payload, id=args.event_id)
    assert command == "schedules list", command
    return list(client.schedules.list())


def unique_of(args: argparse.Namespace) -> Unique | None:
    """The `unique` rule the enqueue's flags give; None without --unique-key (a rule flag without it: an error)."""
    rule = {
        "states": args.unique_states,
        "period_seconds": args.unique_period,
        "on_conflict": args.on_conflict,
        "debounce_seconds": args.debounce,
        "debounce_max_seconds": args.debounce_max,
    }
    if args.unique_key is None:
        if any(value is not None for value in rule.values()):
            raise ArgumentError("--unique-states, --unique-period, --on-conflict and --debounce need --unique-key")
        return None
    if args.on_conflict is None and args.debounce is not None:
        rule["on_conflict"] = "replace"  # debounce replaces, always
    return Unique(key=args.unique_key, **{name: value for name, value in rule.items() if value is not None})


def sequence_of(args: argparse.Namespace) -> InSequence | None:
    """The sequence the enqueue's flags give; None without --sequence-key (--sequence-on-failure alone: an error)."""
    if args.sequence_key is None:
        if args.sequence_on_failure is not None:
            raise ArgumentError("--sequence-on-failure needs --sequence-key")
        return None
    return InSequence(key=args.sequence_key, on_failure=args.sequence_on_failure or "continue")


def matching(client: QueueFlow, args: argparse.Namespace, status: Any, *, page_size: int) -> Iterable[Job]:
    filters = {"queue_name": args.queue_name, "task_name": args.task_name, "metadata": args.metadata}
    if getattr(args, "unique_key", None) is not None:
        filters["unique_key"] = args.unique_key
    if getattr(args, "sequence_key", None) is not None:
        filters["sequence_key"] = args.sequence_key
    return client.jobs.list(status=status, page_size=page_size, **filters)


# ---- output ----------------------------------------------------------------------------------------


def show(answer: Any, *, as_json: bool, out: TextIO) -> None:
    if as_json:
        json.dump(plain(answer), out, indent=2, default=str)
        out.write("\n")
    elif isinstance(answer, list):
        table(answer, out)
    elif isinstance(answer, Workflow):
        # What only some workflows have (a parent, a deadline, a timeout's error) is shown where it is.
        unset = [name for name in ("parent", "timeout_seconds", "deadline", "error") if getattr(answer, name) is None]
        record(answer, out, skip=("steps", *unset))
        out.write("\n")
        table(answer.steps, out)
    else:
        record(answer, out)


def plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def columns(rows: Sequence[Any]) -> list[str]:
    if not rows:
        return []
    kind = type(rows[0])
    if issubclass(kind, Job):
        return JOB_COLUMNS
    if kind is Queue:
        return [field.name for field in dataclasses.fields(kind)]
    if kind is Endpoint:
        return ["name", "url", "queues", "paused", "concurrency", "in_flight", "delivered", "failed", "last_error"]
    if kind is Schedule:
        return ["name", "cron", "timezone", "task_name", "queue_name", "enabled", "next_run_at", "last_run_at"]
    if kind is Trigger:
        return ["name", "event", "filter", "task", "workflow", "enabled"]
    return [field.name for field in dataclasses.fields(kind)]


def table(rows: Sequence[Any], out: TextIO) -> None:
    if not rows:
        out.write("(none)\n")
        return
    names = columns(rows)
    cells = [[cell(getattr(row, name)) for name in names] for row in rows]
    widths = [max(len(name), *(len(line[index]) for line in cells)) for index, name in enumerate(names)]
    for line in [[name.upper() for name in names], *cells]:
        out.write("  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip() + "\n")


def record(value: Any, out: TextIO, skip: Sequence[str] = ()) -> None:
    fields = [field.name for field in dataclasses.fields(value) if field.name not in skip]
    width = max(len(name) for name in fields)
    for name in fields:
        out.write(f"{name.ljust(width)}  {cell(getattr(value, name), limit=None)}\n")


def cell(value: Any, limit: int | None = 60) -> str:
    if value is None:
        text = "-"
    elif isinstance(value, datetime):
        text = value.isoformat(timespec="seconds")
    elif isinstance(value, Mapping | list) or dataclasses.is_dataclass(value):
        text = json.dumps(plain(value), default=str)
    else:
        text = str(value)
    text = " ".join(text.split())  # one line per row, whatever a message holds
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


if __name__ == "__main__":
    raise SystemExit(main())
