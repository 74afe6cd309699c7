"""A loopback OTLP/HTTP receiver: what an OpenTelemetry SDK exports, decoded from its protobuf.

``with OtlpReceiver() as otlp:`` serves ``otlp.url`` (``/v1/traces``,
``/v1/metrics``) on 127.0.0.1 from a thread; every payload is decoded with
opentelemetry-proto into :class:`ExportedSpan` and metric names with their
data points, as a backend would see them. :meth:`OtlpReceiver.tree` draws the
spans of one trace as an indented tree (the drawing docs/observability.md
shows). The :func:`exported` fixture is the real SDK (batch span processor,
periodic metric reader) exporting to one, through a :class:`Telemetry` of its
own providers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from host_receiver.telemetry import Telemetry
from tests.serving import ServerThread

_KINDS = {1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


@dataclass
class ExportedSpan:
    """One span as the receiver decoded it (ids in hex)."""

    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    links: list[tuple[str, str]]
    status: int
    service: str
    start: int

    @property
    def failed(self) -> bool:
        return self.status == 2


@dataclass
class ExportedPoint:
    """One data point of a metric: its attributes, and its sum (histograms and counters alike)."""

    attributes: dict[str, Any]
    value: float
    count: int


@dataclass
class OtlpReceiver:
    """The receiver (rules in the module docstring)."""

    spans: list[ExportedSpan] = field(default_factory=list)
    metrics: dict[str, list[ExportedPoint]] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    posts: int = 0

    def __enter__(self) -> OtlpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                receiver._take(self.path, body)
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._serving = ServerThread(self._server)  # stopped at once, without a shutdown poll
        self._serving.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._serving.stop()
        self._server.server_close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def _take(self, path: str, body: bytes) -> None:
        self.posts += 1
        if path == "/v1/traces":
            traces = ExportTraceServiceRequest.FromString(body)
            for resource in traces.resource_spans:
                service = next(
                    (_value(a.value) for a in resource.resource.attributes if a.key == "service.name"), ""
                )
                for scope in resource.scope_spans:
                    self.spans.extend(_span(span, service) for span in scope.spans)
        elif path == "/v1/metrics":
            metrics = ExportMetricsServiceRequest.FromString(body)
            for resource in metrics.resource_metrics:
                for scope in resource.scope_metrics:
                    for metric in scope.metrics:
                        self.units[metric.name] = metric.unit
                        self.metrics.setdefault(metric.name, []).extend(_points(metric))

    def named(self, name: str) -> list[ExportedSpan]:
        """The spans called ``name``."""
        return [span for span in self.spans if span.name == name]

    def one(self, name: str) -> ExportedSpan:
        """The one span called ``name``."""
        (span,) = self.named(name)
        return span

    def tree(self, root: ExportedSpan, others: Sequence[ExportedSpan] = ()) -> str:
        """``root`` and its descendants (among these spans and ``others``) as an indented tree:
        name, kind, service, in the order they started."""
        children: dict[str, list[ExportedSpan]] = {}
        for span in [*self.spans, *others]:
            children.setdefault(span.parent_id, []).append(span)

        def lines(span: ExportedSpan, depth: int) -> Iterator[str]:
            yield f"{'    ' * depth}{span.name} ({span.kind}, {span.service})"
            for child in sorted(children.get(span.span_id, []), key=lambda s: s.start):
                yield from lines(child, depth + 1)

        return "\n".join(lines(root, 0))


def _span(span: Any, service: str) -> ExportedSpan:
    return ExportedSpan(
        name=span.name,
        kind=_KINDS.get(span.kind, str(span.kind)),
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_id=span.parent_span_id.hex(),
        attributes={a.key: _value(a.value) for a in span.attributes},
        events=[(e.name, {a.key: _value(a.value) for a in e.attributes}) for e in span.events],
        links=[(link.trace_id.hex(), link.span_id.hex()) for link in span.links],
        status=span.status.code,
        service=service,
        start=span.start_time_unix_nano,
    )


def _points(metric: Any) -> Iterator[ExportedPoint]:
    kind = metric.WhichOneof("data")
    for point in getattr(metric, kind).data_points:
        attributes = {a.key: _value(a.value) for a in point.attributes}
        if kind == "histogram":
            yield ExportedPoint(attributes, point.sum, point.count)
        else:
            yield ExportedPoint(attributes, point.as_double or point.as_int, 1)


@dataclass
class Exported:
    """The receiver, and the Telemetry whose providers export to it."""

    otlp: OtlpReceiver
    telemetry: Telemetry
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    flushed: bool = False

    def flush(self) -> None:
        """Export everything recorded (the providers are shut down, as the CLI does at exit)."""
        if not self.flushed:
            self.flushed = True
            self.tracer_provider.shutdown()
            self.meter_provider.shutdown()


@pytest.fixture
def exported() -> Iterator[Exported]:
    with OtlpReceiver() as otlp:
        resource = Resource.create({"service.name": "host-receiver"})
        tracer_provider = TracerProvider(resource=resource)
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(f"{otlp.url}/v1/traces")))
        reader = PeriodicExportingMetricReader(OTLPMetricExporter(f"{otlp.url}/v1/metrics"))
        meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
        telemetry = Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)
        done = Exported(otlp, telemetry, tracer_provider, meter_provider)
        try:
            yield done
        finally:
            done.flush()
