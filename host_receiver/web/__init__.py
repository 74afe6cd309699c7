"""The web inbox: a person approves sampling, fills forms and consents to links from a browser.

For hosts that run without a terminal (a daemon, a background agent, CI): a
:class:`WebInbox` is the person's hooks (:class:`~host_receiver.people.approval.SamplingApprover`
and :class:`~host_receiver.people.approval.ElicitationUI`, like the terminal's), and
serves one page on which every pending request of every server of the host
is a card, live (server-sent events), with a JSON API beside it for other
front-ends (docs/inbox.md)::

    inbox = WebInbox(timeout=600)
    receiver = Receiver(sampling=inbox.sampling(registry), elicitation=inbox.elicitation())
    async with inbox.serve(listen="127.0.0.1:0"):
        print(inbox.url)  # open it: the page makes its session
        ...               # connect servers with a Host around the receiver

or mount ``inbox.app`` (an ASGI app) in the host's own Starlette or FastAPI app.

Rules:

- An item nobody answers within ``timeout`` (seconds or a
  :class:`~host_receiver.notify.Duration`; None: never) expires: refused
  (sampling) or cancelled (forms, links) with the reason "no answer within
  10m: expired, nobody refused"; the first answer wins, a second gets 409
  (:mod:`._inbox`).
- The page shows server text as text, never as HTML, escaped by
  :func:`providers.safe_text`; its Content-Security-Policy allows no inline
  script (:mod:`._items`, :mod:`._app`).
- Loopback by default; credentials (the token, then a page session sent as a
  header: no cookie), Origin, CSRF and Host checks on every request
  (:mod:`._app`, :mod:`._serve`).
- Its extra dependencies (Starlette, hypercorn) come with
  ``pip install 'host-receiver[web]'``; without them importing this package is
  an ``ImportError`` that says so.
"""

try:
    import hypercorn  # noqa: F401  (the web extra's dependencies: say so if they are missing)
    import starlette  # noqa: F401
except ModuleNotFoundError as missing:
    raise ImportError(
        "host-receiver's web inbox needs starlette and hypercorn, from the web extra: "
        "pip install 'host-receiver[web]'",
        name=missing.name,
    ) from missing

from host_receiver.web._inbox import WAITING, Item
from host_receiver.web._webinbox import WebInbox

__all__ = ["WAITING", "Item", "WebInbox"]
