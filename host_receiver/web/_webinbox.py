"""The web inbox a host uses: the hooks (:mod:`._inbox`), its page as an ASGI app, serving it."""

from __future__ import annotations

import functools
from contextlib import AbstractAsyncContextManager

from starlette.applications import Starlette

from host_receiver.notify import Duration, Notifier
from host_receiver.web._app import build_app
from host_receiver.web._inbox import Inbox
from host_receiver.web._serve import serve


class WebInbox(Inbox):
    """A person's hooks answered from a web page, the page as an ASGI app, and a way to serve it alone.

    ``timeout``: how long an item waits for an answer, in seconds or as a
    :class:`~host_receiver.notify.Duration` (quoted as given when it expires; None: forever);
    ``auth_delay``: the pause before a 401. ``notifier`` (run by the host: ``async with``) is told
    of every item's events (docs/notify.md): waiting, a reminder every ``remind_every`` seconds,
    escalated after ``escalate_after`` seconds (to its escalation channels), expired, answered;
    ``notify_content`` puts an excerpt of the request in them; ``host`` names this machine there.
    With ``signed_links`` a notice's link signs its holder in for that one item, for ``link_ttl``
    seconds or until it is answered (docs/notify.md).
    """

    def __init__(
        self,
        *,
        timeout: float | Duration | None = 600.0,
        auth_delay: float = 1.0,
        notifier: Notifier | None = None,
        notify_content: bool = False,
        remind_every: float | None = None,
        escalate_after: float | None = None,
        host: str | None = None,
        signed_links: bool = False,
        link_ttl: float = 3600.0,
    ) -> None:
        super().__init__(
            timeout=timeout,
            auth_delay=auth_delay,
            notifier=notifier,
            notify_content=notify_content,
            remind_every=remind_every,
            escalate_after=escalate_after,
            host=host,
            signed_links=signed_links,
            link_ttl=link_ttl,
        )

    @property
    def url(self) -> str:
        """The address to open, the token in its fragment (never sent to a server); :meth:`serve`
        must be running."""
        if self.origin is None:
            raise RuntimeError("the inbox is not being served: use `async with inbox.serve(...)`")
        return f"{self.origin}/#token={self.token}"

    def serve(
        self, listen: str = "127.0.0.1:0", *, certfile: str | None = None, keyfile: str | None = None
    ) -> AbstractAsyncContextManager[WebInbox]:
        """Serve the page alone (hypercorn) for a block: ``async with inbox.serve(listen="127.0.0.1:0")``.

        ``listen`` is ``HOST:PORT`` (port 0: a free one); TLS with ``certfile`` and ``keyfile``.
        Raises OSError when it cannot listen there.
        """
        return serve(self, self.app, listen, certfile=certfile, keyfile=keyfile)

    @functools.cached_property
    def app(self) -> Starlette:
        """The ASGI app (Starlette) to mount in a host's own web app."""
        return build_app(self)
