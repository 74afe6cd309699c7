"""Notifications from ``host-receiver inbox serve`` (subprocesses, as a fleet runs them) on one
store (SQLite, PostgreSQL): a person's own channels and ``--notify``, once across two processes,
through the store's queue, which outlives a process; escalation to a team; reminders, then the
answer; an expiry told by a process started after it; ``--public-url`` in signed links.

The items are put in with the Store API, as a host would; the endpoints are loopback Standard
Webhooks receivers whose deliveries are checked with the ``standardwebhooks`` verifier.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from host_receiver.store import InboxItem, SqlStore
from tests.cli_command import run_cli
from tests.fleet.processes import in_store
from tests.fleet.processes import inbox_serve as fleet_inbox_serve
from tests.notify.conftest import SECRET, HttpReceiver, Received

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: A safety net for each wait (seconds), never a measure of speed.
WAIT_S = 20
#: How long a test watches for a notification that must not come (a few queue polls).
QUIET_S = 2.0
T = TypeVar("T")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fleet.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def receivers() -> Iterator[dict[str, HttpReceiver]]:
    """Three endpoints: ann's channel, bob's channel, and the one given to ``inbox serve --notify``."""
    found = {name: HttpReceiver() for name in ("ann", "bob", "all")}
    yield found
    for receiver in found.values():
        receiver.stop()


def hook(receiver: HttpReceiver) -> str:
    return f"webhook+{receiver.url}"


def add_item(url: str, routed_to: tuple[str, ...] = ()) -> str:
    async def add(store: SqlStore) -> InboxItem:
        return await store.add_item(
            host="worker-1",
            server_name="notes",
            server_title="Notes",
            server_identity="stdio:notes",
            kind="form",
            payload={"message": "Your name?", "requestedSchema": {"type": "object", "properties": {}}},
            session="session-1",
            routed_to=routed_to,
        )

    return in_store(url, add).id


def people(url: str, receivers: dict[str, HttpReceiver]) -> dict[str, str]:
    """ann in ops and bob in sales, each with their own webhook channel; their tokens."""

    async def add(store: SqlStore) -> dict[str, str]:
        _, ann = await store.add_person("ann", ["ops"], channels=[hook(receivers["ann"])])
        _, bob = await store.add_person("bob", ["sales"], channels=[hook(receivers["bob"])])
        return {"ann": ann, "bob": bob}

    return in_store(url, add)


def inbox_serve(url: str, *options: str) -> AbstractContextManager[tuple[subprocess.Popen[str], str]]:
    """``host-receiver inbox serve --store URL *options`` running with the webhook secret; its address."""
    return fleet_inbox_serve(url, *options, env={"HOST_RECEIVER_WEBHOOK_SECRET": SECRET})


def wait_for(receiver: HttpReceiver, count: int) -> list[Received]:
    """The first ``count`` requests ``receiver`` took, once they came (a server thread fills the list)."""
    deadline = time.monotonic() + WAIT_S
    while len(receiver.received) < count:
        assert time.monotonic() < deadline, f"{len(receiver.received)} of {count} came"
        time.sleep(0.05)
    return receiver.received[:count]


def all_sent(url: str) -> None:
    """Wait until the store has every queued notice marked sent."""
    deadline = time.monotonic() + WAIT_S
    while in_store(url, lambda store: store.queued_channels()):
        assert time.monotonic() < deadline, "notices still unsent"
        time.sleep(0.05)


def events(receiver: HttpReceiver) -> list[tuple[str, str]]:
    """Each delivery's (event, item id), its signature verified."""
    verifier = Webhook(SECRET)
    found = []
    for received in receiver.received:
        event = verifier.verify(received.body, received.headers)
        assert received.headers["webhook-id"] == f"{event['data']['id']}.{event['type']}"
        found.append((event["type"], event["data"]["id"]))
    return found


