"""Connecting to MCP servers: the host, one connection per server, and the tasks servers run for it.

Holds :class:`~host_receiver.client.host.Host` (servers by name, the URLs
found to serve only HTTP+SSE), :class:`~host_receiver.client.connection.ClientConnection`
(connecting and agreeing on a version, with the HTTP+SSE fallback in
``_sse_fallback``; one class of mixins over ``_core``: ``_inbound`` routes
what the server sends, ``_sending`` sends for the agreed era, ``_features``
calls tools, prompts and resources), the options, the header mirror, input
rounds (2026-07-28 ``input_required``) and :mod:`.remote_tasks` (following
the tasks a server runs for the host). May import the
session, receiver, transports, auth, protocol and the base; never
``providers``: a client connection works without any LLM backend.
"""
