"""The web inbox under a hostile server or client: what it shows is bounded and escaped, what it
reads is bounded, and a bad answer is a 400 while the inbox keeps serving (docs/security.md).

Runs on asyncio and trio (the conftest's default).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from host_receiver.protocol.types import ElicitResult
from host_receiver.sanitize import SHOWN_LIMIT
from host_receiver.web import WebInbox
from tests.web.conftest import asking, form_view, sampling_view, url_view

pytestmark = pytest.mark.anyio

HOSTILE_NAME = "na\x1b[31mme\u202e"


async def test_a_ten_megabyte_form_is_shown_cut_as_the_terminal_cuts_it_saying_its_length(
    inbox: WebInbox, api: httpx.AsyncClient
) -> None:
    huge = "x" * 10_000_000
    schema = {"type": "object", "properties": {"a": {"type": "string", "description": huge}}}
    async with asking(inbox, lambda: inbox.fill_form(form_view(schema=schema, message=huge))) as answers:
        listing = await api.get("/api/items")
        assert len(listing.content) < 4 * SHOWN_LIMIT
        [item] = listing.json()["pending"]
        cut = "x" * SHOWN_LIMIT + "… [10,000,000 characters]"
        assert item["request"]["message"] == cut
        assert item["request"]["fields"][0]["description"] == cut
        await api.post(f"/api/items/{item['id']}/answer", json={"action": "cancel"})
    assert answers == [ElicitResult(action="cancel")]


async def test_a_hostile_field_name_is_escaped_and_the_form_is_still_answered_by_its_key(
    inbox: WebInbox, api: httpx.AsyncClient
) -> None:
    schema = {"type": "object", "properties": {HOSTILE_NAME: {"type": "string"}}, "required": [HOSTILE_NAME]}
    async with asking(inbox, lambda: inbox.fill_form(form_view(schema=schema))) as answers:
        listing = await api.get("/api/items")
        [item] = listing.json()["pending"]
        [field] = item["request"]["fields"]
        assert field["name"] == "na\\x1b[31mme\\u202e" and field["label"] == "na\\x1b[31mme\\u202e"
        assert field["key"] == HOSTILE_NAME
        for shown in ("name", "label"):
            assert field[shown].isprintable()
        missing = await api.post(f"/api/items/{item['id']}/answer", json={"action": "accept", "content": {}})
        assert missing.status_code == 422 and list(missing.json()["problems"]) == [field["key"]]
        accept = {"action": "accept", "content": {field["key"]: "Ada"}}
        sent = await api.post(f"/api/items/{item['id']}/answer", json=accept)
        assert sent.status_code == 200
    assert answers == [ElicitResult(action="accept", content={HOSTILE_NAME: "Ada"})]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"[" * 800_000, "nested too deeply"),
        (b'{"action": "accept", "content": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
        (b'{"action": ', "not JSON"),
        (b"\xff\xfe{", "not JSON"),
    ],
)
async def test_a_malformed_or_deeply_nested_answer_is_a_400_with_the_reason_and_the_inbox_keeps_serving(
    inbox: WebInbox, api: httpx.AsyncClient, body: bytes, reason: str
) -> None:
    async with asking(inbox, lambda: inbox.consent_url(url_view())) as answers:
        [item] = (await api.get("/api/items")).json()["pending"]
        bad = await api.post(f"/api/items/{item['id']}/answer", content=body)
        assert bad.status_code == 400 and reason in bad.json()["error"]
        assert (await api.get("/api/items")).json()["pending"][0]["id"] == item["id"]
        good = await api.post(f"/api/items/{item['id']}/answer", json={"action": "decline"})
        assert good.status_code == 200
    assert answers == ["decline"]


async def test_a_wrong_remember_scope_is_a_422_not_a_500(inbox: WebInbox, api: httpx.AsyncClient) -> None:
    async with asking(inbox, lambda: inbox.review_request(sampling_view())):
        [item] = (await api.get("/api/items")).json()["pending"]
        wrong = await api.post(f"/api/items/{item['id']}/answer", json={"action": "approve", "remember": []})
        assert wrong.status_code == 422 and "remember" in wrong.json()["problems"]
        await api.post(f"/api/items/{item['id']}/answer", json={"action": "refuse"})


async def test_a_fifty_megabyte_answer_gets_413_before_it_is_read_whole(
    inbox: WebInbox, api: httpx.AsyncClient
) -> None:
    sent: list[int] = []

    async def fifty_megabytes() -> AsyncIterator[bytes]:
        for _ in range(50):
            sent.append(1)
            yield b" " * (1024 * 1024)

    async with asking(inbox, lambda: inbox.consent_url(url_view())) as answers:
        [item] = (await api.get("/api/items")).json()["pending"]
        too_large = await api.post(f"/api/items/{item['id']}/answer", content=fifty_megabytes())
        assert too_large.status_code == 413 and "too large" in too_large.json()["error"]
        assert len(sent) <= 2
        await api.post(f"/api/items/{item['id']}/answer", json={"action": "decline"})
    assert answers == ["decline"]


async def test_served_alone_a_declared_fifty_megabytes_gets_413_and_the_connection_closed_unread() -> None:
    inbox = WebInbox(timeout=30, auth_delay=0.1)
    async with inbox.serve("127.0.0.1:0"):
        host, port = (inbox.origin or "").removeprefix("http://").rsplit(":", 1)
        async with asking(inbox, lambda: inbox.consent_url(url_view())):
            [item] = inbox.state()["pending"]
            with anyio.fail_after(5):
                stream = await anyio.connect_tcp(host, int(port))
                async with stream:
                    head = (
                        f"POST /api/items/{item['id']}/answer HTTP/1.1\r\nHost: {host}:{port}\r\n"
                        f"Authorization: Bearer {inbox.token}\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {50 * 1024 * 1024}\r\n\r\n"
                    )
                    await stream.send(head.encode() + b"[" * 1024)
                    answer = b""
                    try:
                        while True:
                            answer += await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
                        pass
            inbox.answer(item["id"], {"action": "decline"})
    head_lines, _, body = answer.partition(b"\r\n\r\n")
    assert head_lines.startswith(b"HTTP/1.1 413")
    assert json.loads(body)["error"].startswith("the answer is too large")
