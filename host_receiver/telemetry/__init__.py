"""OpenTelemetry traces and metrics, per the semantic conventions for MCP and GenAI (docs/observability.md).

The door of the room every span, attribute and instrument host-receiver emits
lives in, with the rules that keep them safe. One module per concern:

* :mod:`._core`: loading ``opentelemetry-api`` lazily, whether anything
  records (``SDK_LOOK_EVERY``), the tracer, the meter and its instruments, the
  span helpers, the caps on server-chosen names;
* :mod:`._mcp`: the MCP spans (requests sent and received, notifications,
  logical calls, session durations) and :func:`network`, :func:`facts`,
  :func:`note_request_id`;
* :mod:`._genai`: the ``chat`` span of a provider call, :func:`report_reply`,
  content capture (:data:`CAPTURE_CONTENT`);
* :mod:`._work`: task traces, tasks active and finished, the wait for a person;
* :mod:`._telemetry`: :class:`Telemetry`, the one public class (each part a
  mixin over the core), :func:`current` and :func:`default_telemetry`.

The room is in the base: it may import only ``errors``, ``sanitize`` and
``protocol.types`` (tests/project/test_structure.py ``BASE``).
"""

from host_receiver.telemetry._core import DISTINCT_NAMES, NAME_LIMIT
from host_receiver.telemetry._core import SDK_LOOK_EVERY as SDK_LOOK_EVERY
from host_receiver.telemetry._genai import CAPTURE_CONTENT, ChatCall, report_reply
from host_receiver.telemetry._mcp import ClientCall, ServerCall, facts, network, note_request_id
from host_receiver.telemetry._telemetry import Telemetry, current, default_telemetry
from host_receiver.telemetry._work import Person, TaskTrace

__all__ = [
    "CAPTURE_CONTENT",
    "DISTINCT_NAMES",
    "NAME_LIMIT",
    "ChatCall",
    "ClientCall",
    "Person",
    "ServerCall",
    "TaskTrace",
    "Telemetry",
    "current",
    "default_telemetry",
    "facts",
    "network",
    "note_request_id",
    "report_reply",
]
