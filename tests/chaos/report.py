"""The chaos report: one row per scenario, in Markdown (printed by `make chaos`, kept in docs/reliability.md)."""

from __future__ import annotations

from collections.abc import Sequence

from tests.chaos.checks import Outcome, recovery_summary

COLUMNS = (
    "scenario",
    "SDK workers",
    "enqueued",
    "completed",
    "dead-lettered",
    "cancelled",
    "executions",
    "duplicate executions",
    "duplicates per 1,000 jobs",
    "retries consumed by stops",
    "duplicate completions",
    "overwritten",
    "lost",
    "stuck",
    "workflows (unfinished)",
    "cron fired (twice)",
    "events sent",
    "sequence jobs (out of order / overlaps)",
    "unique jobs (a key twice live)",
    "faults",
    "recovery s (median / max)",
    "stranded s after SIGKILL (median / max)",
    "SIGTERM exit s (api / worker)",
    "throughput jobs/s",
    "invariants",
)


def row(o: Outcome) -> list[str]:
    exits = " / ".join(f"{o.sigterm_exits[k]:.2f}" if k in o.sigterm_exits else "-" for k in ("api", "worker"))
    return [
        o.scenario,
        o.workers,
        str(o.enqueued),
        str(o.completed),
        str(o.dead_lettered),
        str(o.cancelled),
        str(o.executions),
        str(o.duplicate_executions),
        f"{o.duplicates_per_1000:.2f}",
        str(o.retries_by_stops),
        str(o.duplicate_completions),
        str(o.overwritten),
        str(o.lost),
        str(o.stuck),
        f"{o.workflows} ({o.workflows_unfinished})",
        f"{o.cron_fired} ({o.cron_duplicates})",
        str(o.events),
        f"{o.sequence_jobs} ({o.sequence_out_of_order} / {o.sequence_overlaps})",
        f"{o.unique_jobs} ({o.unique_twice_live})",
        str(o.faults),
        recovery_summary(o.recovery),
        recovery_summary(o.stranded),
        exits,
        f"{o.throughput:.0f}",
        "hold" if o.holds else "BROKEN",
    ]


def table(outcomes: Sequence[Outcome]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row(o)) + " |" for o in outcomes]
    for o in outcomes:
        lines.append(f"\n{o.scenario} took " + ", ".join(f"{k} {v:.0f} s" for k, v in o.phases.items()))
        lines += [f"\n{o.scenario}: {note}" for note in o.notes]
        lines += [f"\n**{o.scenario}**: {problem}" for problem in o.problems]
        if o.logs:
            lines.append(f"logs: {o.logs}")
    return "\n".join(lines)
