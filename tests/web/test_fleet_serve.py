"""``host-receiver inbox serve``: two processes serving one store (SQLite, PostgreSQL), as a fleet runs them.

The items are put in with the Store API, as a host would; the test is two
people in two teams answering through the JSON API of either process. The
commands run as a user runs them (subprocesses); the store is read back
directly to see what was written.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from host_receiver.store import AuditRow, InboxItem, SqlStore
from host_receiver.web import _items
from tests.cli_command import run_cli
from tests.fleet.processes import ROOT, WAIT_S, in_store, inbox_serve
from tests.web.conftest import form_view, sampling_view

pytestmark = pytest.mark.slow


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fleet.db'}"
    return str(request.getfixturevalue("postgres_url"))


def add_item(url: str, kind: str = "form", routed_to: tuple[str, ...] = (), host: str = "worker-1") -> str:
    """A pending item as a host puts it in: the request JSON of web/_items.py; its id."""
    payload = _items.form(form_view()) if kind == "form" else _items.sampling_request(sampling_view())

    async def add(store: SqlStore) -> InboxItem:
        return await store.add_item(
            host=host,
            server_name="notes",
            server_title="Notes",
            server_identity="stdio:notes",
            kind=kind,
            payload=payload,
            session="session-1",
            routed_to=routed_to,
        )

    return in_store(url, add).id


@dataclass
class Fleet:
    url: str
    #: The two ``inbox serve`` processes' addresses.
    inboxes: tuple[str, str]
    #: Tokens: ann is in ops, bob in sales.
    tokens: dict[str, str]

    def api(self, which: int, person: str) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens[person]}"}
        return httpx.Client(base_url=self.inboxes[which], headers=headers, timeout=WAIT_S)

    def item(self, item_id: str) -> InboxItem:
        item = in_store(self.url, lambda store: store.item(item_id))
        assert item is not None
        return item

    def audit(self) -> list[AuditRow]:
        return in_store(self.url, lambda store: store.audit())


@pytest.fixture
def fleet(store_url: str) -> Iterator[Fleet]:
    async def people(store: SqlStore) -> dict[str, str]:
        _, ann = await store.add_person("ann", ["ops"])
        _, bob = await store.add_person("bob", ["sales"])
        return {"ann": ann, "bob": bob}

    tokens = in_store(store_url, people)
    with inbox_serve(store_url) as (_, first), inbox_serve(store_url) as (_, second):
        yield Fleet(store_url, (first, second), tokens)


def events(client: httpx.Client) -> Generator[tuple[str, dict[str, Any]]]:
    """The event stream's events (name, data), keep-alive comments skipped."""
    with client.stream("GET", "/api/events") as response:
        assert response.status_code == 200
        name = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                yield name, json.loads(line.removeprefix("data: "))


def test_a_person_sees_and_answers_only_the_items_routed_to_them_or_everyone(fleet: Fleet) -> None:
    for_ops = add_item(fleet.url, routed_to=("ops",))
    for_sales = add_item(fleet.url, routed_to=("sales",))
    for_all = add_item(fleet.url, host="worker-2")
    with fleet.api(0, "ann") as ann_a, fleet.api(1, "ann") as ann_b, fleet.api(1, "bob") as bob_b:
        for ann in (ann_a, ann_b):
            pending = ann.get("/api/items").json()["pending"]
            assert [i["id"] for i in pending] == [for_ops, for_all]
            assert [i["host"] for i in pending] == ["worker-1", "worker-2"]
            assert ann.get(f"/api/items/{for_sales}").status_code == 404
            assert ann.post(f"/api/items/{for_sales}/answer", json={"action": "cancel"}).status_code == 404
        assert [i["id"] for i in bob_b.get("/api/items").json()["pending"]] == [for_sales, for_all]
        assert bob_b.get(f"/api/items/{for_ops}").status_code == 404
        assert fleet.item(for_sales).status == "pending"

        stream = events(ann_a)
        name, snapshot = next(stream)
        assert name == "snapshot" and [i["id"] for i in snapshot["pending"]] == [for_ops, for_all]
        later_for_sales = add_item(fleet.url, routed_to=("sales",))
        later_for_ann = add_item(fleet.url, routed_to=("ann",))
        # (an item of the snapshot may come again as "added": the page keeps one card of it)
        name, added = next((n, data) for n, data in stream if data["id"] not in (for_ops, for_all))
        assert (name, added["id"]) == ("added", later_for_ann)
        assert later_for_sales not in {i["id"] for i in ann_a.get("/api/items").json()["pending"]}
        stream.close()


