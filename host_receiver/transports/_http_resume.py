"""Legacy (2025-11-25) resumption: the rest of a request's broken SSE answer, by GET.

After the answer stream of a request broke, the client waits the server's
``retry:`` (``default_retry`` until the server sets one) and GETs with
``Last-Event-ID``, up to ``max_reconnects`` attempts in a row that bring no
new event; then the request gets a -32000 error response. Modern servers
have no resumption: their answers carry no event ids, so nothing is resumed.
"""

from __future__ import annotations

import anyio
import httpx

from host_receiver.protocol.types import RequestId
from host_receiver.sanitize import safe_logger
from host_receiver.transports._http_exchange import Cursor, Exchange, closed

__all__ = ["resume"]

logger = safe_logger(__name__)


async def resume(exchange: Exchange, request_id: RequestId, cursor: Cursor) -> None:
    """GET with Last-Event-ID until the answer to ``request_id`` arrives, or give up."""
    fruitless = 0
    while cursor.last_event_id and fruitless < exchange.config.max_reconnects:
        await anyio.sleep(cursor.retry)
        seen = cursor.events
        try:
            async with exchange.open("GET", last_event_id=cursor.last_event_id) as response:
                await exchange.check(response)
                if await exchange.read_events(response, cursor, answer_to=request_id):
                    return
        except httpx.HTTPError as exc:
            logger.debug("resuming the answer to %r failed: %s", request_id, exc)
        except Exception as exc:  # an HTTP error status, or a broken event stream
            logger.warning("cannot resume the answer to %r: %s", request_id, exc)
            break
        fruitless = 0 if cursor.events > seen else fruitless + 1
    await exchange.deliver(closed(request_id, "the server's stream ended before the response"))
