"""The command's OpenTelemetry SDK, configured from the standard ``OTEL_*`` environment alone.

Rules:

* Traces are exported when ``OTEL_TRACES_EXPORTER`` names an exporter
  (``otlp``, the default kind, or ``console``) or an OTLP endpoint is set
  (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``);
  metrics likewise (``OTEL_METRICS_EXPORTER``,
  ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT``). ``none`` turns one off.
  OTLP goes over HTTP (protobuf); the exporters read their endpoint, headers
  and timeout from the environment themselves.
* ``OTEL_SDK_DISABLED=true`` turns all of it off; so does having no such
  variable set: then no SDK is loaded, nothing is exported and no
  connection is opened. Without the ``otel`` extra a variable that asks for
  export is a warning, not a failure.
* ``OTEL_SERVICE_NAME`` (or ``service.name`` in ``OTEL_RESOURCE_ATTRIBUTES``)
  names the service; the default is ``host-receiver``.
* Every span and metric is flushed when the command ends, however it ends
  (Ctrl-C included): the providers are shut down on the way out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from host_receiver.sanitize import safe_logger

__all__ = ["exporting"]

logger = safe_logger(__name__)

_SIGNALS = {
    "traces": ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
    "metrics": ("OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
}


def _exporter(environ: Mapping[str, str], signal: str) -> str | None:
    """``otlp``, ``console`` or None (off) for ``signal``, from the environment."""
    chooser, endpoint = _SIGNALS[signal]
    chosen = environ.get(chooser, "").strip().lower()
    if chosen:
        return None if chosen == "none" else chosen
    if environ.get(endpoint) or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return "otlp"
    return None


@contextmanager
def exporting(environ: Mapping[str, str]) -> Iterator[None]:
    """The SDK as the environment asks, for the block; flushed and shut down on the way out."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        yield
        return
    traces, metrics = _exporter(environ, "traces"), _exporter(environ, "metrics")
    if traces is None and metrics is None:
        yield
        return
    try:
        from opentelemetry import metrics as metrics_api
        from opentelemetry import trace as trace_api
        from opentelemetry.sdk.resources import OTELResourceDetector, Resource
    except ImportError:
        logger.warning(
            "OTEL_* asks for export, but the otel extra is not installed: pip install 'host-receiver[otel]'"
        )
        yield
        return
    resource = Resource.create({"service.name": "host-receiver"}).merge(OTELResourceDetector().detect())
    if environ.get("OTEL_SERVICE_NAME"):
        resource = resource.merge(Resource({"service.name": environ["OTEL_SERVICE_NAME"]}))
    shutdowns: list[Any] = []
    if traces is not None:
        tracer_provider = _tracer_provider(traces, resource)
        trace_api.set_tracer_provider(tracer_provider)
        shutdowns.append(tracer_provider)
    if metrics is not None:
        meter_provider = _meter_provider(metrics, resource)
        metrics_api.set_meter_provider(meter_provider)
        shutdowns.append(meter_provider)
    try:
        yield
    finally:
        for provider in shutdowns:
            provider.shutdown()


def _tracer_provider(kind: str, resource: Any) -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    exporter: Any
    if kind == "console":
        exporter = ConsoleSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def _meter_provider(kind: str, resource: Any) -> Any:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader

    exporter: Any
    if kind == "console":
        exporter = ConsoleMetricExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        exporter = OTLPMetricExporter()
    return MeterProvider(resource=resource, metric_readers=[PeriodicExportingMetricReader(exporter)])