def test_two_processes_tell_each_item_once_to_the_people_it_is_routed_to_and_to_notify(
    store_url: str, receivers: dict[str, HttpReceiver]
) -> None:
    people(store_url, receivers)
    options = ("--notify", hook(receivers["all"]))
    with inbox_serve(store_url, *options) as (_, first), inbox_serve(store_url, *options) as (_, second):
        ops = [add_item(store_url, ("ops",)) for _ in range(3)]
        anyone = add_item(store_url)
        wait_for(receivers["ann"], 3)
        wait_for(receivers["all"], 4)
        time.sleep(QUIET_S)  # no second delivery comes from the other process
        assert sorted(events(receivers["ann"])) == sorted(("item.waiting", i) for i in ops)
        assert sorted(events(receivers["all"])) == sorted(("item.waiting", i) for i in [*ops, anyone])
        assert receivers["bob"].received == []  # not routed to him, nor to his team
        data = Webhook(SECRET).verify(receivers["ann"].received[0].body, receivers["ann"].received[0].headers)
        link = data["data"]["link"]
        assert link.startswith((f"{first}/items/", f"{second}/items/")) and data["data"]["kind"] == "form"
        assert data["data"]["server"] == "notes (Notes)" and data["data"]["host"] == "worker-1"


def test_a_notification_still_queued_when_its_process_stops_is_sent_by_the_next_one(
    store_url: str, receivers: dict[str, HttpReceiver]
) -> None:
    people(store_url, receivers)
    failing = receivers["ann"]
    failing.script = [503] * 10  # the first attempts fail: the notice stays queued, retried
    with inbox_serve(store_url):
        item = add_item(store_url, ("ops",))
        wait_for(failing, 1)
    tried = len(failing.received)
    assert tried < 5 and failing.script  # it stopped before it could deliver or give up
    failing.script.clear()  # the endpoint works again
    with inbox_serve(store_url):
        wait_for(failing, tried + 1)
        time.sleep(QUIET_S)
    assert events(failing) == [("item.waiting", item)] * (tried + 1)  # the same notice, delivered once

    async def queued(store: SqlStore) -> list[str]:
        return await store.queued_channels()

    assert in_store(store_url, queued) == []


def test_escalation_to_a_team_widens_routing_and_tells_its_people(
    store_url: str, receivers: dict[str, HttpReceiver]
) -> None:
    tokens = people(store_url, receivers)
    options = ("--escalate-after", "3s", "--escalate-to", "sales")
    with inbox_serve(store_url, *options) as (_, first), inbox_serve(store_url, *options):
        bob = httpx.Client(
            base_url=first, headers={"Authorization": f"Bearer {tokens['bob']}"}, timeout=WAIT_S
        )
        item = add_item(store_url, ("ops",))
        assert bob.get(f"/api/items/{item}").status_code == 404  # not his team's, before the escalation
        wait_for(receivers["ann"], 1)
        wait_for(receivers["bob"], 1)
        time.sleep(QUIET_S)
        assert events(receivers["ann"]) == [("item.waiting", item)]
        assert events(receivers["bob"]) == [("item.escalated", item)]  # once, from either process
        seen = bob.get(f"/api/items/{item}")
        assert seen.status_code == 200 and seen.json()["id"] == item
        assert [i["id"] for i in bob.get("/api/items").json()["pending"]] == [item]
        answered = bob.post(f"/api/items/{item}/answer", json={"action": "decline"})
        assert answered.status_code == 200, answered.text

    async def routed(store: SqlStore) -> tuple[str, ...]:
        kept = await store.item(item)
        assert kept is not None
        return kept.routed_to

    assert in_store(store_url, routed) == ("ops", "sales")


def keys(receiver: HttpReceiver) -> list[str]:
    """Each delivery's idempotency key (``webhook-id``), its signature verified."""
    verifier = Webhook(SECRET)
    return [verifier.verify(r.body, r.headers) and r.headers["webhook-id"] for r in receiver.received]


def test_two_processes_remind_once_per_period_while_an_item_waits_then_tell_its_answer(
    store_url: str, receivers: dict[str, HttpReceiver]
) -> None:
    tokens = people(store_url, receivers)
    options = ("--notify", hook(receivers["all"]), "--remind-every", "2s")
    with inbox_serve(store_url, *options) as (_, first), inbox_serve(store_url, *options):
        item = add_item(store_url, ("ops",))
        wait_for(receivers["ann"], 3)  # waiting, then two reminders, 2 s apart
        ann = httpx.Client(base_url=first, headers={"Authorization": f"Bearer {tokens['ann']}"})
        with ann:
            assert ann.post(f"/api/items/{item}/answer", json={"action": "decline"}).status_code == 200
        wait_for(receivers["ann"], 4)
        wait_for(receivers["all"], 4)
        time.sleep(QUIET_S + 1)  # no reminder after the answer, nothing twice
    told = [f"{item}.item.{event}" for event in ("waiting", "reminder.1", "reminder.2", "answered")]
    assert keys(receivers["ann"]) == told and keys(receivers["all"]) == told
    assert receivers["bob"].received == []


