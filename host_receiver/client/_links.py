"""Links a request needs: a 2025-11-25 server's -32042 ``URLElicitationRequiredError``, answered.

A server that cannot go on with a call, read or prompt until the person
completes something in a browser answers it with JSON-RPC error -32042, its
``data.elicitations`` URL-mode elicitation requests (schema
``URLElicitationRequiredError``). Each is offered as the link consent it
is, through the receiver's own routing (:meth:`InboundRouting._fulfil`:
the URL checked, the host's policies, the person's card, the browser opened
only after consent). Once opened, the host waits (at most
``ConnectionOptions.url_elicitation_wait`` seconds, 600 by default) for whichever comes first: the person
saying they are done (the UI's ``link_done`` hook, through
``Requestor.link_done``) or ``notifications/elicitation/complete`` for its
``elicitationId``. Then the request is sent once more with the same
arguments. A link declined, given up, not completed in time or not offered,
and a retry answered with -32042 again, end the request with
:class:`~host_receiver.errors.UrlElicitationRequired` naming the links.

Fixed caps (docs/limits.md): ``MAX_REQUIRED_LINKS``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from host_receiver.errors import RpcError, UrlElicitationRequired
from host_receiver.protocol.params import parse
from host_receiver.protocol.types import ElicitRequestURLParams, dump
from host_receiver.sanitize import safe_logger

__all__ = ["MAX_REQUIRED_LINKS", "complete_links", "required_links"]

logger = safe_logger("host_receiver.client.connection")

#: The most links of one -32042 error that are offered (more are refused: the error names them).
MAX_REQUIRED_LINKS = 8


def required_links(error: RpcError, server: str, method: str) -> list[ElicitRequestURLParams]:
    """The URL-mode elicitations of a -32042 ``error``; UrlElicitationRequired when it holds none
    that could be offered (its ``data.elicitations`` missing, malformed, not URL mode, too many)."""
    data = error.data if isinstance(error.data, dict) else {}
    raw = data.get("elicitations")
    urls = (
        [e["url"] for e in raw if isinstance(e, dict) and isinstance(e.get("url"), str)]
        if isinstance(raw, list)
        else []
    )
    if not isinstance(raw, list) or not raw:
        raise UrlElicitationRequired(
            server, method, "its error -32042 lists no elicitations to offer", urls, error.data
        )
    if len(raw) > MAX_REQUIRED_LINKS:
        raise UrlElicitationRequired(
            server, method, f"it asks for {len(raw)} links, more than {MAX_REQUIRED_LINKS}", urls, error.data
        )
    links = []
    for item in raw:
        try:
            link = parse(ElicitRequestURLParams, item)
        except RpcError as exc:
            why = f"an elicitation of its error -32042 is no URL-mode request ({exc.message})"
            raise UrlElicitationRequired(server, method, why, urls, error.data) from None
        links.append(link)
    return links


#: What the connection lends: the receiver's routing of one input request, the person's word on
#: a link (None: cannot ask), and a listener for the server's completion notification.
Fulfil = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
AskDone = Callable[[dict[str, Any]], Awaitable[str | None]]
Listen = Callable[[str, Callable[[], None]], Callable[[], None]]


async def complete_links(
    links: list[ElicitRequestURLParams],
    *,
    server: str,
    method: str,
    fulfil: Fulfil,
    ask_done: AskDone | None,
    listen: Listen | None,
    wait: float,
) -> None:
    """Offer each link, then wait until it is done, ``wait`` seconds at most for each (rules in
    the module docstring)."""
    for link in links:
        await _complete(link, server, method, fulfil, ask_done, listen, wait)


async def _complete(
    link: ElicitRequestURLParams,
    server: str,
    method: str,
    fulfil: Fulfil,
    ask_done: AskDone | None,
    listen: Listen | None,
    wait: float,
) -> None:
    completed = anyio.Event()
    remove = listen(link.elicitation_id, completed.set) if listen and link.elicitation_id else None
    params = dump(link)

    def ended(why: str) -> UrlElicitationRequired:
        return UrlElicitationRequired(server, method, why, [link.url])

    try:
        try:
            answer = await fulfil("elicitation/create", params)
        except RpcError as exc:
            raise ended(f"the link could not be offered ({exc.message})") from None
        action = answer.get("action")
        if action != "accept":
            raise ended("the link was declined" if action == "decline" else "the link was cancelled")
        said = "complete" if completed.is_set() else await _done(params, ask_done, completed, wait)
        if said is None:
            raise ended(f"it was not completed within {wait:g} s")
        if said == "cancel":
            raise ended("the person gave up on the link")
        logger.info(
            "%s's link for %s is %s: sending it once more",
            server,
            method,
            "complete" if said == "complete" else "done",
        )
    finally:
        if remove is not None:
            remove()


async def _done(
    params: dict[str, Any], ask_done: AskDone | None, completed: anyio.Event, wait: float
) -> str | None:
    """Whichever comes first: the person's word (``done``, ``cancel``) or the server's
    (``complete``); None when neither came within ``wait`` seconds."""
    said: list[str] = []
    with anyio.move_on_after(wait):
        async with anyio.create_task_group() as group:

            async def person() -> None:
                answer = await ask_done(params) if ask_done is not None else None
                if answer is None:
                    await anyio.sleep_forever()  # the person cannot say: the server's word only
                said.append(str(answer))
                group.cancel_scope.cancel()

            async def server_says() -> None:
                await completed.wait()
                said.append("complete")
                group.cancel_scope.cancel()

            group.start_soon(person)
            group.start_soon(server_says)
    return said[0] if said else None
