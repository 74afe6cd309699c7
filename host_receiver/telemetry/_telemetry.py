"""The one public class, :class:`Telemetry` (its parts over the core), and which one records the
work running in this context (:func:`current`, :func:`default_telemetry`).

What a connection does runs with its telemetry current, so the receiver, the
handlers and the providers' call path, which know no connection, record
through the same one.
"""

from __future__ import annotations

from contextvars import ContextVar
from functools import cache
from typing import cast

from host_receiver.telemetry._core import _CURRENT
from host_receiver.telemetry._genai import _GenAI
from host_receiver.telemetry._mcp import _Mcp
from host_receiver.telemetry._work import _Work


class Telemetry(_Mcp, _GenAI, _Work):
    """One tracer and one meter: from the providers given, or the global ones (docs/observability.md).

    Its methods are its parts' (MCP, GenAI, the host's work) over one core
    (``host_receiver/telemetry/``), looked up on the class as any method is.
    """


#: :data:`_CURRENT` as what it holds: only a Telemetry is ever made (typed once, here, for free).
_CURRENT_TELEMETRY = cast("ContextVar[Telemetry | None]", _CURRENT)


def current() -> Telemetry:
    """The telemetry of the work running in this context (outside a connection's: the global one)."""
    return _CURRENT_TELEMETRY.get() or default_telemetry()


@cache
def default_telemetry() -> Telemetry:
    """The Telemetry on the global tracer and meter providers (one per process)."""
    return Telemetry()