def test_an_item_that_expired_while_no_process_served_is_told_by_the_next_one(
    store_url: str, receivers: dict[str, HttpReceiver]
) -> None:
    people(store_url, receivers)
    with inbox_serve(store_url):
        item = add_item(store_url, ("sales",))
        wait_for(receivers["bob"], 1)
        # stopped once the store has the notice as sent: one stopped while bob's receiver is still
        # answering would give it back, and the next process would tell it again (at least once)
        all_sent(store_url)
    reason = "no answer within 10m: expired, nobody refused"  # what the host's timeout writes

    async def expire(store: SqlStore) -> bool:
        return await store.close_item(item, "expired", reason)

    assert in_store(store_url, expire)
    with inbox_serve(store_url), inbox_serve(store_url):
        wait_for(receivers["bob"], 2)
        time.sleep(QUIET_S)
    assert events(receivers["bob"]) == [("item.waiting", item), ("item.expired", item)]
    assert receivers["ann"].received == []


def test_the_public_url_is_the_origin_of_signed_links_and_a_host_the_inbox_takes(
    store_url: str, receivers: dict[str, HttpReceiver]
) -> None:
    people(store_url, receivers)
    public = "https://inbox.example.com"
    options = ("--notify-links", "signed", "--public-url", public + "/", "--notify", hook(receivers["all"]))
    with inbox_serve(store_url, *options) as (_, address):
        item = add_item(store_url, ("ops",))
        wait_for(receivers["ann"], 1)
        wait_for(receivers["all"], 1)
        verifier = Webhook(SECRET)
        sent = [*receivers["ann"].received, *receivers["all"].received]
        links = [verifier.verify(r.body, r.headers)["data"]["link"] for r in sent]
        for link in links:
            assert link.startswith(f"{public}/items/{item}#link=") and address not in link
        behind = {"Host": "inbox.example.com", "Origin": public}  # as the load balancer passes it on
        with httpx.Client(base_url=address, timeout=WAIT_S) as proxied:
            made = proxied.post(
                f"/api/items/{item}/session",
                headers={**behind, "Authorization": f"Link {links[0].partition('#link=')[2]}"},
            )
            assert made.status_code == 200, made.text
            session = {
                **behind,
                "X-Inbox-Session": made.json()["session"],
                "X-CSRF-Token": made.json()["csrf"],
            }
            answered = proxied.post(f"/api/items/{item}/answer", headers=session, json={"action": "decline"})
            assert answered.status_code == 200 and answered.json()["item"]["person"] == "ann"
            elsewhere = {"Host": "evil.example.com", "Origin": "https://evil.example.com"}
            assert proxied.get("/", headers=elsewhere).status_code == 400


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--notify", "webhook+https://hooks.example.com/x?key=secret-1"], "needs its signing secret"),
        (["--notify", "secret-2-not-a-url"], "--notify: ?://… (channel 1): not a URL"),
        (["--escalate-after", "1m"], "--escalate-after and --escalate-to go together"),
        (["--escalate-to", "ops"], "--escalate-after and --escalate-to go together"),
        (["--escalate-after", "1m", "--escalate-to", "no one"], "--escalate-to: a person's or team's name"),
        (["--notify-every", "soon"], "argument --notify-every"),
        (["--remind-every", "soon"], "argument --remind-every"),
        (["--link-ttl", "soon"], "argument --link-ttl"),
        (["--notify-links", "always"], "argument --notify-links: invalid choice"),
        (["--public-url", "ftp://secret-3.example.com"], "argument --public-url: not an http(s) address"),
        (["--public-url", "https://u:secret-4@example.com"], "argument --public-url: not an http(s)"),
    ],
)
def test_wrong_notification_options_are_clear_errors_without_a_secret(
    tmp_path: Path, options: list[str], message: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "HOST_RECEIVER_WEBHOOK_SECRET"}
    env["PYTHONPATH"] = str(ROOT)
    done = run_cli(env, "inbox", "serve", "--store", f"sqlite:///{tmp_path / 'fleet.db'}", *options)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "secret-" not in done.stdout + done.stderr and not (tmp_path / "fleet.db").exists()
