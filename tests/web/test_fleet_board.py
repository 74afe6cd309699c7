"""The store-backed board served in this process on asyncio and trio (hypercorn on loopback): a
person's event stream tells the items routed to them as they are added and answered."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from host_receiver.store import SqlStore, open_store
from host_receiver.web import _items
from host_receiver.web._board import StoreBoard
from tests.web.conftest import url_view

pytestmark = pytest.mark.anyio


async def add_link(store: SqlStore, team: str) -> str:
    item = await store.add_item(
        host="worker-1",
        server_name="notes",
        server_title=None,
        server_identity="stdio:notes",
        kind="url",
        payload=_items.url(url_view()),
        session="s",
        routed_to=[team],
    )
    return item.id


async def events(response: httpx.Response) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    name = ""
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            yield name, json.loads(line.removeprefix("data: "))


async def test_a_persons_event_stream_tells_only_their_items_added_and_answered(anyio_backend: str) -> None:
    async with open_store("memory") as store:
        _, ann = await store.add_person("ann", ["ops"])
        _, bob = await store.add_person("bob", ["sales"])
        board = StoreBoard(store, auth_delay=0.1)
        async with (
            board.serve("127.0.0.1:0"),
            httpx.AsyncClient(base_url=board.origin or "", headers={"Authorization": f"Bearer {ann}"}) as api,
            api.stream("GET", "/api/events") as response,
        ):
            stream = events(response)
            with anyio.fail_after(10):
                name, snapshot = await anext(stream)
                assert (name, snapshot["pending"]) == ("snapshot", [])
                await add_link(store, "sales")
                mine = await add_link(store, "ops")
                assert [(n, data["id"]) for n, data in [await anext(stream)]] == [("added", mine)]
                other = httpx.AsyncClient(
                    base_url=board.origin or "", headers={"Authorization": f"Bearer {bob}"}
                )
                async with other:
                    assert (await other.get(f"/api/items/{mine}")).status_code == 404
                answered = await api.post(f"/api/items/{mine}/answer", json={"action": "accept"})
                assert answered.status_code == 200 and answered.json()["item"]["person"] == "ann"
                name, resolved = await anext(stream)
                assert (name, resolved["id"], resolved["outcome"]) == ("resolved", mine, "opened")


async def test_a_person_removed_is_signed_out_of_the_page_session_they_made(anyio_backend: str) -> None:
    async with open_store("memory") as store:
        _, ann = await store.add_person("ann", ["ops"])
        board = StoreBoard(store, auth_delay=0.1)
        async with board.serve("127.0.0.1:0"), httpx.AsyncClient(base_url=board.origin or "") as page:
            made = await page.post(
                "/api/session", headers={"Authorization": f"Bearer {ann}", "Origin": board.origin or ""}
            )
            session = {"X-Inbox-Session": made.json()["session"]}
            assert (await page.get("/api/items", headers=session)).status_code == 200
            assert await store.remove_person("ann")
            assert (await page.get("/api/items", headers=session)).status_code == 401
            assert (
                await page.get("/api/items", headers={"Authorization": f"Bearer {ann}"})
            ).status_code == 401
