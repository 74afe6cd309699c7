"""The fleet's notifications in one process, on asyncio and trio: a person's own Apprise channel
kept in the store gets its messages paced and summed up as a host's channel does, server text
escaped, and each notice once per channel however many notifiers serve the store."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from host_receiver.store import SqlStore, open_store
from host_receiver.web._fleet_notify import FleetNotifier
from tests.notify.conftest import HttpReceiver

pytestmark = pytest.mark.anyio

INBOX = "http://inbox.test:8080"


async def add(store: SqlStore, server: str = "notes", routed_to: tuple[str, ...] = ("ops",)) -> str:
    item = await store.add_item(
        host="worker-1",
        server_name=server,
        server_title=None,
        server_identity="stdio:notes",
        kind="form",
        payload={"message": "Your name?"},
        session="session-1",
        routed_to=routed_to,
    )
    return item.id


async def test_a_persons_apprise_channel_gets_one_message_per_period_once_across_two_notifiers(
    http_receiver: HttpReceiver, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    async with open_store(url) as store, open_store(url) as other:
        await store.add_person("ann", ["ops"], channels=[f"json://127.0.0.1:{http_receiver.port}/hook"])
        await store.add_person("bob", ["sales"])
        first, second = (FleetNotifier(s, [], environ={}, every=1.0, poll=0.1) for s in (store, other))
        async with first.running(INBOX), second.running("http://other.test:8080"):
            one = await add(store, server="\x1b[31mred\u202e")
            [got] = await http_receiver.wait_for(1)
            more = [await add(store) for _ in range(3)]
            await add(store, routed_to=("sales",))  # bob's: he has no channel, ann is not told
            [_, summed] = await http_receiver.wait_for(2)
            await anyio.sleep(0.5)  # five of the other notifier's polls: nothing more comes
    assert len(http_receiver.received) == 2
    message = got.json()["message"]
    assert "\x1b" not in message and "\u202e" not in message and "\\x1b[31mred" in message
    assert f"/items/{one}" in message
    assert summed.json()["title"] == "host-receiver: 3 requests wait for you"
    assert all(f"/items/{item}" in summed.json()["message"] for item in more)
