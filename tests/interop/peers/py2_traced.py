"""Interop peer: py2_server.py (mcp 2.3.0) with the OpenTelemetry SDK on, so its built-in MCP spans are kept.

Every span the SDK ends is written as one JSON line to the file named by
``PEER_SPANS`` (the SDK's own ``to_json``), flushed as it ends; the test reads
them beside what the host exported. mcp 2.x injects ``traceparent`` into the
``_meta`` of every request it sends and parents its server spans on the one it
receives: with this wrapper its trace and the host's can be checked to be one.

    .peers/py2/bin/python tests/interop/peers/py2_traced.py [py2_server.py's arguments]
"""

from __future__ import annotations

import atexit
import os
import runpy
import sys
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

SERVER = Path(__file__).resolve().parent / "py2_server.py"


def one_line(span: ReadableSpan) -> str:
    return span.to_json(indent=None) + "\n"


spans = open(os.environ["PEER_SPANS"], "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - open for the run
provider = TracerProvider(resource=Resource.create({"service.name": "py2-peer"}))
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=spans, formatter=one_line)))
trace.set_tracer_provider(provider)
atexit.register(provider.shutdown)
sys.argv[0] = str(SERVER)
runpy.run_path(str(SERVER), run_name="__main__")
