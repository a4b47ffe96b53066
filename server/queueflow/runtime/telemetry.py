"""OpenTelemetry from the standard OTEL_* variables, for `queueflow serve` (the `queueflow[otel]` extra).

Tracing is on when the environment asks for an exporter: `OTEL_TRACES_EXPORTER` (`otlp`, `console`, or several,
comma-separated; `none` turns it off) or an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), and `OTEL_SDK_DISABLED` is not `true`. The SDK reads the rest itself:
`OTEL_SERVICE_NAME` (default here: `queueflow`), `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`, the OTLP
exporter's endpoint, headers and timeout. Without the extra installed, asking for traces is a SettingsError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from queueflow.settings import SettingsError

ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def exporters_wanted(env: Mapping[str, str]) -> list[str]:
    """The span exporters the environment asks for (none: tracing stays off)."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    names = [name.strip().lower() for name in env.get("OTEL_TRACES_EXPORTER", "").split(",") if name.strip()]
    if not names:
        return ["otlp"] if any(env.get(name) for name in ENDPOINTS) else []
    return [name for name in names if name != "none"]


def tracer_provider_from_env(env: Mapping[str, str]) -> Any:
    """A tracer provider exporting as `env` says, or None when tracing is not asked for."""
    wanted = exporters_wanted(env)
    if not wanted:
        return None
    try:
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        raise SettingsError(
            "OTEL_* variables ask for traces, but OpenTelemetry is not installed: pip install 'queueflow[otel]'"
        ) from None
    # Attributes given here win over the SDK's own reading of the process environment, so `env` decides.
    service = {SERVICE_NAME: env["OTEL_SERVICE_NAME"]} if env.get("OTEL_SERVICE_NAME") else {}
    if not service and "service.name=" not in env.get("OTEL_RESOURCE_ATTRIBUTES", ""):
        service = {SERVICE_NAME: "queueflow"}
    provider = TracerProvider(resource=Resource.create(service))
    for name in wanted:
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        elif name == "console":
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
        else:
            raise SettingsError(f"OTEL_TRACES_EXPORTER: {name!r} is not one of otlp, console, none")
    return provider
