"""The JSON-RPC session, driven over the in-memory pair by a raw peer or a second session.

Runs on asyncio and on trio.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from host_receiver.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    ConnectionClosed,
    RpcError,
)
from host_receiver.protocol.jsonrpc import (
    ErrorResponse,
    Message,
    Notification,
    Request,
    Response,
)
from host_receiver.session import IncomingRequest, RequestHandler, Session
from host_receiver.transports.memory import MemoryStream, create_memory_pair

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def session_with_raw_peer(
    handler: RequestHandler | None = None, **kwargs: Any
) -> AsyncIterator[tuple[Session, MemoryStream]]:
    ours, peer = create_memory_pair(**kwargs)
    async with Session(ours, request_handler=handler, name="test peer") as session:
        yield session, peer


async def receive(peer: MemoryStream) -> Message:
    message = await peer.receive()
    assert isinstance(message, Request | Notification | Response | ErrorResponse), message
    return message


async def raw_request(peer: MemoryStream, request_id: Any, method: str, params: Any = None) -> None:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        frame["params"] = params
    await peer.send_raw(json.dumps(frame))


# --- incoming requests ------------------------------------------------------


async def test_a_blocked_handler_does_not_delay_other_requests() -> None:
    release = anyio.Event()

    async def handler(request: IncomingRequest) -> dict[str, Any]:
        if request.method == "slow":
            await release.wait()
        return {"method": request.method}

    async with session_with_raw_peer(handler) as (_, peer):
        await raw_request(peer, 1, "slow")
        await raw_request(peer, 2, "fast")
        assert await receive(peer) == Response(2, {"method": "fast"})
        release.set()
        assert await receive(peer) == Response(1, {"method": "slow"})


async def test_handler_errors_become_error_responses(caplog: pytest.LogCaptureFixture) -> None:
    async def handler(request: IncomingRequest) -> dict[str, Any]:
        if request.method == "refuse":
            raise RpcError(-1, "User rejected", {"why": "no"})
        if request.method == "grouped":
            async with anyio.create_task_group():
                raise RpcError(-32602, "bad params")
        if request.method == "not-json":
            return {"when": object()}
        raise KeyError("secret internals")

    async with session_with_raw_peer(handler) as (_, peer):
        await raw_request(peer, "a", "refuse")
        assert await receive(peer) == ErrorResponse("a", RpcError(-1, "User rejected", {"why": "no"}))
        await raw_request(peer, "b", "grouped")
        assert await receive(peer) == ErrorResponse("b", RpcError(-32602, "bad params"))
        await raw_request(peer, "c", "crash")
        assert await receive(peer) == ErrorResponse("c", RpcError(INTERNAL_ERROR, "Internal error"))
        await raw_request(peer, "d", "not-json")
        assert await receive(peer) == ErrorResponse("d", RpcError(INTERNAL_ERROR, "Internal error"))
    assert "secret internals" in caplog.text  # logged with its traceback, never sent


async def test_a_handler_may_answer_at_once_without_an_awaitable(caplog: pytest.LogCaptureFixture) -> None:
    def handler(request: IncomingRequest) -> dict[str, Any]:
        if request.method == "refuse":
            raise RpcError(-1, "User rejected")
        if request.method == "crash":
            raise KeyError("secret internals")
        if request.method == "wrong":
            return ["not", "a", "dict"]  # type: ignore[return-value]
        return {"method": request.method}

    async with session_with_raw_peer(handler) as (_, peer):
        await raw_request(peer, 1, "now")
        assert await receive(peer) == Response(1, {"method": "now"})
        await raw_request(peer, 2, "refuse")
        assert await receive(peer) == ErrorResponse(2, RpcError(-1, "User rejected"))
        await raw_request(peer, 3, "crash")
        assert await receive(peer) == ErrorResponse(3, RpcError(INTERNAL_ERROR, "Internal error"))
        await raw_request(peer, 4, "wrong")
        assert await receive(peer) == ErrorResponse(4, RpcError(INTERNAL_ERROR, "Internal error"))
    assert "secret internals" in caplog.text


async def test_answers_and_notify_soon_keep_their_order_when_the_stream_is_full() -> None:
    def handler(request: IncomingRequest) -> dict[str, Any]:
        return {"n": request.id}

    async with session_with_raw_peer(handler, max_buffer_size=1) as (session, peer):
        for n in range(1, 4):
            await raw_request(peer, n, "count")
        await settle_until(
            lambda: session._outbox is not None and session._outbox.waiting == 2
        )  # one message fits, two wait
        session.notify_soon("notifications/message", {"after": 3})
        await raw_request(peer, 4, "count")
        got = [await receive(peer) for _ in range(5)]
        assert got == [
            Response(1, {"n": 1}),
            Response(2, {"n": 2}),
            Response(3, {"n": 3}),
            Notification("notifications/message", {"after": 3}),
            Response(4, {"n": 4}),
        ]


async def test_notify_soon_after_the_session_closed_is_dropped_quietly() -> None:
    async with session_with_raw_peer() as (session, _):
        pass
    session.notify_soon("notifications/message", {"late": True})  # must not raise


async def settle_until(condition: Any, attempts: int = 100) -> None:
    for _ in range(attempts):
        if condition():
            return
        await anyio.lowlevel.checkpoint()
    raise AssertionError("condition never became true")


async def test_without_a_handler_every_method_is_unknown_but_ping_works() -> None:
    async with session_with_raw_peer() as (_, peer):
        await raw_request(peer, 1, "sampling/createMessage")
        reply = await receive(peer)
        assert isinstance(reply, ErrorResponse)
        assert reply.error.code == METHOD_NOT_FOUND
        await raw_request(peer, 2, "ping")
        assert await receive(peer) == Response(2, {})


async def test_the_handler_sees_meta_and_progress_token() -> None:
    seen: list[IncomingRequest] = []

    async def handler(request: IncomingRequest) -> dict[str, Any]:
        seen.append(request)
        return {}

    async with session_with_raw_peer(handler) as (_, peer):
        await raw_request(peer, 1, "m", {"_meta": {"progressToken": "tok"}, "x": 1})
        await receive(peer)
        await raw_request(peer, 2, "m")
        await receive(peer)
    assert seen[0].meta == {"progressToken": "tok"}
    assert seen[0].progress_token == "tok"
    assert seen[0].params == {"_meta": {"progressToken": "tok"}, "x": 1}
    assert (seen[1].meta, seen[1].progress_token) == (None, None)


async def test_peer_cancellation_stops_the_handler_and_suppresses_the_reply() -> None:
    started, stopped = anyio.Event(), anyio.Event()

    async def handler(request: IncomingRequest) -> dict[str, Any]:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        return {}  # pragma: no cover

    async with session_with_raw_peer(handler) as (_, peer):
        await raw_request(peer, 5, "slow")
        await started.wait()
        await peer.send(Notification("notifications/cancelled", {"requestId": 5, "reason": "user"}))
        await stopped.wait()
        # The next frame is the ping's answer: nothing was sent for request 5.
        await raw_request(peer, 6, "ping")
        assert await receive(peer) == Response(6, {})


async def test_notifications_reach_the_handler_in_order() -> None:
    got: list[tuple[str, Any]] = []
    done = anyio.Event()

    async def on_notification(method: str, params: dict[str, Any] | None) -> None:
        await anyio.lowlevel.checkpoint()  # a handler that yields must not reorder anything
        got.append((method, params))
        if len(got) == 20:
            done.set()

    ours, peer = create_memory_pair()
    async with Session(ours, notification_handler=on_notification):
        for n in range(20):
            await peer.send(Notification("notifications/message", {"n": n}))
        await done.wait()
    assert got == [("notifications/message", {"n": n}) for n in range(20)]


# --- outgoing requests -----------------------------------------------------


async def test_request_returns_the_result_or_raises_the_error() -> None:
    async with session_with_raw_peer() as (session, peer), anyio.create_task_group() as tg:

        async def answer() -> None:
            first = await receive(peer)
            assert first == Request(1, "tools/list", {"cursor": "c"})
            await peer.send(Response(1, {"tools": []}))
            second = await receive(peer)
            assert isinstance(second, Request)
            await peer.send(ErrorResponse(second.id, RpcError(-32601, "nope")))

        tg.start_soon(answer)
        assert await session.request("tools/list", {"cursor": "c"}) == {"tools": []}
        with pytest.raises(RpcError) as caught:
            await session.request("resources/list")
        assert caught.value == RpcError(-32601, "nope")


async def test_timeout_raises_and_tells_the_peer() -> None:
    async with session_with_raw_peer() as (session, peer):
        with pytest.raises(TimeoutError):
            await session.request("tools/call", {"name": "slow"}, timeout=0.05)
        sent = await receive(peer)
        assert isinstance(sent, Request)
        assert await receive(peer) == Notification(
            "notifications/cancelled", {"requestId": sent.id, "reason": "timed out"}
        )


async def test_caller_cancellation_tells_the_peer_but_initialize_is_never_cancelled() -> None:
    async with session_with_raw_peer() as (session, peer):
        with anyio.move_on_after(0.05):
            await session.request("initialize", {})
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.request, "tools/call")
                while not isinstance(await receive(peer), Request):
                    pass
                tg.cancel_scope.cancel()
        assert not scope.cancel_called
        notice = await receive(peer)
        assert notice == Notification(
            "notifications/cancelled", {"requestId": 2, "reason": "cancelled by the caller"}
        )


async def test_a_peer_ends_only_the_outgoing_requests_it_may_end_by_cancelling_them() -> None:
    """A 2026-07-28 server tears a subscriptions/listen down with notifications/cancelled naming it;
    any other outgoing request stays pending (the id may be one of the peer's own requests)."""
    ids: list[Any] = []
    async with session_with_raw_peer() as (session, peer), anyio.create_task_group() as tg:

        async def other() -> None:
            assert await session.request("tools/list") == {"tools": []}

        tg.start_soon(other)
        plain = await receive(peer)
        assert isinstance(plain, Request)
        await peer.send(Notification("notifications/cancelled", {"requestId": plain.id, "reason": "no"}))

        async def end_listen() -> None:
            listen = await receive(peer)
            assert isinstance(listen, Request) and [listen.id] == ids
            await peer.send(
                Notification("notifications/cancelled", {"requestId": listen.id, "reason": "bye"})
            )

        tg.start_soon(end_listen)
        with pytest.raises(ConnectionClosed, match="test peer ended request 2: bye"):
            await session.request("subscriptions/listen", {}, sent_as=ids.append, peer_ends=True)
        await peer.send(Response(plain.id, {"tools": []}))  # still waited for


async def test_progress_arrives_in_order_before_the_result() -> None:
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        await anyio.lowlevel.checkpoint()
        updates.append((progress, total, message))

    async with session_with_raw_peer() as (session, peer), anyio.create_task_group() as tg:

        async def serve() -> None:
            request = await receive(peer)
            assert isinstance(request, Request) and request.params is not None
            assert request.params["keep"] == 1
            meta = request.params["_meta"]
            assert meta["other"] == "kept"
            for step in range(1, 6):
                await peer.send(
                    Notification(
                        "notifications/progress",
                        {"progressToken": meta["progressToken"], "progress": step, "total": 5},
                    )
                )
            await peer.send(
                Notification(
                    "notifications/progress",
                    {"progressToken": meta["progressToken"], "progress": 6, "message": "done"},
                )
            )
            await peer.send(Response(request.id, {"ok": True}))

        tg.start_soon(serve)
        params = {"keep": 1, "_meta": {"other": "kept"}}
        result = await session.request("tools/call", params, on_progress=on_progress)
        assert params == {"keep": 1, "_meta": {"other": "kept"}}  # the caller's dict is untouched
    assert result == {"ok": True}
    assert updates == [(float(n), 5.0, None) for n in range(1, 6)] + [(6.0, None, "done")]


async def test_two_sessions_talk_both_ways() -> None:
    a, b = create_memory_pair()

    async def server(request: IncomingRequest) -> dict[str, Any]:
        # The server asks the client something while answering.
        answer = await server_session.request("sampling/createMessage", {"q": request.params})
        return {"relayed": answer}

    async def client(request: IncomingRequest) -> dict[str, Any]:
        return {"echo": request.params}

    async with (
        Session(a, request_handler=client) as client_session,
        Session(b, request_handler=server) as server_session,
    ):
        await client_session.ping()
        result = await client_session.request("tools/call", {"name": "t"})
    assert result == {"relayed": {"echo": {"q": {"name": "t"}}}}


# --- malformed traffic ------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "code", "reply_id"),
    [
        ("{oops", PARSE_ERROR, None),
        ('[{"jsonrpc":"2.0","id":1,"method":"ping"}]', INVALID_REQUEST, None),
        ('{"jsonrpc":"2.0","id":9,"method":"m","params":[1]}', INVALID_REQUEST, 9),
        ('{"jsonrpc":"2.0","id":{"a":1},"method":"m"}', INVALID_REQUEST, None),
    ],
)
async def test_malformed_frames_get_an_error_and_the_session_goes_on(
    frame: str, code: int, reply_id: Any
) -> None:
    async with session_with_raw_peer() as (_, peer):
        await peer.send_raw(frame)
        reply = await receive(peer)
        assert isinstance(reply, ErrorResponse)
        assert (reply.id, reply.error.code) == (reply_id, code)
        await raw_request(peer, "after", "ping")
        assert await receive(peer) == Response("after", {})


