"""The store-backed board served in this process on asyncio and trio (hypercorn on loopback): a
person's event stream tells the items routed to them as they are added, routed to them as well
and answered, reading only the items a change named; a signed link (``inbox serve --notify-links
signed``) signs in for its one item, on any board of the store."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from typing import Any

import anyio
import httpx
import pytest

from host_receiver.store import InboxItem, SqlStore, open_store
from host_receiver.web import _items
from host_receiver.web._board import StoreBoard
from host_receiver.web._fleet_notify import FleetNotifier
from host_receiver.web._links import SignedLinks
from tests.fleet.reads import named_store_url, reading
from tests.web.conftest import url_view

pytestmark = pytest.mark.anyio
#: Where the notifier's links point (no notice is sent here).
INBOX = "http://inbox.test:8080"


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


@pytest.fixture(params=["memory", "postgresql"])
def shared_url(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    return named_store_url(request, monkeypatch, request.param)


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


async def test_a_signed_link_signs_its_person_in_for_its_one_item_on_any_board_until_answered(
    anyio_backend: str,
) -> None:
    async with open_store("memory") as store:
        await store.add_person("ann", ["ops"])
        await store.add_person("bob", ["sales"])
        mine, other = await add_link(store, "ops"), await add_link(store, "ops")
        made_by = await SignedLinks.of(store, ttl=60)  # one process's, and another's: one key
        board = StoreBoard(store, auth_delay=0.1, links=await SignedLinks.of(store, ttl=60))
        unsigned = StoreBoard(store, auth_delay=0.1)  # without --notify-links signed: takes none

        def token(item: str, person: str | None, **when: float) -> str:
            return made_by.sign(f"http://a.test/items/{item}", item, person, **when).partition("#link=")[2]

        async with (
            board.serve("127.0.0.1:0"),
            unsigned.serve("127.0.0.1:0"),
            httpx.AsyncClient(base_url=board.origin or "", headers={"Origin": board.origin or ""}) as page,
        ):

            async def redeem(item: str, credential: str, on: StoreBoard = board) -> httpx.Response:
                return await page.post(
                    f"{on.origin}/api/items/{item}/session",
                    headers={"Authorization": f"Link {credential}", "Origin": on.origin or ""},
                )

            anns = token(mine, "ann")
            assert (await redeem(other, anns)).status_code == 401  # made for another item
            assert (await redeem(mine, token(mine, "bob"))).status_code == 401  # not routed to bob
            assert (await redeem(mine, token(mine, "ann", now=time.time() - 61))).status_code == 401
            forged = SignedLinks("another store's key", 60).sign("x", mine, "ann").partition("#link=")[2]
            assert (await redeem(mine, forged)).status_code == 401
            assert (await redeem(mine, anns, on=unsigned)).status_code == 401
            made = await redeem(mine, anns)
            assert made.status_code == 200
            session = {"X-Inbox-Session": made.json()["session"], "X-CSRF-Token": made.json()["csrf"]}
            assert (await page.get("/api/items", headers=session)).status_code == 404
            assert (await page.get(f"/api/items/{other}", headers=session)).status_code == 404
            assert (await page.get(f"/api/items/{mine}", headers=session)).json()["id"] == mine
            refused = await page.post(
                f"/api/items/{other}/answer", headers=session, json={"action": "decline"}
            )
            assert refused.status_code == 404
            done = await page.post(f"/api/items/{mine}/answer", headers=session, json={"action": "decline"})
            assert done.status_code == 200 and done.json()["item"]["person"] == "ann"
            assert (await redeem(mine, anns)).status_code == 401  # answered: the link is spent
            nobodys = await redeem(other, token(other, None))  # a --notify channel's link: no person
            assert nobodys.status_code == 200
            nobody = {"X-Inbox-Session": nobodys.json()["session"]}
            assert (await page.get(f"/api/items/{other}", headers=nobody)).status_code == 200
            assert (await page.get(f"/api/items/{mine}", headers=nobody)).status_code == 404
        answered = await store.item(mine)
        assert answered is not None and (answered.status, answered.answered_by) == ("answered", "ann")


async def test_a_change_to_one_of_a_thousand_pending_items_reads_that_item_only(
    anyio_backend: str, shared_url: str
) -> None:
    async with (
        open_store(shared_url) as store,
        open_store(shared_url) if shared_url != "memory" else nullcontext(store) as host,
    ):
        _, ann = await store.add_person("ann", ["ops"])
        items = [await add_link(host, "ops") for _ in range(1000)]
        board = StoreBoard(store, auth_delay=0.1)
        async with (
            board.serve("127.0.0.1:0"),
            httpx.AsyncClient(base_url=board.origin or "", headers={"Authorization": f"Bearer {ann}"}) as api,
            api.stream("GET", "/api/events") as response,
        ):
            stream = events(response)
            with anyio.fail_after(30):
                name, snapshot = await anext(stream)
                assert (name, len(snapshot["pending"])) == ("snapshot", 1000)
                probe = await add_link(host, "ops")  # PostgreSQL: told once the board listens
                assert await anext(stream) == ("added", await item_json_of(store, probe))
                reads = reading(store)
                await host.answer(items[500], {"action": "accept"}, by="bob", address=None)
                name, resolved = await anext(stream)
                assert (name, resolved["id"], resolved["person"]) == ("resolved", items[500], "bob")
                # memory: the answer was this process's own, known without reading it back
                assert reads.ids == ([] if shared_url == "memory" else [items[500]])


async def item_json_of(store: SqlStore, item_id: str) -> dict[str, Any]:
    from host_receiver.web._board import item_json

    item: InboxItem | None = await store.item(item_id)
    assert item is not None
    return item_json(item)


async def test_an_item_routed_to_another_team_as_well_is_added_to_their_peoples_pages(
    anyio_backend: str,
) -> None:
    async with open_store("memory") as store:
        _, bob = await store.add_person("bob", ["sales"])
        item = await add_link(store, "ops")
        board = StoreBoard(store, auth_delay=0.1)
        async with (
            board.serve("127.0.0.1:0"),
            httpx.AsyncClient(base_url=board.origin or "", headers={"Authorization": f"Bearer {bob}"}) as api,
            api.stream("GET", "/api/events") as response,
        ):
            stream = events(response)
            with anyio.fail_after(10):
                name, snapshot = await anext(stream)
                assert (name, snapshot["pending"]) == ("snapshot", [])
                assert await store.widen_routing(item, ["sales"]) is not None  # an escalation
                name, added = await anext(stream)
                assert (name, added["id"], added["status"]) == ("added", item, "pending")
                await store.answer(item, {"action": "accept"}, by="bob", address=None)
                name, resolved = await anext(stream)
                assert (name, resolved["id"]) == ("resolved", item)


@pytest.fixture
def postgres_named(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    return named_store_url(request, monkeypatch, "postgresql")


@asynccontextmanager
async def inbox_serving(store: SqlStore) -> AsyncIterator[StoreBoard]:
    """What ``inbox serve`` runs on ``store``: the board (its page's change feed) and the notifier."""
    board = StoreBoard(store, auth_delay=0.1)
    async with board.serve("127.0.0.1:0"), FleetNotifier(store, [], environ={}, poll=0.1).running(INBOX):
        yield board


async def test_a_change_from_another_process_is_read_once_for_the_page_and_the_notifier(
    anyio_backend: str, postgres_named: str
) -> None:
    async with open_store(postgres_named) as store, open_store(postgres_named) as host:
        items = [await add_link(host, "ops") for _ in range(3)]
        async with inbox_serving(store):
            with anyio.fail_after(30):
                reads = reading(store)
                probe = await add_link(host, "ops")  # told once both feeds listen: read by them
                await reads.until(lambda ids: probe in ids)
                await anyio.sleep(0.3)
                reads.ids.clear()
                await host.answer(items[1], {"action": "accept"}, by="bob", address=None)
                await reads.until(lambda ids: items[1] in ids)
                await anyio.sleep(0.3)  # both feeds have read what they would
        assert reads.ids == [items[1]]


async def test_an_answer_given_through_this_process_is_not_read_back_by_its_feeds(
    anyio_backend: str, postgres_named: str
) -> None:
    async with open_store(postgres_named) as store, open_store(postgres_named) as host:
        _, ann = await store.add_person("ann", ["ops"])
        mine = await add_link(host, "ops")
        async with (
            inbox_serving(store) as board,
            httpx.AsyncClient(base_url=board.origin or "", headers={"Authorization": f"Bearer {ann}"}) as api,
        ):
            with anyio.fail_after(30):
                reads = reading(store)
                probe = await add_link(host, "ops")
                await reads.until(lambda ids: probe in ids)
                await anyio.sleep(0.3)
                answered = await api.post(f"/api/items/{mine}/answer", json={"action": "accept"})
                assert answered.status_code == 200
                reads.ids.clear()
                after = await add_link(host, "ops")  # NOTIFY in commit order: after the answer's own
                await reads.until(lambda ids: after in ids)
                await anyio.sleep(0.3)  # both feeds have read what they would
        assert reads.ids == [after]
