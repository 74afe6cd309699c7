"""host-receiver inside mcp 1.x's ``ClientSession`` (``pip install 'host-receiver[mcp1]'``: mcp>=1.23,<2).

    from mcp import ClientSession
    from host_receiver.adapters.mcp1 import session_options

    async with ClientSession(read, write, **session_options(receiver, server="notes")) as session:
        await session.initialize()

Rules:

- The options are ``ClientSession``'s own keyword arguments: its sampling and
  elicitation callbacks and its experimental task handlers, exactly for what
  the receiver serves, so the capabilities the session declares are the
  receiver's. A server's task-augmented ``sampling/createMessage`` and
  ``elicitation/create`` become host-receiver tasks, and its ``tasks/get``,
  ``tasks/result``, ``tasks/list`` and ``tasks/cancel`` are answered by the
  receiver, as over host-receiver's own connection.
- Each session is its own requestor scope under ``server``, started by its
  first request in the session's own task group, ending with the session.
  One options mapping may serve several sessions; each still gets its own.
- Importing this module imports nothing of ``mcp``; calling
  :func:`session_options` does, once it has checked that the extra's libraries
  are installed in its range: if not, it raises :class:`AdapterUnavailable`
  (an ``ImportError``) with the install command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from host_receiver._moved import moved_names
from host_receiver.adapters import options_function

__all__ = ["callback_options", "session_options"]

session_options = options_function("mcp1", "host_receiver.adapters._mcp1", "session_options", "ClientSession")

#: Only the sampling and elicitation callbacks (no task handlers, no roots), for a framework that
#: builds the session itself and takes just those: Google ADK's ``McpToolset(**callback_options(...))``
#: (docs/frameworks.md).
callback_options = options_function(
    "mcp1", "host_receiver.adapters._mcp1", "callback_options", "McpToolset (sampling and elicitation only)"
)

if not TYPE_CHECKING:  # its old path, until 0.4 (a type checker flags it)
    __getattr__ = moved_names(__name__, {"AdapterUnavailable": "host_receiver.errors"})
