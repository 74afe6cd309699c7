"""The page and the JSON API as one Starlette app, and what guards them.

The app serves a :class:`~host_receiver.web._board_protocol.Board`: one host's own
:class:`~host_receiver.web._inbox.Inbox` (through :class:`~host_receiver.web._board_protocol.InboxBoard`,
its one token) or the store-backed board of
``host-receiver inbox serve`` (:mod:`._board`: people's tokens, every host's items).

Rules (docs/inbox.md has the API):

- Host: when the inbox serves itself, a request whose ``Host`` header is not
  an address it listens on is refused (400) before anything else: a DNS
  rebinding page cannot reach it through a name of its own. Mounted in a
  host's web app, that app checks hosts (Starlette's TrustedHostMiddleware).
- Origin: a state-changing request (POST) whose ``Origin`` is not the inbox's
  own (where it listens, or its public address) is refused (403) before its credentials are even looked at.
- Credentials: every API request needs ``Authorization: Bearer TOKEN`` or a
  page session in ``X-Inbox-Session``; nothing is a cookie, so nothing the
  browser sends by itself (to another port of the same host included)
  carries a credential. The page, its script and style hold no secret and
  are served without one. The inbox's address is ``/#token=TOKEN``: the
  fragment never reaches a server; the page takes it out of the address bar
  and history, then exchanges it (``POST api/session`` with the bearer
  token) for a session it keeps in ``sessionStorage`` (one origin, one tab).
  The older address, ``/?token=TOKEN``, still opens the page (after the
  same check: 401 when wrong), which does the same. ``/items/ID`` (a
  notification's link) serves the same page, which signs in the same way and
  then shows that item. A signed link (``/items/ID#link=TOKEN``) is
  exchanged the same way (``POST api/items/ID/session`` with
  ``Authorization: Link TOKEN``) for a session that sees that item alone (the
  list and every other item are 404) until the link's time is up; the token
  works only while its item is pending (on a store-backed board, signed with
  the store's key and as the person it was sent to: :mod:`._links`). A session
  is that of whoever signed in (on a store-backed board, a person). A wrong or missing
  credential waits ``auth_delay`` seconds, one failure at a time, then gets 401.
- CSRF: a POST made with a page session carries the session's CSRF token in
  ``X-CSRF-Token`` too; with the bearer token there is nothing more to check.
- An answer's body is read up to ``MAX_ANSWER`` bytes and no further: a
  longer one (by its ``Content-Length`` or by what has come) gets 413 and the
  connection is closed. A body that is not JSON, or nests too deeply for the
  parser, gets 400 with the reason, never a 500.
- Every answer has a Content-Security-Policy allowing only the app's own
  script and style (media as ``data:``), no framing, no referrer, no caching.
  No answer contains the token.
- A store that fails meanwhile (:class:`~host_receiver.errors.StoreError`)
  gets 503 with the reason; the app keeps serving.

Fixed caps (docs/limits.md): ``KEEP_ALIVE``, ``MAX_SESSIONS``, ``MAX_ANSWER``.
"""

from __future__ import annotations

import hmac
import json
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib.resources import files
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from host_receiver.errors import AlreadyAnswered, InvalidAnswer, StoreError, UnknownItem
from host_receiver.web._board_protocol import Board, InboxBoard, Reader
from host_receiver.web._inbox import Inbox
from host_receiver.web._items import body

