"""The inbox of a host on a shared store (``StoreInbox``), its hooks called as the services call
them: what the host does with an answer it cannot take, a timeout, an answer on its own page,
a cancelled request and a stopped host, each as the store then says."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream

from host_receiver.errors import AlreadyAnswered
from host_receiver.people.approval import Refuse
from host_receiver.protocol.types import ElicitResult
from host_receiver.store import SqlStore, open_store
from host_receiver.store._engines import CONNECT_TIMEOUT
from host_receiver.web._fleet import SESSION_ENDED, UNREACHABLE, StoreInbox
from tests.postgres_cluster import PostgresCluster
from tests.web.conftest import asking, form_view, sampling_view

pytestmark = pytest.mark.anyio

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string", "minLength": 2}}}


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    async with open_store(f"sqlite:///{tmp_path / 'fleet.db'}") as opened:
        yield opened


async def added(events: MemoryObjectReceiveStream[tuple[str, dict[str, Any]]]) -> None:
    """Once the inbox says an item was added (it is in the store then)."""
    with anyio.fail_after(10):
        async for name, _ in events:
            if name == "added":
                return


def store_inbox(store: SqlStore, timeout: float = 30) -> StoreInbox:
    return StoreInbox(store, host="worker-1", session="s1", routed_to=("ops",), timeout=timeout)


async def test_an_answer_in_the_store_the_form_refuses_cancels_it_saying_why(store: SqlStore) -> None:
    inbox = store_inbox(store)
    async with asking(inbox, lambda: inbox.fill_form(form_view(schema=NAME_FORM))) as answers:
        (item,) = await store.pending_items()
        assert (item.host, item.routed_to, item.kind) == ("worker-1", ("ops",), "form")
        await store.answer(item.id, {"action": "accept", "content": {"name": "A"}}, by="ann", address=None)
    assert answers == [ElicitResult(action="cancel")]
    (shown,) = inbox.state()["history"]
    assert shown["outcome"].startswith("the answer in the store is not valid: name ")


async def test_past_its_timeout_the_item_expires_in_the_store_and_sampling_is_refused(
    store: SqlStore,
) -> None:
    inbox = store_inbox(store, timeout=0.3)
    decision = await inbox.review_request(sampling_view())
    assert (
        isinstance(decision, Refuse) and decision.reason == "no answer within 0.3s: expired, nobody refused"
    )
    (item,) = [i for i in [await store.item(inbox.state()["history"][0]["id"])] if i is not None]
    assert (item.status, item.reason) == ("expired", "no answer within 0.3s: expired, nobody refused")


async def test_an_answer_on_the_hosts_own_page_is_the_stores_first_answer(store: SqlStore) -> None:
    inbox = store_inbox(store)
    async with asking(inbox, lambda: inbox.review_request(sampling_view())) as answers:
        (item,) = await store.pending_items()
        inbox.answer(item.id, {"action": "refuse"}, by="page")
        with anyio.fail_after(10):
            done = await store.wait_answer(item.id)
        with pytest.raises(AlreadyAnswered):
            await store.answer(item.id, {"action": "approve"}, by="ann", address=None)
    assert isinstance(answers[0], Refuse)
    assert (done.status, done.answer, done.answered_from) == (
        "answered",
        {"action": "refuse"},
        "worker-1 (page)",
    )


async def test_a_cancelled_request_and_a_stopped_host_withdraw_their_items_saying_which(
    store: SqlStore,
) -> None:
    inbox = store_inbox(store)
    async with anyio.create_task_group() as group, inbox.events() as events:
        group.start_soon(inbox.fill_form, form_view(schema=NAME_FORM))
        await added(events)
        (first,) = await store.pending_items()
        group.cancel_scope.cancel()
    cancelled = await store.item(first.id)
    assert cancelled is not None and (cancelled.status, cancelled.reason) == (
        "withdrawn",
        "the request was cancelled",
    )
    async with anyio.create_task_group() as group, inbox.events() as events:
        group.start_soon(inbox.fill_form, form_view(schema=NAME_FORM))
        await added(events)
        (second,) = await store.pending_items()
        await inbox.end_session()
        group.cancel_scope.cancel()
    stopped = await store.item(second.id)
    assert stopped is not None and (stopped.status, stopped.reason) == ("withdrawn", SESSION_ENDED)


def cut_off(cluster: PostgresCluster, database: str) -> None:
    """The database refuses new connections and loses its current ones (the store is unreachable)."""
    cluster.sql(f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
    cluster.sql(f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '{database}'")


def let_in(cluster: PostgresCluster, database: str) -> None:
    cluster.sql(f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")


@pytest.mark.slow  # the first refused request may wait out the pool's connect timeout (10 s)
async def test_a_store_lost_after_the_host_started_declines_forms_and_refuses_sampling_saying_so(
    postgres_cluster: PostgresCluster, caplog: pytest.LogCaptureFixture
) -> None:
    database = postgres_cluster.new_database()
    async with open_store(postgres_cluster.url(database)) as shared:
        inbox = store_inbox(shared)
        await anyio.to_thread.run_sync(cut_off, postgres_cluster, database)
        try:
            form = await inbox.fill_form(form_view(schema=NAME_FORM))
            started = time.monotonic()
            sampling = await inbox.review_request(sampling_view())
            refused_after = time.monotonic() - started
        finally:
            await anyio.to_thread.run_sync(let_in, postgres_cluster, database)
        # once the store was found unreachable, the next request is told at once, not after the
        # pool's whole connect timeout
        assert refused_after < CONNECT_TIMEOUT / 2
        assert form == ElicitResult(action="decline")
        assert isinstance(sampling, Refuse) and sampling.reason == UNREACHABLE
        assert [h["outcome"] for h in inbox.state()["history"]] == [UNREACHABLE, UNREACHABLE]
        assert "form declined from notes: the approval store is unreachable" in caplog.text
        assert postgres_cluster.password not in caplog.text
        assert await shared.pending_items() == []  # nothing half-written


@pytest.mark.slow
async def test_an_answer_given_while_the_host_could_not_reach_the_store_is_not_lost(
    postgres_cluster: PostgresCluster,
) -> None:
    database = postgres_cluster.new_database()
    async with (
        open_store(postgres_cluster.url(database)) as shared,
        open_store(postgres_cluster.url(database)) as other,
    ):
        inbox = store_inbox(shared)
        async with asking(inbox, lambda: inbox.fill_form(form_view(schema=NAME_FORM))) as answers:
            (item,) = await other.pending_items()
            await anyio.to_thread.run_sync(cut_off, postgres_cluster, database)
            await anyio.sleep(1.5)  # the host's reads fail meanwhile
            await anyio.to_thread.run_sync(let_in, postgres_cluster, database)
            await other.answer(
                item.id, {"action": "accept", "content": {"name": "Ada"}}, by="ann", address=None
            )
    assert answers == [ElicitResult(action="accept", content={"name": "Ada"})]
