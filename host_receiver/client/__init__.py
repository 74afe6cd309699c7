"""Connecting to MCP servers: the host, one connection per server, and the tasks servers run for it.

Holds :class:`~host_receiver.client.host.Host` (servers by name, the HTTP+SSE
fallback), :class:`~host_receiver.client.connection.ClientConnection`
(connecting and agreeing on a version, sending for the agreed era, tools,
prompts, resources), the options, the header mirror, input rounds
(2026-07-28 ``input_required``) and :mod:`.remote_tasks` (following the
tasks a server runs for the host, and their durable store). May import the
session, receiver, transports, auth, protocol and the base; never
``providers``: a client connection works without any LLM backend.
"""
