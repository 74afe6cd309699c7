"""Links a request needs: a 2025-11-25 server's -32042 ``URLElicitationRequiredError``, answered.

Contract (host_receiver/client/_links.py): each URL elicitation in the error's
``data.elicitations`` is offered as the link consent it is; once opened, the
host waits (bounded) for the person's Done or ``notifications/elicitation/complete``
for its ``elicitationId``, then sends the request once more with the same
arguments. Declined, given up, not completed in time, or required again: the
request ends with ``UrlElicitationRequired`` naming the link. The server is
``host_receiver.testing.FakeServer``; the real server-everything is in
tests/cli/test_terminal.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from host_receiver import DeclineAll, ElicitationService, FormView, Host, Receiver, ServerConnection, UrlView
from host_receiver.client.options import URL_ELICITATION_WAIT, ConnectionOptions
from host_receiver.errors import URL_ELICITATION_REQUIRED, RpcError, UrlElicitationRequired
from host_receiver.people.approval import LinkDone, UrlAnswer
from host_receiver.protocol.types import ElicitResult
from host_receiver.testing import FakeServer, ToolCall

pytestmark = pytest.mark.anyio

LINK = "https://pay.example.com/authorize?session=1"


def required(url: str = LINK, elicitation_id: str = "e-1") -> RpcError:
    """The -32042 error of a server that needs ``url`` completed first."""
    link = {"mode": "url", "url": url, "message": "Authorize the payment", "elicitationId": elicitation_id}
    return RpcError(URL_ELICITATION_REQUIRED, "Authorization needed.", {"elicitations": [link]})


class Person:
    """Consents to every link; asked whether done, says ``done_answer`` or (None) never answers."""

    def __init__(self, done_answer: LinkDone | None = None) -> None:
        self.done_answer = done_answer
        self.asked_done = anyio.Event()
        self.done_closed = anyio.Event()
        self.consented: list[UrlView] = []

    async def fill_form(self, view: FormView) -> ElicitResult:
        return ElicitResult(action="decline")

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        self.consented.append(view)
        return "accept"

    async def link_done(self, view: UrlView) -> LinkDone:
        self.asked_done.set()
        if self.done_answer is not None:
            return self.done_answer
        try:
            await anyio.sleep_forever()
        finally:
            self.done_closed.set()
        raise AssertionError("unreachable")


@asynccontextmanager
async def connected(
    server: FakeServer, person: object, opened: list[str], **options: Any
) -> AsyncIterator[ServerConnection]:
    def opener(url: str) -> bool:
        opened.append(url)
        return True

    elicitation = ElicitationService(person, opener=opener)  # type: ignore[arg-type]
    async with server, Host(Receiver(elicitation=elicitation), ConnectionOptions(**options)) as host:
        yield await host.connect("pay", server.transport)


def needs_link_once(times: int = 1) -> Any:
    """A tool that answers -32042 its first ``times`` calls, then says what it was called with."""
    calls: list[dict[str, Any]] = []

    async def pay(call: ToolCall) -> str:
        calls.append(call.arguments)
        if len(calls) <= times:
            raise required()
        return f"paid {call.arguments['amount']}"

    return pay, calls


async def test_the_servers_completion_notification_retries_the_call_once_and_closes_the_done_prompt() -> None:
    pay, calls = needs_link_once()
    server = FakeServer(tools={"pay": pay})
    person, opened = Person(), list[str]()
    async with connected(server, person, opened) as connection, anyio.create_task_group() as group:

        async def complete() -> None:
            await person.asked_done.wait()
            await server.notify("notifications/elicitation/complete", {"elicitationId": "e-1"})

        group.start_soon(complete)
        with anyio.fail_after(5):
            result = await connection.call_tool("pay", {"amount": 3})
    assert result.text == "paid 3" and not result.is_error
    assert calls == [{"amount": 3}, {"amount": 3}]  # once more, with the same arguments
    assert opened == [LINK] and person.consented[0].url == LINK
    assert person.consented[0].elicitation_id == "e-1"
    assert person.done_closed.is_set()  # the person's Done prompt was closed


async def test_the_persons_done_retries_the_call() -> None:
    pay, calls = needs_link_once()
    async with connected(FakeServer(tools={"pay": pay}), Person("done"), []) as connection:
        with anyio.fail_after(5):
            assert (await connection.call_tool("pay", {"amount": 5})).text == "paid 5"
    assert len(calls) == 2


async def test_a_declined_link_ends_the_call_naming_it_and_nothing_is_retried() -> None:
    pay, calls = needs_link_once()
    async with connected(FakeServer(tools={"pay": pay}), DeclineAll(), []) as connection:
        with pytest.raises(UrlElicitationRequired) as raised:
            await connection.call_tool("pay", {"amount": 3})
    assert raised.value.code == URL_ELICITATION_REQUIRED and raised.value.urls == (LINK,)
    assert f"needs the link {LINK} completed before tools/call: the link was declined" in str(raised.value)
    assert len(calls) == 1


async def test_giving_up_on_an_opened_link_ends_the_call() -> None:
    pay, calls = needs_link_once()
    async with connected(FakeServer(tools={"pay": pay}), Person("cancel"), []) as connection:
        with pytest.raises(UrlElicitationRequired, match="the person gave up on the link"):
            await connection.call_tool("pay", {"amount": 3})
    assert len(calls) == 1


async def test_a_link_not_completed_in_time_ends_the_call() -> None:
    pay, calls = needs_link_once()
    person = Person()
    server = FakeServer(tools={"pay": pay})
    async with connected(server, person, [], url_elicitation_wait=0.2) as connection:
        with anyio.fail_after(5), pytest.raises(UrlElicitationRequired, match=r"not completed within 0\.2 s"):
            await connection.call_tool("pay", {"amount": 3})
    assert person.done_closed.is_set() and len(calls) == 1


async def test_a_retry_answered_minus_32042_again_ends_the_call_without_a_loop() -> None:
    pay, calls = needs_link_once(times=5)
    async with connected(FakeServer(tools={"pay": pay}), Person("done"), []) as connection:
        with pytest.raises(UrlElicitationRequired, match="it asked for them again"):
            await connection.call_tool("pay", {"amount": 3})
    assert len(calls) == 2


def test_the_wait_for_a_link_is_bounded_by_default_and_must_be_positive() -> None:
    assert ConnectionOptions().url_elicitation_wait == URL_ELICITATION_WAIT == 600.0
    with pytest.raises(ValueError, match="url_elicitation_wait must be more than 0 seconds"):
        ConnectionOptions(url_elicitation_wait=0)


async def test_an_error_with_no_url_elicitation_ends_the_call_saying_so() -> None:
    async def broken(call: ToolCall) -> str:
        raise RpcError(URL_ELICITATION_REQUIRED, "needs a link", {"elicitations": [{"mode": "form"}]})

    person = Person("done")
    async with connected(FakeServer(tools={"broken": broken}), person, []) as connection:
        with pytest.raises(UrlElicitationRequired, match="is no URL-mode request"):
            await connection.call_tool("broken")
    assert not person.consented


async def test_a_link_the_receiver_refuses_is_never_shown_and_the_error_names_it() -> None:
    async def bad(call: ToolCall) -> str:
        raise required(url="javascript:alert(1)")

    person = Person("done")
    async with connected(FakeServer(tools={"bad": bad}), person, []) as connection:
        with pytest.raises(UrlElicitationRequired, match="the link could not be offered") as raised:
            await connection.call_tool("bad")
    assert "javascript:alert(1)" in str(raised.value) and not person.consented


async def test_a_hostile_link_is_named_escaped_in_the_error() -> None:
    async def hostile(call: ToolCall) -> str:
        raise required(url="https://evil.example.com/\x1b[2J\u202eauth")

    async with connected(FakeServer(tools={"hostile": hostile}), DeclineAll(), []) as connection:
        with pytest.raises(UrlElicitationRequired) as raised:
            await connection.call_tool("hostile")
    shown = str(raised.value)
    assert "https://evil.example.com/" in shown
    assert "\x1b" not in shown and "\u202e" not in shown
    assert raised.value.urls == ("https://evil.example.com/\x1b[2J\u202eauth",)  # raw, as sent
