"""The endurance harness's pure parts: the pacing of the offered rate, the recorder's counts, "back to baseline"."""

from __future__ import annotations

import json

from bench.endurance.probe import Pressure
from bench.endurance.recorder import Latency, Recorder
from bench.endurance.results import PhaseResult, Sample
from bench.endurance.wire import PAYLOAD_BYTES, Pacer, payload

T0 = 1_000_000.0
"""A wall-clock time; the offsets below are binary fractions, so the schedule's arithmetic is exact."""


def test_the_pacer_offers_the_rate_on_the_clock_and_catches_up_in_one_batch() -> None:
    pacer = Pacer()
    pacer.set_rate(128, T0)
    assert pacer.due(T0 + 0.0078125 / 2) == 0
    assert pacer.wait(T0) == 0.0078125
    assert pacer.due(T0 + 0.0078125) == 1
    pacer.assigned += 1
    # Half a second without sending (a slow commit): the 63 jobs due go at once, none dropped.
    assert pacer.due(T0 + 0.5) == 63
    assert pacer.lag(T0 + 0.5) == 63 / 128


def test_a_new_rate_starts_a_new_schedule_from_the_jobs_assigned() -> None:
    pacer = Pacer()
    pacer.set_rate(100, T0)
    pacer.assigned = 100
    pacer.set_rate(8, T0 + 1)
    assert pacer.due(T0 + 1.0625) == 0
    assert pacer.due(T0 + 1.125) == 1
    pacer.set_rate(0, T0 + 2)
    assert pacer.due(T0 + 3) == 0
    assert pacer.lag(T0 + 3) == 0


def test_a_payload_is_the_issues_256_bytes() -> None:
    assert len(json.dumps(payload(12_345, T0))) == PAYLOAD_BYTES


def test_a_job_started_twice_counts_once_in_the_latency_and_once_as_a_second_delivery() -> None:
    recorder = Recorder()
    recorder.on_producer({"sent": 3, "errors": 1, "lag": 0.0})
    recorder.on_worker({"s": [[0, 5_000], [1, 7_000]], "d": [0]})
    recorder.on_worker({"s": [[1, 900_000]], "d": [1, 1]})
    counts = recorder.counts()
    assert (counts.sent, counts.first_starts, counts.redeliveries, counts.finished, counts.errors) == (3, 2, 1, 2, 1)
    assert (recorder.depth, recorder.outstanding) == (1, 1)
    window = recorder.take_window()
    assert window.count == 2
    assert window.max is not None
    assert window.max < 8
    assert recorder.take_phase().count == 2
    assert recorder.take_phase().count == 0


def test_jobs_written_off_before_a_reset_are_neither_waited_for_nor_counted_again() -> None:
    recorder = Recorder()
    recorder.on_producer({"sent": 5, "errors": 0, "lag": 0.0})
    recorder.on_worker({"s": [[0, 1_000]], "d": [0]})
    assert recorder.write_off() == 4
    assert (recorder.depth, recorder.outstanding) == (0, 0)
    assert recorder.idle.is_set()
    recorder.on_producer({"sent": 6, "errors": 0, "lag": 0.0})
    recorder.on_worker({"s": [[5, 2_000]], "d": []})
    assert (recorder.depth, recorder.outstanding, recorder.counts().redeliveries) == (0, 1, 0)


def _sample(t: float, p99: float | None, depth: int = 0) -> Sample:
    latency = Latency(0 if p99 is None else 1, p99, p99, p99, p99)
    return Sample(t, "after-hold", latency, 150.0, 150.0, depth, 0.0, Pressure(0, 0, 0, 0, 0.0))


def _phase(samples: list[Sample]) -> PhaseResult:
    latency = Latency(0, None, None, None, None)
    return PhaseResult("after-hold", "", 100.0, 30.0, 150.0, 150.0, 150.0, latency, 0, 0, 0, 0, 0, 0, 0.0, [], samples)


def test_back_is_the_window_from_which_every_later_one_stays_within_the_factor() -> None:
    phase = _phase([_sample(105, 90.0), _sample(110, 14.0), _sample(115, 30.0), _sample(120, 18.0), _sample(125, 12.0)])
    assert phase.back_after(12.6) == 20
    assert phase.back_after(None) is None
    assert _phase([_sample(105, 12.0), _sample(110, 90.0)]).back_after(12.6) is None


def test_a_window_where_nothing_started_while_jobs_waited_is_not_back() -> None:
    assert _phase([_sample(105, None, depth=300), _sample(110, 10.0)]).back_after(12.6) == 10
    assert _phase([_sample(105, None, depth=0), _sample(110, 10.0)]).back_after(12.6) == 5