async def test_unknown_and_broken_responses_are_logged_and_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="host_receiver.session")
    async with session_with_raw_peer() as (_, peer):
        await peer.send(Response(999, {}))
        await peer.send_raw('{"jsonrpc":"2.0","id":3,"result":[]}')
        await raw_request(peer, "after", "ping")
        assert await receive(peer) == Response("after", {})  # no error sent for either
    assert "unknown request id 999" in caplog.text
    assert "malformed message" in caplog.text


# --- shutdown ---------------------------------------------------------------


async def test_closing_fails_pending_requests_cancels_handlers_and_flushes_replies() -> None:
    handler_cancelled = anyio.Event()
    reply_computed = anyio.Event()
    outcome: list[BaseException] = []

    async def handler(request: IncomingRequest) -> dict[str, Any]:
        if request.method == "forever":
            try:
                await anyio.sleep_forever()
            finally:
                handler_cancelled.set()
        reply_computed.set()
        return {"computed": True}

    async def call(session: Session) -> None:
        try:
            await session.request("tools/call")
        except ConnectionClosed as exc:
            outcome.append(exc)

    # No buffer: the computed reply waits until the peer reads it, after closing began.
    ours, peer = create_memory_pair(max_buffer_size=0)
    async with anyio.create_task_group() as outer, Session(ours, request_handler=handler) as session:
        outer.start_soon(call, session)
        assert isinstance(await receive(peer), Request)
        await raw_request(peer, "f", "forever")
        await raw_request(peer, "c", "compute")
        await reply_computed.wait()

        async def read_after_close() -> None:
            await session.wait_closed()
            assert await receive(peer) == Response("c", {"computed": True})

        outer.start_soon(read_after_close)
    assert handler_cancelled.is_set()
    assert len(outcome) == 1 and "closed" in str(outcome[0])
    with pytest.raises(ConnectionClosed):
        await session.request("ping")


async def test_end_of_the_peers_stream_ends_the_session() -> None:
    outcome: list[BaseException] = []
    async with session_with_raw_peer() as (session, peer), anyio.create_task_group() as tg:

        async def call() -> None:
            with pytest.raises(ConnectionClosed) as caught:
                await session.request("tools/call")
            outcome.append(caught.value)

        tg.start_soon(call)
        await receive(peer)
        await peer.aclose()
        await session.wait_closed()
    assert session.closed_reason == "test peer closed the connection"
    assert "test peer closed the connection" in str(outcome[0])
