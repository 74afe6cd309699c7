"""The lean HTTP stack beneath everything that speaks HTTP (transports, auth, providers).

Holds the connection pool (:mod:`.pool`, an ``httpx.AsyncBaseTransport``),
its HTTP/1.1 (:mod:`.wire`: llhttp when httptools is installed, h11
otherwise), bounded body reading (:mod:`.body`), TLS contexts (:mod:`.tls`) and the
pool's own sockets (:mod:`.socket_stream`). May import only the base
(errors, sanitize); nothing of MCP.
"""
