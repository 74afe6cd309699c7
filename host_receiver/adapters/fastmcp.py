"""host-receiver inside ``fastmcp.Client`` 4.x (``pip install 'host-receiver[fastmcp]'``: fastmcp>=4.0,<5).

    import fastmcp
    from host_receiver.adapters.fastmcp import client_options

    async with fastmcp.Client(target, **client_options(receiver, server="notes")) as client:
        await client.call_tool("summarise", {"path": "notes.txt"})

Rules:

- The options are ``fastmcp.Client``'s own keyword arguments: its
  ``sampling_handler`` (with ``sampling_capabilities``) and
  ``elicitation_handler``, exactly for what the receiver serves. They answer
  what a 2025-11-25 server pushes (``ctx.elicit``,
  ``ctx.session.create_message``), a 2026-07-28 server's input rounds, and,
  with ``fastmcp_tasks`` imported, the form a task asks for.
- Each session is its own requestor scope under ``server``, started by its
  first request in the session's own task group, ending with the session.
- Importing this module imports nothing of ``fastmcp``; calling
  :func:`client_options` does, once it has checked that the extra's libraries
  are installed in its range: if not, it raises :class:`AdapterUnavailable`
  (an ``ImportError``) with the install command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from host_receiver._moved import moved_names
from host_receiver.adapters import options_function, target_options_function

__all__ = ["client_options", "toolset_options"]

client_options = options_function(
    "fastmcp", "host_receiver.adapters._fastmcp", "client_options", "fastmcp.Client"
)

toolset_options = target_options_function(
    "fastmcp",
    "host_receiver.adapters._fastmcp",
    "toolset_options",
    "pydantic-ai ``MCPToolset`` keyword arguments: ``client``, a ``fastmcp.Client`` of ``target`` built\n"
    "with :func:`client_options`, so it declares the receiver's capabilities (``sampling.tools`` included,\n"
    "which ``MCPToolset``'s own client would drop). ``MCPToolset(**toolset_options(target, receiver,\n"
    'server="notes"))``; raises :class:`AdapterUnavailable` like :func:`client_options`.\n',
)

if not TYPE_CHECKING:  # its old path, until 0.4 (a type checker flags it)
    __getattr__ = moved_names(__name__, {"AdapterUnavailable": "host_receiver.errors"})
