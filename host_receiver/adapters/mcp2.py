"""host-receiver inside mcp 2.x's ``mcp.Client`` (``pip install 'host-receiver[mcp2]'``: mcp>=2.3,<3).

    import mcp
    from host_receiver.adapters.mcp2 import client_options

    async with mcp.Client(target, **client_options(receiver, server="notes")) as client:
        await client.call_tool("summarise", {"path": "notes.txt"})

Rules:

- The options are ``mcp.Client``'s own keyword arguments: its sampling and
  elicitation callbacks (with ``sampling_capabilities``), exactly for what the
  receiver serves, so the capabilities the client declares are the
  receiver's. The same callbacks answer a 2026-07-28 server's input rounds
  and the requests a 2025-11-25 server pushes; mcp 2.x hosts no tasks, so it
  declares none and a ``task`` member is ignored.
- Each session is its own requestor scope under ``server``, started by its
  first request in the session's own task group, ending with the session.
- Importing this module imports nothing of ``mcp``; calling
  :func:`client_options` does, once it has checked that the extra's libraries
  are installed in its range: if not, it raises :class:`AdapterUnavailable`
  (an ``ImportError``) with the install command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from host_receiver._moved import moved_names
from host_receiver.adapters import options_function

__all__ = ["callback_options", "client_options"]

client_options = options_function("mcp2", "host_receiver.adapters._mcp2", "client_options", "mcp.Client")

#: Only the sampling and elicitation callbacks (no task handlers, no roots), for a framework that
#: builds the session itself and takes just those: Google ADK's ``McpToolset(**callback_options(...))``
#: (docs/frameworks.md).
callback_options = options_function(
    "mcp2", "host_receiver.adapters._mcp2", "callback_options", "McpToolset (sampling and elicitation only)"
)

if not TYPE_CHECKING:  # its old path, until 0.4 (a type checker flags it)
    __getattr__ = moved_names(__name__, {"AdapterUnavailable": "host_receiver.errors"})
