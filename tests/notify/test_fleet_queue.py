"""The fleet's notifications in one process, on asyncio and trio: a person's own Apprise channel
kept in the store gets its messages paced and summed up as a host's channel does, server text
escaped, and each notice once per channel however many notifiers serve the store; reminders while
an item waits, then ``item.answered``; a host's timeout told as ``item.expired``; after each change
only the items it named are read, and nothing added during the first read is missed."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Any

import anyio
import pytest
from standardwebhooks.webhooks import Webhook

from host_receiver.store import InboxItem, SqlStore, open_store
from host_receiver.web._fleet import StoreInbox
from host_receiver.web._fleet_notify import FleetNotifier
from tests.fleet.reads import named_store_url, reading
from tests.notify.conftest import SECRET, HttpReceiver
from tests.web.conftest import form_view

pytestmark = pytest.mark.anyio

INBOX = "http://inbox.test:8080"


@pytest.fixture(params=["memory", "postgresql"])
def shared_url(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    return named_store_url(request, monkeypatch, request.param)


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


def delivered(receiver: HttpReceiver) -> list[tuple[str, dict[str, Any]]]:
    """Each delivery's ``webhook-id`` and its event, the signature verified."""
    verifier = Webhook(SECRET)
    return [(r.headers["webhook-id"], verifier.verify(r.body, r.headers)) for r in receiver.received]


async def test_two_notifiers_remind_once_per_period_while_an_item_waits_then_tell_its_answer(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    everyone, ann_hook = HttpReceiver(), HttpReceiver()
    environ = {"HOST_RECEIVER_WEBHOOK_SECRET": SECRET}
    try:
        async with open_store(url) as store, open_store(url) as other:
            await store.add_person("ann", ["ops"], channels=[f"webhook+{ann_hook.url}"])
            first, second = (
                FleetNotifier(s, [f"webhook+{everyone.url}"], environ=environ, remind_every=0.5, poll=0.1)
                for s in (store, other)
            )
            async with first.running(INBOX), second.running("http://other.test:8080"):
                item = await add(store)
                await everyone.wait_for(3)  # waiting, then the first and second reminders
                await store.answer(item, {"action": "decline"}, by="ann", address=None)
                await everyone.wait_for(4)
                await ann_hook.wait_for(4)
                await anyio.sleep(0.75)  # past the third reminder's time: none after the answer, none twice
    finally:
        everyone.stop()
        ann_hook.stop()
    keys = [
        f"{item}.item.waiting",
        f"{item}.item.reminder.1",
        f"{item}.item.reminder.2",
        f"{item}.item.answered",
    ]
    for receiver in (everyone, ann_hook):
        got = delivered(receiver)
        assert [key for key, _ in got] == keys
        types = ["item.waiting", "item.reminder", "item.reminder", "item.answered"]
        assert [event["type"] for _, event in got] == types
        reminder = got[1][1]
        assert reminder["data"]["summary"] == "notes sent a form to fill in; it still waits for you"
        assert reminder["data"]["link"].endswith(f"/items/{item}")


async def test_a_hosts_timeout_is_told_as_expired_once_to_whoever_was_told_it_waits(
    http_receiver: HttpReceiver, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    environ = {"HOST_RECEIVER_WEBHOOK_SECRET": SECRET}
    async with open_store(url) as store, open_store(url) as other:
        await store.add_person("bob", ["sales"], channels=[f"webhook+{http_receiver.url}"])
        host = StoreInbox(store, host="worker-1", session="s1", routed_to=("sales",), timeout=0.5)
        notifiers = [FleetNotifier(s, [], environ=environ, poll=0.1) for s in (store, other)]
        async with notifiers[0].running(INBOX), notifiers[1].running("http://other.test:8080"):
            answer = await host.fill_form(form_view())  # nobody answers: the host's timeout ends it
            await http_receiver.wait_for(2)
            await anyio.sleep(0.5)  # five of the other notifier's polls: nothing twice
        (item,) = [i["id"] for i in host.state()["history"]]
        stored = await store.item(item)
    assert answer.action == "cancel"
    assert stored is not None and stored.status == "expired"
    got = delivered(http_receiver)
    assert [key for key, _ in got] == [f"{item}.item.waiting", f"{item}.item.expired"]
    expired = got[1][1]
    assert expired["type"] == "item.expired" and expired["data"]["id"] == item
    assert expired["data"]["summary"] == "notes sent a form to fill in; it expired: nobody answered in time"


async def test_a_change_to_one_of_a_thousand_pending_items_reads_that_item_only(shared_url: str) -> None:
    async with (
        open_store(shared_url) as store,
        open_store(shared_url) if shared_url != "memory" else nullcontext(store) as host,
    ):
        items = [await add(host) for _ in range(1000)]
        reads = reading(store)
        with anyio.fail_after(30):
            async with FleetNotifier(store, [], environ={}, poll=0.1).running(INBOX):
                await reads.until(lambda ids: len(ids) >= 1000)  # its first read: every pending item
                probe = await add(host)  # PostgreSQL: read once the notifier listens (by name, or all)
                if shared_url != "memory":  # memory: this process's own change, not read back
                    await reads.until(lambda ids: probe in ids)
                await anyio.sleep(0.2)
                reads.ids.clear()
                added = await add(host)
                await host.answer(items[500], {"action": "decline"}, by="ann", address=None)
                read = [] if shared_url == "memory" else [added, items[500]]
                await reads.until(lambda ids: len(ids) >= len(read))
                await anyio.sleep(0.2)  # a few of its reads, were there any
        assert sorted(reads.ids) == sorted(read)


async def test_an_item_added_during_the_first_read_of_the_pending_ones_is_notified(
    shared_url: str, http_receiver: HttpReceiver
) -> None:
    environ = {"HOST_RECEIVER_WEBHOOK_SECRET": SECRET}
    async with (
        open_store(shared_url) as store,
        open_store(shared_url) if shared_url != "memory" else nullcontext(store) as host,
    ):
        before = await add(host)
        real, during = store.pending_items, list[str]()

        async def pending_items(*args: Any) -> list[InboxItem]:
            found = await real(*args)
            if not during:  # the first read: an item is added just after its query
                during.append(await add(host))
            return found

        setattr(store, "pending_items", pending_items)  # noqa: B010 (an instance's method, replaced)
        notifier = FleetNotifier(store, [f"webhook+{http_receiver.url}"], environ=environ, poll=0.1)
        async with notifier.running(INBOX):
            with anyio.fail_after(10):
                await http_receiver.wait_for(2)
    assert sorted(key for key, _ in delivered(http_receiver)) == sorted(
        f"{item}.item.waiting" for item in (before, *during)
    )