SESSION_HEADER = "x-inbox-session"
CSRF_HEADER = "x-csrf-token"
CSP = (
    "default-src 'self'; img-src 'self' data:; media-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
#: Seconds between two keep-alive comments on an idle event stream.
KEEP_ALIVE = 15.0
#: Sessions kept at once (each page opened with the token makes one).
MAX_SESSIONS = 100
#: The largest answer taken (bytes).
MAX_ANSWER = 1024 * 1024
_STATIC = {"inbox.js": "text/javascript", "inbox.css": "text/css"}

Endpoint = Callable[[Request, "Session"], Awaitable[Response]]


class Session:
    """Who is asking: the page (a session, with its CSRF token) or an API client (the bearer token);
    ``item``: the one item a session made from a signed link may see (None: every item)."""

    def __init__(self, csrf: str | None, reader: Reader, item: str | None = None) -> None:
        self.csrf = csrf
        self.reader = reader
        self.item = item

    def sees(self, item_id: str) -> bool:
        return self.item is None or self.item == item_id

    @property
    def by(self) -> str:
        return "page" if self.csrf is not None else "api"


class Guard:
    """The checks of the module rules, shared by every route of one app."""

    def __init__(self, board: Board) -> None:
        self.board = board
        #: Session id (``X-Inbox-Session``) -> its CSRF token and who made it.
        self.sessions: dict[str, tuple[str, Reader]] = {}
        #: Session id -> the one item it was made for by a signed link, and until when.
        self.scopes: dict[str, tuple[str, float]] = {}
        self._failures = anyio.Lock()

    def wrong_host(self, request: Request) -> Response | None:
        allowed = self.board.allowed_hosts
        if allowed is None or request.headers.get("host", "").lower() in allowed:
            return None
        return _secure(JSONResponse({"error": "this inbox is not served under that host name"}, 400))

    def wrong_origin(self, request: Request) -> Response | None:
        origin = request.headers.get("origin")
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        public = self.board.public_url
        if origin is None or origin == own or (public is not None and origin == _origin_of(public)):
            return None
        return _secure(JSONResponse({"error": "cross-origin requests are refused"}, 403))

    async def session(self, request: Request) -> Session | None:
        scheme, _, credential = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and credential:
            reader = await self.board.sign_in(credential)
            if reader is not None:
                return Session(None, reader)
        sid = request.headers.get(SESSION_HEADER)
        kept = self.sessions.get(sid) if sid is not None else None
        if sid is None or kept is None:
            return None
        scope = self.scopes.get(sid)
        if scope is not None and time.time() >= scope[1]:
            self.sessions.pop(sid, None)
            self.scopes.pop(sid, None)
            return None
        reader = await self.board.recheck(kept[1])
        if reader is None:  # removed meanwhile: the session ends
            self.sessions.pop(sid, None)
            self.scopes.pop(sid, None)
            return None
        return Session(kept[0], reader, scope[0] if scope is not None else None)

    async def refuse(self) -> Response:
        """401, after a pause (one failure at a time): no fast guessing."""
        async with self._failures:
            await anyio.sleep(self.board.auth_delay)
        return _secure(JSONResponse({"error": "open the inbox's address with its token"}, 401))

    def new_session(self, reader: Reader, item: tuple[str, float] | None = None) -> str:
        """A new session's id, for ``reader`` (for one ``item`` until a time, from a signed link);
        the oldest goes beyond :data:`MAX_SESSIONS`."""
        sid = secrets.token_urlsafe(32)
        self.sessions[sid] = (secrets.token_urlsafe(32), reader)
        if item is not None:
            self.scopes[sid] = item
        if len(self.sessions) > MAX_SESSIONS:
            oldest = next(iter(self.sessions))
            del self.sessions[oldest]
            self.scopes.pop(oldest, None)
        return sid

    def public(
        self, endpoint: Callable[[Request], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        """``endpoint`` (the page, its script and style: no secret in them), checking the host only."""

        async def checked(request: Request) -> Response:
            return self.wrong_host(request) or _secure(await endpoint(request))

        return checked

    def route(
        self, endpoint: Endpoint, *, changes_state: bool = False
    ) -> Callable[[Request], Awaitable[Response]]:
        async def guarded(request: Request) -> Response:
            refused = self.wrong_host(request) or (self.wrong_origin(request) if changes_state else None)
            if refused is not None:
                return refused
            try:
                session = await self.session(request)
                if session is None:
                    return await self.refuse()
                if changes_state and session.csrf is not None:
                    sent = request.headers.get(CSRF_HEADER, "")
                    if request.headers.get("origin") is None or not hmac.compare_digest(sent, session.csrf):
                        return _secure(JSONResponse({"error": "missing or wrong CSRF token"}, 403))
                return _secure(await endpoint(request, session))
            except StoreError as exc:
                return _secure(JSONResponse({"error": str(exc)}, 503))

        return guarded


def _origin_of(url: str) -> str:
    """The origin (``scheme://host[:port]``) of an address."""
    scheme, _, rest = url.partition("://")
    return f"{scheme.lower()}://{rest.split('/', 1)[0].lower()}"


def _secure(response: Response) -> Response:
    response.headers.update(SECURITY_HEADERS)
    return response


def build_app(served: Inbox | Board) -> Starlette:
    """The page, static files and JSON API of a host's inbox or of a board (module rules)."""
    board: Board = InboxBoard(served) if isinstance(served, Inbox) else served
    guard = Guard(board)

    async def index(request: Request) -> Response:
        token = request.query_params.get("token")  # the sign-in link, /?token=TOKEN
        if token is not None:
            try:
                reader = await board.sign_in(token)
            except StoreError as exc:
                return JSONResponse({"error": str(exc)}, 503)
            if reader is None:
                return await guard.refuse()
        return await _page(request)

    async def session_info(request: Request, session: Session) -> Response:
        return JSONResponse({"csrf": session.csrf})

    async def new_session(request: Request, session: Session) -> Response:
        if session.csrf is not None:
            return JSONResponse({"error": "only the inbox's token makes a session"}, 403)
        sid = guard.new_session(session.reader)
        return JSONResponse({"session": sid, "csrf": guard.sessions[sid][0]})

    async def link_session(request: Request) -> Response:
        """A page session for one item, made with its signed link's token (``Authorization: Link``)."""
        refused = guard.wrong_host(request) or guard.wrong_origin(request)
        if refused is not None:
            return refused
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        item_id = request.path_params["id"]
        try:
            granted = await board.redeem_link(item_id, token) if scheme.lower() == "link" else None
        except StoreError as exc:
            return _secure(JSONResponse({"error": str(exc)}, 503))
        if granted is None:
            return await guard.refuse()
        reader, until = granted
        sid = guard.new_session(reader, (item_id, until))
        return _secure(JSONResponse({"session": sid, "csrf": guard.sessions[sid][0]}))

    async def items(request: Request, session: Session) -> Response:
        if session.item is not None:
            return _not_found()
        return JSONResponse(await board.state(session.reader))

    async def item(request: Request, session: Session) -> Response:
        if not session.sees(request.path_params["id"]):
            return _not_found()
        try:
            return JSONResponse(await board.get(session.reader, request.path_params["id"]))
        except UnknownItem:
            return JSONResponse({"error": "no such item"}, 404)

    async def answer(request: Request, session: Session) -> Response:
        raw = await _read_limited(request, MAX_ANSWER)
        if raw is None:
            too_large = {"error": f"the answer is too large: at most {MAX_ANSWER} bytes"}
            return JSONResponse(too_large, 413, headers={"Connection": "close"})
        try:
            payload = json.loads(raw)
        except ValueError as exc:
            return JSONResponse({"error": f"the answer is not JSON: {exc}"}, 400)
        except RecursionError:
            return JSONResponse({"error": "the answer is nested too deeply to be read"}, 400)
        if not isinstance(payload, dict):
            return JSONResponse({"error": "the answer must be a JSON object"}, 400)
        if not session.sees(request.path_params["id"]):
            return _not_found()
        reader, address = session.reader, request.client.host if request.client else None
        try:
            done = await board.answer(
                reader, request.path_params["id"], payload, by=session.by, address=address
            )
        except UnknownItem:
            return JSONResponse({"error": "no such item"}, 404)
        except AlreadyAnswered as exc:
            answered = await board.get(reader, exc.item_id)
            return JSONResponse({"error": "already answered", "item": answered}, 409)
        except InvalidAnswer as exc:
            return JSONResponse({"problems": {k: body(v) for k, v in exc.problems.items()}}, 422)
        return JSONResponse({"item": done})

    async def events(request: Request, session: Session) -> Response:
        stream = _event_stream(board, session.reader, session.item)
        return StreamingResponse(stream, media_type="text/event-stream")

    routes = [
        Route("/", guard.public(index)),
        Route("/inbox.js", guard.public(_static)),
        Route("/inbox.css", guard.public(_static)),
        # A notification's link: the same page, which opens at that item (the credential as at /).
        Route("/items/inbox.js", guard.public(_static)),
        Route("/items/inbox.css", guard.public(_static)),
        Route("/items/{id}", guard.public(_page)),
        Route("/api/session", guard.route(session_info), methods=["GET"]),
        Route("/api/session", guard.route(new_session, changes_state=True), methods=["POST"]),
        Route("/api/items", guard.route(items)),
        Route("/api/items/{id}", guard.route(item)),
        Route("/api/items/{id}/answer", guard.route(answer, changes_state=True), methods=["POST"]),
        Route("/api/items/{id}/session", link_session, methods=["POST"]),
        Route("/api/events", guard.route(events)),
    ]
    return Starlette(routes=routes)


async def _page(request: Request) -> Response:
    return Response(_read("index.html"), media_type="text/html")


async def _static(request: Request) -> Response:
    name = request.url.path.rsplit("/", 1)[-1]
    return Response(_read(name), media_type=_STATIC[name])


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The request's body, or None as soon as it is known to exceed ``limit`` bytes (its declared
    length, or what has come so far): the rest is never read."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    received = bytearray()
    async for chunk in request.stream():
        received += chunk
        if len(received) > limit:
            return None
    return bytes(received)


def _read(name: str) -> bytes:
    return files("host_receiver.web").joinpath("static", name).read_bytes()


async def _event_stream(board: Board, reader: Reader, only: str | None = None) -> AsyncIterator[str]:
    """Server-sent events: ``snapshot``, ``added``, ``resolved`` (JSON data), keep-alive comments,
    and ``closed`` last when the host (or the board) stops (the page then stops reconnecting); of
    item ``only`` alone when given (a signed link's session)."""
    async with board.events(reader) as events:
        while True:
            with anyio.move_on_after(KEEP_ALIVE) as idle:
                try:
                    name, data = await events.receive()
                except anyio.EndOfStream:
                    if board.stopped is not None:
                        reason = json.dumps({"reason": board.stopped})
                        yield f"event: closed\ndata: {reason}\n\n"
                    return
            if idle.cancelled_caught:
                yield ": keep-alive\n\n"
            elif only is not None and not _about(name, data, only):
                continue
            else:
                if only is not None and name == "snapshot":
                    data = {k: [i for i in data[k] if i["id"] == only] for k in ("pending", "history")}
                yield f"event: {name}\ndata: {json.dumps(data, ensure_ascii=True)}\n\n"


def _not_found() -> Response:
    """What a signed link's session gets for any other item, and for the list."""
    return JSONResponse({"error": "no such item"}, 404)


def _about(name: str, data: dict[str, Any], item_id: str) -> bool:
    """Whether event ``name`` concerns item ``item_id`` (a snapshot does, once filtered)."""
    return name == "snapshot" or data.get("id") == item_id
