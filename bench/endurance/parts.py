"""The endurance run in parts. The full profile measures three systems at two rates, an hour of phases each: about six
hours, and a working session on the project's machines lasts at most three, every process ending with it. So each
invocation stores what it measured as one part per system and offered rate, as soon as that rate's run ends, in a
folder beside the report (`<report>/parts/<system>-<rate>.json`: docs/endurance/parts/), and the report, its plots
and results.json are built from every part there, whichever invocation measured it:

    make endurance ENDURANCE_ARGS="--system queueflow --rate 150"     # about 1¼–1½ hours each
    make endurance ENDURANCE_ARGS="--system queueflow --rate 1000"    # ... one pair at a time, six in all
    make endurance ENDURANCE_ARGS="--report-only"                     # the report again, measuring nothing

`make endurance` alone still measures every system at every rate, in one invocation.

A later measurement of a system at a rate replaces its part; one cut short (a failure, the session's end) stores
nothing and leaves the part it would have replaced as it was. A part records what is needed to trust combining it
with the others: the profile with every setting of it, the git revision and whether the tree differed from it, the
machine and the PostgreSQL server. Parts are combined only when every one was measured with the profile as
profiles.py defines it now (`PartError` otherwise, before anything is measured); parts of different revisions are
combined, and the report says which revision each one ran.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from bench.endurance.profiles import Profile
from bench.endurance.results import Results, RunResult, SystemResult
from bench.endurance.systems import SYSTEMS, measured_by

Pair = tuple[str, float]
"""A system's name and an offered rate: what one part holds."""


class PartError(Exception):
    """Parts that cannot be read, or may not be combined into one report."""


def label(system: str, rate: float) -> str:
    return f"{system} at {rate:g} jobs/s"


@dataclass(slots=True)
class Part:
    """One system at one offered rate, as one invocation measured it."""

    profile: Profile
    revision: str | None
    """The commit measured (None: not a git checkout)."""
    dirty: bool
    """Tracked files differed from the commit: the code measured was not quite the revision's."""
    machine: dict[str, Any]
    """`bench.machine.describe()` when the invocation began: date, cores, memory, CPU, load, PostgreSQL's version."""
    server: dict[str, Any]
    """`Results.server`: the invocation's own cluster or a shared server, and the settings it reported."""
    system: SystemResult
    """The system's ramp (one an invocation, before its rates) and, in `runs`, this rate's run alone."""

    @classmethod
    def of(cls, profile: Profile, results: Results, system: SystemResult, run: RunResult) -> Part:
        found = dataclasses.replace(system, runs=[run])
        return cls(profile, results.revision, results.dirty, results.machine, results.server, found)

    @property
    def run(self) -> RunResult:
        return self.system.runs[0]

    @property
    def pair(self) -> Pair:
        return self.system.system, self.run.rate

    @property
    def label(self) -> str:
        return label(*self.pair)

    @property
    def file_name(self) -> str:
        return f"{self.system.system.lower()}-{self.run.rate:g}.json"


def _rank(system: str) -> int:
    """Where SYSTEMS puts `system` (one it does not know, last)."""
    names = list(SYSTEMS)
    return names.index(system.lower()) if system.lower() in names else len(names)


def _order(part: Part) -> tuple[float, int, str]:
    return part.run.rate, _rank(part.system.system), part.system.system


@dataclass(slots=True)
class Combined:
    """Every part present for one profile: what the report, its plots and results.json are built from."""

    profile: Profile
    parts: list[Part]
    """By rate, then system in SYSTEMS' order."""
    missing: list[Pair]
    """The pairs a run of the profile measures by default that no part holds yet."""
    errors: list[str] = field(default_factory=list)
    """The failures of the invocation that built the report (a run that failed stored no part)."""

    @property
    def systems(self) -> list[str]:
        return sorted({part.system.system for part in self.parts}, key=_rank)

    @property
    def rates(self) -> list[float]:
        return sorted({part.run.rate for part in self.parts})

    def part(self, system: str, rate: float) -> Part | None:
        return next((part for part in self.parts if part.pair == (system, rate)), None)

    def write_json(self, path: Path) -> None:
        path.write_bytes(msgspec.json.encode(self))


def pairs(profile: Profile) -> list[Pair]:
    """What a run of `profile` measures when told neither systems nor rates, by rate then system."""
    return [(system.name, rate) for rate in profile.rates for system in measured_by(profile)]


def store(folder: Path, part: Part) -> Path:
    """Writes `part` into `folder`, in place of the part of its system and rate: whole or not at all, since the
    session may end at any moment and must not leave the part it was replacing torn."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / part.file_name
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(msgspec.json.encode(part))
    os.replace(partial, path)
    return path


_DECODER = msgspec.json.Decoder(Part)


def load(folder: Path) -> list[Part]:
    """Every part in `folder` (none when there is no such folder), by rate then system."""
    found = []
    for path in sorted(folder.glob("*.json")):
        try:
            part = _DECODER.decode(path.read_bytes())
        except msgspec.DecodeError as exc:  # a ValidationError too: a part of an older harness's shape
            raise PartError(f"{path.name} is not a part this harness reads ({exc}): move it away") from exc
        if path.name != part.file_name:
            # Its system and rate's own part would be a second one of the same pair.
            raise PartError(f"{path.name} holds {part.label}, whose part is {part.file_name}: rename or move it")
        found.append(part)
    return sorted(found, key=_order)


def _difference(measured: Profile, profile: Profile) -> str | None:
    """How the profile a part was measured with differs from `profile` (None: not at all)."""
    if measured.name != profile.name:
        return f"measured with the {measured.name} profile"
    changed = [
        f"{setting.name} {getattr(measured, setting.name)} (now {getattr(profile, setting.name)})"
        for setting in dataclasses.fields(profile)
        if getattr(measured, setting.name) != getattr(profile, setting.name)
    ]
    return f"measured with the {profile.name} profile as it was then: {', '.join(changed)}" if changed else None


def combine(parts: list[Part], profile: Profile, errors: list[str] | None = None) -> Combined:
    """The parts as one report's figures; PartError unless every one was measured with `profile` as the code defines
    it now (its name and each setting: a phase of another length measures something else)."""
    strangers = [f"{part.file_name}: {found}" for part in parts if (found := _difference(part.profile, profile))]
    if strangers:
        raise PartError(
            f"parts of another profile than the {profile.name} one, never combined into one report: "
            f"{'; '.join(strangers)}. Move them away (and measure their systems and rates again), or give the "
            f"{profile.name} profile's report a place of its own (--output)"
        )
    present = {part.pair for part in parts}
    missing = [pair for pair in pairs(profile) if pair not in present]
    return Combined(profile, sorted(parts, key=_order), missing, list(errors or []))
