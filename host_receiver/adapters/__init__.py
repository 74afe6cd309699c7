"""Adapters: host-receiver's receiver inside the MCP clients hosts already run.

Each module serves one client library's server-initiated requests (sampling,
elicitation, and the tasks chapter's ``tasks/*`` where the library has them)
through a :class:`~host_receiver.receiver.Receiver`, with its approval hooks,
providers, limits, forms and audit log:

- :mod:`host_receiver.adapters.mcp1`: mcp 1.x's ``ClientSession``
  (``host-receiver[mcp1]``);
- :mod:`host_receiver.adapters.mcp2`: mcp 2.x's ``mcp.Client``
  (``host-receiver[mcp2]``);
- :mod:`host_receiver.adapters.fastmcp`: ``fastmcp.Client`` 4.x
  (``host-receiver[fastmcp]``).

Rules: the adapters are optional. ``import host_receiver`` imports none of
them, and importing one imports nothing of its library: the library is
imported when its options function is first called. docs/adapters.md says
which versions each supports, what it covers and where it departs from
host-receiver's own connection.
"""