def test_the_first_answer_wins_across_the_two_processes_and_both_see_it(fleet: Fleet) -> None:
    item_id = add_item(fleet.url)
    statuses: dict[str, int] = {}
    with fleet.api(0, "ann") as ann, fleet.api(1, "bob") as bob:
        stream = events(bob)
        assert next(stream)[0] == "snapshot"
        start = threading.Barrier(2)

        def answer(person: str, client: httpx.Client) -> None:
            start.wait()
            content = {"name": person, "email": f"{person}@example.com", "colour": "r"}
            answered = client.post(
                f"/api/items/{item_id}/answer", json={"action": "accept", "content": content}
            )
            statuses[person] = answered.status_code

        threads = [threading.Thread(target=answer, args=(p, c)) for p, c in (("ann", ann), ("bob", bob))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S)
        assert sorted(statuses.values()) == [200, 409]
        winner = next(p for p, status in statuses.items() if status == 200)

        # bob's process hears of it whichever process took it (maybe after its own "added")
        name, resolved = next((n, data) for n, data in stream if n != "added")
        assert (name, resolved["id"], resolved["person"], resolved["outcome"]) == (
            "resolved",
            item_id,
            winner,
            "accepted",
        )
        stream.close()
        loser = bob if winner == "ann" else ann
        again = loser.post(f"/api/items/{item_id}/answer", json={"action": "decline"})
        assert again.status_code == 409 and again.json()["item"]["person"] == winner

    item = fleet.item(item_id)
    assert (item.status, item.answered_by, item.answered_from) == ("answered", winner, "127.0.0.1")
    assert item.answer is not None and item.answer["content"]["name"] == winner
    [row] = fleet.audit()
    assert (row.event, row.item, row.person, row.address, row.host) == (
        "answered",
        item_id,
        winner,
        "127.0.0.1",
        "worker-1",
    )


def test_an_invalid_answer_is_refused_with_its_problems_and_nothing_is_written(fleet: Fleet) -> None:
    form_id = add_item(fleet.url)
    sampling_id = add_item(fleet.url, kind="sampling")
    with fleet.api(0, "ann") as ann:
        missing = ann.post(
            f"/api/items/{form_id}/answer", json={"action": "accept", "content": {"name": "A"}}
        )
        assert missing.status_code == 422
        assert set(missing.json()["problems"]) == {"name", "email", "colour"}
        too_many = {"action": "approve", "edits": {"maxTokens": 101}}
        refused = ann.post(f"/api/items/{sampling_id}/answer", json=too_many)
        assert refused.status_code == 422 and "maxTokens" in refused.json()["problems"]
        assert ann.post(f"/api/items/{sampling_id}/answer", json={"action": "maybe"}).status_code == 422
        assert ann.post(f"/api/items/{sampling_id}/answer", content=b"[1]").status_code == 400
    assert fleet.item(form_id).status == fleet.item(sampling_id).status == "pending"
    assert fleet.audit() == []


def test_only_a_persons_token_signs_in(fleet: Fleet) -> None:
    for base in fleet.inboxes:
        with httpx.Client(base_url=base, timeout=WAIT_S) as anyone:
            assert (
                anyone.get("/api/items", headers={"Authorization": "Bearer not-a-token"}).status_code == 401
            )
            assert anyone.get("/api/items").status_code == 401
            assert anyone.get("/", params={"token": "not-a-token"}).status_code == 401
            assert anyone.get("/", params={"token": fleet.tokens["bob"]}).status_code == 200
            made = anyone.post(
                "/api/session", headers={"Authorization": f"Bearer {fleet.tokens['bob']}", "Origin": base}
            )
            assert made.status_code == 200
            session = {"X-Inbox-Session": made.json()["session"]}
            assert anyone.get("/api/items", headers=session).status_code == 200


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--store", "memory"], "'memory' would be gone when the command ends"),
        (["--cert", "c.pem"], "--cert and --key go together"),
        (["--listen", "nowhere"], "--listen: 'nowhere' is not HOST:PORT"),
    ],
)
def test_wrong_options_are_clear_errors(tmp_path: Path, options: list[str], message: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    store = ["--store", f"sqlite:///{tmp_path / 'fleet.db'}"]
    done = run_cli(env, "inbox", "serve", *store, *options)
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_an_address_in_use_is_a_clear_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    with inbox_serve(url) as (_, base):
        listen = base.removeprefix("http://")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = run_cli(env, "inbox", "serve", "--store", url, "--listen", listen)
    assert done.returncode == 2
    assert f"host-receiver inbox serve: cannot listen on {listen}: " in done.stderr, done.stderr
