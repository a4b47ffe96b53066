"""W3C trace context parsing (`core.tracecontext`) and which OTEL_* variables turn the server's tracing on."""

from __future__ import annotations

import pytest
from queueflow.core.tracecontext import trace_context
from queueflow.runtime.telemetry import exporters_wanted, tracer_provider_from_env
from queueflow.settings import SettingsError

VALID = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_a_valid_traceparent_is_kept_with_its_tracestate() -> None:
    assert trace_context(VALID) == {"traceparent": VALID}
    assert trace_context(VALID, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE") == {
        "traceparent": VALID,
        "tracestate": "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
    }
    # A later version may carry more fields, which a receiver keeps.
    assert trace_context("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra") is not None


@pytest.mark.parametrize(
    "traceparent",
    [
        "",
        "garbage",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",  # no flags
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  # upper case
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # version ff
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # all-zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  # all-zero parent id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",  # version 00 has nothing more
    ],
)
def test_an_invalid_traceparent_is_ignored_with_its_tracestate(traceparent: str) -> None:
    assert trace_context(traceparent, "rojo=1") is None


def test_an_unusable_tracestate_is_dropped() -> None:
    assert trace_context(VALID, "x" * 513) == {"traceparent": VALID}
    assert trace_context(VALID, "ünicode=1") == {"traceparent": VALID}
    assert trace_context(VALID, "  ") == {"traceparent": VALID}


@pytest.mark.parametrize(
    ("env", "wanted"),
    [
        ({}, []),
        ({"OTEL_SERVICE_NAME": "x"}, []),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, ["otlp"]),
        ({"OTEL_TRACES_EXPORTER": "console,otlp"}, ["console", "otlp"]),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, []),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, []),
    ],
)
def test_tracing_is_on_only_when_an_exporter_is_asked_for(env: dict[str, str], wanted: list[str]) -> None:
    assert exporters_wanted(env) == wanted


def test_a_provider_is_built_from_the_environment_and_an_unknown_exporter_refused() -> None:
    assert tracer_provider_from_env({}) is None
    provider = tracer_provider_from_env({"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "api-7"})
    try:
        assert provider.resource.attributes["service.name"] == "api-7"
    finally:
        provider.shutdown()
    with pytest.raises(SettingsError, match="zipkin"):
        tracer_provider_from_env({"OTEL_TRACES_EXPORTER": "zipkin"})
