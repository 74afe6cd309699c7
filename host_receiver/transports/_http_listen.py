"""The standalone GET stream (2025-11-25): where a legacy server sends messages of its own.

Rules:

- Opened once the MCP layer asks (``Binding.open_listener``, after
  ``initialized``); 405, or an answer that is not SSE, means the server
  offers none, and the connection goes on without it.
- The stream is reopened (with ``Last-Event-ID`` when the server sent event
  ids) after the server's ``retry:``, until ``max_reconnects`` attempts in a
  row bring no new event; then a warning says server requests may not arrive.
- It is not reopened once the connection is closing: the server ends the
  stream when the session is deleted, and a GET after the DELETE is noise.
- When ``max_reconnects`` attempts in a row cannot connect at all, the
  server is gone: the connection fails, instead of waiting for messages
  that cannot come.
"""

from __future__ import annotations

import anyio
import httpx
from anyio.abc import TaskStatus

from host_receiver.errors import SessionExpired, TransportError
from host_receiver.sanitize import safe_logger
from host_receiver.transports._http_exchange import SSE, Cursor, Exchange, content_type

__all__ = ["listen"]

logger = safe_logger(__name__)


async def listen(exchange: Exchange, *, task_status: TaskStatus[None]) -> None:
    """Keep the standalone GET stream open for messages the server starts."""
    config = exchange.config
    cursor = Cursor(retry=config.default_retry)
    started = False
    fruitless = 0
    unreachable = 0  # attempts in a row that found nobody listening
    try:
        while fruitless < config.max_reconnects:
            if exchange.closed:
                break
            seen = cursor.events
            try:
                async with exchange.open("GET", last_event_id=cursor.last_event_id) as response:
                    if response.status_code == 405:
                        logger.info("%s offers no GET stream (405)", config.url)
                        break
                    await exchange.check(response)
                    if content_type(response) != SSE:
                        logger.warning("the GET answer from %s is not SSE; not listening", config.url)
                        break
                    if not started:
                        task_status.started()
                        started = True
                    await exchange.read_events(response, cursor, answer_to=None)
                unreachable = 0
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                unreachable += 1
                logger.debug("GET stream cannot connect: %s", exc)
            except httpx.HTTPError as exc:
                unreachable = 0
                logger.debug("GET stream broke: %s", exc)
            fruitless = 0 if cursor.events > seen else fruitless + 1
            if fruitless < config.max_reconnects:
                await anyio.sleep(cursor.retry)
        else:
            if unreachable >= config.max_reconnects:
                exchange.fail(TransportError(f"the server at {config.url} cannot be reached any more"))
                return
            logger.warning("GET stream to %s is gone; server requests may not arrive", config.url)
    except SessionExpired:
        if not started:
            raise
        return
    except Exception as exc:  # an HTTP error status, or a broken event stream
        logger.warning("GET stream to %s failed: %s", config.url, exc)
    if not started:
        task_status.started()
