"""The endurance run in parts (bench/endurance/parts.py): parts stored and read back, and combined into one report
of the profile, which names every part, the profile's systems and rates without one, and parts of other revisions;
parts of another profile are never combined. Pure: no PostgreSQL, no run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bench.endurance import parts, report
from bench.endurance.parts import Part, PartError
from bench.endurance.profiles import FULL, SHORT, Profile
from bench.endurance.recorder import Latency
from bench.endurance.results import PhaseResult, RampStep, RunResult, SystemResult

DATE = "2026-12-08 00:10 UTC"
MACHINE = {
    "date": DATE,
    "cores": 2,
    "ram_gib": 7.5,
    "cpu_model": "a CPU",
    "load_average": "0.50 0.25 0.12",
    "postgres_version": "PostgreSQL 15.10",
    "commit": "0123456789ab",
}
SERVER = {"own_cluster": True, "autovacuum": "on", "fsync": "on"}
RAMP = [RampStep(150.0, 150.0, 150.0, 0, True), RampStep(187.5, 150.0, 120.0, 900, False)]


def _part(
    system: str = "QueueFlow",
    rate: float = 150,
    *,
    revision: str = "0123456789ab",
    dirty: bool = False,
    profile: Profile = FULL,
    ramp: list[RampStep] = RAMP,
    date: str = DATE,
) -> Part:
    latency = Latency(1_000, 5.0, 8.0, 12.5, 20.0)
    clean = PhaseResult("clean", "clean", 10.0, 600.0, rate, rate, rate, latency, 3, 40, 0, 0, 0, 12, 0.5, [], [])
    run = RunResult(system, rate, 225.0, [clean], finished=90_000, unseen=0, unfinished=0, total_bytes=90 * 2**20)
    found = SystemResult(system, ("jobs",), 150.0, ramp, [run])
    return Part(profile, revision, dirty, {**MACHINE, "date": date}, SERVER, found)


def _markdown(combined: parts.Combined) -> str:
    return report.markdown(combined, [], Path("docs"), Path("docs/endurance/parts"))


def _row(text: str, part: Part) -> str:
    (row,) = [line for line in text.splitlines() if line.startswith(f"| `{part.file_name}` |")]
    return row


def test_a_part_stored_is_read_back_the_same(tmp_path: Path) -> None:
    part = _part("Procrastinate", 1000, dirty=True)
    assert parts.store(tmp_path, part) == tmp_path / "procrastinate-1000.json"
    assert parts.load(tmp_path) == [part]


def test_a_later_part_of_the_same_system_and_rate_replaces_the_earlier(tmp_path: Path) -> None:
    parts.store(tmp_path, _part(revision="aaaaaaaaaaaa"))
    path = parts.store(tmp_path, _part(revision="bbbbbbbbbbbb"))
    assert [part.revision for part in parts.load(tmp_path)] == ["bbbbbbbbbbbb"]
    assert list(tmp_path.iterdir()) == [path]


def test_parts_come_by_rate_then_system_in_the_reports_order(tmp_path: Path) -> None:
    for system, rate in [("Procrastinate", 150), ("QueueFlow", 1000), ("QueueFlow", 150), ("PgQueuer", 150)]:
        parts.store(tmp_path, _part(system, rate))
    found = [part.pair for part in parts.load(tmp_path)]
    assert found == [("QueueFlow", 150), ("PgQueuer", 150), ("Procrastinate", 150), ("QueueFlow", 1000)]


def test_no_folder_is_no_parts(tmp_path: Path) -> None:
    assert parts.load(tmp_path / "parts") == []


def test_a_file_that_is_not_a_part_is_named(tmp_path: Path) -> None:
    (tmp_path / "queueflow-150.json").write_text('{"profile": "full"}')
    with pytest.raises(PartError, match=r"queueflow-150\.json is not a part"):
        parts.load(tmp_path)


def test_a_part_under_another_pairs_name_is_refused_rather_than_counted_twice(tmp_path: Path) -> None:
    parts.store(tmp_path, _part()).rename(tmp_path / "queueflow-1000.json")
    with pytest.raises(PartError, match=r"queueflow-1000\.json holds QueueFlow at 150 jobs/s"):
        parts.load(tmp_path)


def test_the_profiles_systems_and_rates_without_a_part_are_missing() -> None:
    combined = parts.combine([_part("Procrastinate", 1000), _part("QueueFlow", 150)], FULL)
    assert [part.pair for part in combined.parts] == [("QueueFlow", 150), ("Procrastinate", 1000)]
    assert combined.missing == [("PgQueuer", 150), ("Procrastinate", 150), ("QueueFlow", 1000), ("PgQueuer", 1000)]
    assert parts.combine([_part(system, rate) for system, rate in combined.missing], FULL).missing == [
        ("QueueFlow", 150),
        ("Procrastinate", 1000),
    ]


def test_parts_of_another_profile_are_never_combined() -> None:
    with pytest.raises(PartError, match=r"pgqueuer-150\.json: measured with the short profile"):
        parts.combine([_part(), _part("PgQueuer", profile=SHORT)], FULL)


def test_parts_measured_with_the_profile_as_it_was_before_a_change_are_not_combined() -> None:
    before = dataclasses.replace(FULL, phase_seconds=300)
    with pytest.raises(PartError, match=r"queueflow-150\.json: .* as it was then: phase_seconds 300 \(now 600\)"):
        parts.combine([_part(profile=before)], FULL)


def test_the_report_names_each_part_and_each_pair_without_one() -> None:
    text = _markdown(parts.combine([_part("QueueFlow", 150), _part("Procrastinate", 1000)], FULL))
    assert "| `queueflow-150.json` | QueueFlow | 150 | 2026-12-08 00:10 UTC | `0123456789ab` |" in text
    assert "| `procrastinate-1000.json` | Procrastinate | 1000 |" in text
    assert (
        "**Not measured yet** (no part): PgQueuer at 150 jobs/s, Procrastinate at 150 jobs/s, QueueFlow at 1000 "
        'jobs/s, PgQueuer at 1000 jobs/s. `make endurance ENDURANCE_ARGS="--system pgqueuer --rate 150"`'
    ) in text
    assert "No part yet of PgQueuer at 150 jobs/s, Procrastinate at 150 jobs/s." in text
    assert "No part yet of QueueFlow at 1000 jobs/s, PgQueuer at 1000 jobs/s." in text
    assert "### QueueFlow at 150 jobs/s" in text
    assert "### Procrastinate at 1000 jobs/s" in text
    assert "revisions**" not in text


def test_a_report_of_every_pair_says_none_is_missing() -> None:
    combined = parts.combine([_part(system, rate, profile=SHORT) for system, rate in parts.pairs(SHORT)], SHORT)
    text = _markdown(combined)
    assert "Every system at every rate of the short profile has its part." in text
    assert "Not measured yet" not in text


def test_the_report_says_which_revision_each_part_ran_when_they_differ() -> None:
    earlier, dirty = _part("QueueFlow", 150, revision="aaaaaaaaaaaa"), _part("QueueFlow", 1000, dirty=True)
    text = _markdown(parts.combine([earlier, dirty, _part("PgQueuer", 150)], FULL))
    assert "**The parts come from 3 revisions**" in text
    assert "`aaaaaaaaaaaa`" in _row(text, earlier)
    assert "`0123456789ab` + uncommitted changes" in _row(text, dirty)
    assert "*+ uncommitted changes*: the tree had changes not in that commit" in text


def test_a_ramp_measured_once_for_two_rates_is_one_row_and_two_ramps_two() -> None:
    other = [RampStep(150.0, 150.0, 150.0, 0, True), RampStep(187.5, 187.5, 187.5, 2, True)]
    shared = _markdown(parts.combine([_part("QueueFlow", 150), _part("QueueFlow", 1000)], FULL))
    assert "| QueueFlow | 150, 1000 jobs/s | 150 jobs/s | 225 | 150 → 150 (0), 188 → 120 ✗ (900) |" in shared
    apart = _markdown(parts.combine([_part("QueueFlow", 150), _part("QueueFlow", 1000, ramp=other)], FULL))
    assert "| QueueFlow | 150 jobs/s |" in apart
    assert "| QueueFlow | 1000 jobs/s | 150 jobs/s | 225 | 150 → 150 (0), 188 → 188 (2) |" in apart


def test_the_report_spans_the_dates_its_parts_were_begun() -> None:
    later = _part("QueueFlow", 1000, date="2026-12-09 02:00 UTC")
    text = _markdown(parts.combine([later, _part()], FULL))
    assert "by runs begun 2026-12-08 00:10 UTC to 2026-12-09 02:00 UTC." in text


def test_bytes_a_job_are_compared_with_procrastinates_at_the_lowest_rate_it_has_a_part() -> None:
    measured = [_part("QueueFlow", 150), _part("QueueFlow", 1000), _part("Procrastinate", 1000)]
    measured[1].run.total_bytes //= 2
    text = _markdown(parts.combine(measured, FULL))
    assert "÷ Procrastinate's, at 1000 jobs/s (target ≤ 1.0 for QueueFlow): QueueFlow 0.50, Procrastinate 1.00." in text
