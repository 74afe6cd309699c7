"""The shared store on each engine (memory, a SQLite file, a real PostgreSQL), on asyncio and trio:
first answer wins across connections, a waiter wakes on an answer, migrations, people's tokens,
the audit chain, leases, routing, and hostile text kept as sent."""

from __future__ import annotations

import hashlib
import stat
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from host_receiver.errors import AlreadyAnswered, StoreTooNew, UnknownItem, UnsafeFile
from host_receiver.store import (
    SCHEMA_VERSION,
    ContinuableCall,
    InboxItem,
    Person,
    SqlStore,
    StoredRemoteTask,
    open_store,
)
from host_receiver.store import _core as store_core
from tests.postgres_cluster import PostgresCluster

pytestmark = pytest.mark.anyio

#: Text a hostile server may send: escapes, bidi overrides, NUL, a lone surrogate, quotes, SQL.
HOSTILE = "\x1b[31mred\x1b[0m \u202eevil\u202c \x00nul \ud800 ' \" ; DROP TABLE inbox_items; -- \\ % ?"


async def raw(store: SqlStore, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run ``sql`` on the store's database as it is, past the store's methods (to read or tamper)."""
    return await store._engine.run(
        lambda tx: tx.rows(sql, params) if sql.startswith("SELECT") else [(tx.execute(sql, params),)]
    )


async def new_item(store: SqlStore, **overrides: Any) -> InboxItem:
    fields: dict[str, Any] = {
        "host": "worker-1",
        "server_name": "notes",
        "server_title": None,
        "server_identity": "stdio:notes",
        "kind": "form",
        "payload": {"message": "Your name?"},
        "session": "session-1",
    }
    return await store.add_item(**(fields | overrides))


async def test_of_two_answers_given_at_once_from_two_connections_exactly_one_wins(store_url: str) -> None:
    async with open_store(store_url) as first:
        second_url = store_url if store_url != "memory" else None
        async with open_store(second_url) if second_url else _same(first) as second:
            for _ in range(5):
                item = await new_item(first)
                outcomes: list[str] = []
                async with anyio.create_task_group() as group:
                    group.start_soon(_answer, first, item.id, "ann", outcomes)
                    group.start_soon(_answer, second, item.id, "bob", outcomes)
                assert len(outcomes) == 2 and outcomes.count("refused") == 1, outcomes
                kept = await first.item(item.id)
                assert kept is not None and kept.status == "answered"
                assert kept.answered_by in ("ann", "bob")
                assert kept.answer == {"action": "accept", "by": kept.answered_by}
            answers = [row for row in await first.audit() if row.event == "answered"]
            assert len(answers) == 5  # one audit row per item: the losing answer left none


async def _answer(store: SqlStore, item_id: str, who: str, outcomes: list[str]) -> None:
    try:
        await store.answer(item_id, {"action": "accept", "by": who}, by=who, address="127.0.0.1")
        outcomes.append(who)
    except AlreadyAnswered:
        outcomes.append("refused")


class _same:
    """The same store again (memory has one per process): concurrency within one process."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def __aenter__(self) -> SqlStore:
        return self.store

    async def __aexit__(self, *exc: object) -> None:
        return None


async def test_the_owner_waiting_on_an_item_wakes_when_another_process_answers_it(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_core, "NOTIFY_FALLBACK_POLL", 60.0)  # PostgreSQL: only NOTIFY wakes it in time
    async with open_store(store_url) as owner:
        item = await new_item(owner)
        async with open_store(store_url) if store_url != "memory" else _same(owner) as inbox:
            woke: list[tuple[InboxItem, float]] = []
            done = anyio.Event()

            async def wait() -> None:
                got = await owner.wait_answer(item.id)
                woke.append((got, time.monotonic()))
                done.set()

            async with anyio.create_task_group() as group:
                group.start_soon(wait)
                await anyio.sleep(0.2)  # the waiter is waiting, its first read done
                assert woke == []
                answered = time.monotonic()
                await inbox.answer(item.id, {"action": "decline"}, by="ann", address="10.0.0.7")
                with anyio.fail_after(5):
                    await done.wait()
            got, at = woke[0]
            assert got.status == "answered" and got.answer == {"action": "decline"}
            assert got.answered_by == "ann" and got.answered_from == "10.0.0.7"
            # PostgreSQL wakes it by NOTIFY (the fallback read is a second away); SQLite reads every 50 ms.
            assert at - answered < 0.5


async def woken_in(board: SqlStore, since: int, change: Callable[[], Awaitable[Any]]) -> float:
    """Seconds from ``change()`` (made while ``board`` waits for a change after ``since``) to its waking."""
    woke, done = [0.0], anyio.Event()

    async def wait() -> None:
        await board.wait_change(since)
        woke[0] = time.monotonic()
        done.set()

    async with anyio.create_task_group() as group:
        group.start_soon(wait)
        await anyio.wait_all_tasks_blocked()  # the board waits (a change before would wake it at once)
        changed = time.monotonic()
        await change()
        with anyio.fail_after(5):
            await done.wait()
    return woke[0] - changed


async def test_the_change_feed_wakes_on_an_item_added_or_answered_by_another_process(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_core, "NOTIFY_FALLBACK_POLL", 60.0)  # PostgreSQL: only NOTIFY in time
    async with (
        open_store(store_url) as board,
        open_store(store_url) if store_url != "memory" else _same(board) as host,
    ):
        added: list[InboxItem] = []

        async def add() -> None:
            added.append(await new_item(host))

        async def answer() -> None:
            await host.answer(added[0].id, {"action": "cancel"}, by="ann", address=None)

        assert await woken_in(board, await board.wait_change(-1), add) < 0.5
        assert await woken_in(board, await board.wait_change(-1), answer) < 0.5


async def named_from(board: SqlStore, host: SqlStore) -> int:
    """A cursor of ``board``'s change feed after which ``host``'s changes are named: once one of its
    probe items is (PostgreSQL: ``board`` listens; a probe added before it did is never named)."""
    seen, _ = await board.wait_changed_items(-1)
    with anyio.fail_after(10):
        while True:
            probe = await new_item(host, host="probe")
            with anyio.move_on_after(1):
                while True:
                    seen, named = await board.wait_changed_items(seen)
                    if named is not None and probe.id in named:
                        return seen


async def test_the_change_feed_names_the_items_changed_by_another_process_or_says_it_cannot(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_core, "NOTIFY_FALLBACK_POLL", 60.0)  # PostgreSQL: only NOTIFY in time
    async with (
        open_store(store_url) as board,
        open_store(store_url) if store_url != "memory" else _same(board) as host,
    ):
        seen, named = await board.wait_changed_items(-1)
        assert named is None  # at first: every pending item is read
        if not store_url.startswith("sqlite"):
            seen = await named_from(board, host)
        first, second = await new_item(host), await new_item(host, routed_to=["sales"])
        await host.answer(first.id, {"action": "cancel"}, by="ann", address=None)
        assert await host.widen_routing(second.id, ["ops"]) is not None  # a change: it was routed
        await anyio.sleep(0.5)  # PostgreSQL: the notifications are in
        with anyio.fail_after(5):
            seen, named = await board.wait_changed_items(seen)
        if store_url.startswith("sqlite"):
            assert named is None  # another process's change is not announced: it polls
        else:
            assert named == frozenset({first.id, second.id})
            got = {item.id: item for item in await board.items([*named, "nope"])}
            assert got[first.id].status == "answered" and got[second.id].status == "pending"
            assert "nope" not in got
        assert {i.id for i in await board.items([first.id, second.id, first.id])} == {first.id, second.id}
        assert await board.items([]) == []
        if store_url.startswith("postgresql"):  # the LISTEN connection lost: what changed is not known
            await host._engine.run(
                lambda tx: tx.rows(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE starts_with(query, 'LISTEN ')"
                )
            )
            with anyio.fail_after(10):
                while named is not None:
                    seen, named = await board.wait_changed_items(seen)


async def test_recent_items_are_the_ended_ones_newest_first_as_routed(store_url: str) -> None:
    async with open_store(store_url) as store:
        ops = await new_item(store, routed_to=["ops"])
        everyone = await new_item(store)
        await new_item(store)  # still pending
        await store.answer(ops.id, {"action": "decline"}, by="ann", address=None)
        await store.close_item(everyone.id, "withdrawn", "the server's session ended")
        ann, bob = Person("ann", ("ops",)), Person("bob", ("sales",))
        assert [i.id for i in await store.recent_items(10)] == [everyone.id, ops.id]
        assert [i.id for i in await store.recent_items(10, ann)] == [everyone.id, ops.id]
        assert [i.id for i in await store.recent_items(10, bob)] == [everyone.id]
        assert [i.id for i in await store.recent_items(1)] == [everyone.id]


async def test_waiting_on_an_item_the_store_does_not_have_is_an_error(store_url: str) -> None:
    async with open_store(store_url) as store:
        with pytest.raises(UnknownItem):
            await store.wait_answer("nope")
        with pytest.raises(UnknownItem):
            await store.answer("nope", {}, by="ann", address=None)


async def test_a_fresh_store_is_migrated_on_first_use_and_migrating_again_changes_nothing(
    store_url: str,
) -> None:
    async with open_store(store_url) as store:
        assert await store.schema_version() == SCHEMA_VERSION
        item = await new_item(store)
        assert await store.migrate() == (SCHEMA_VERSION, SCHEMA_VERSION)
        assert await store.item(item.id) == item


async def test_a_store_newer_than_the_code_is_refused_untouched(store_url: str) -> None:
    if store_url == "memory":
        pytest.skip("a memory store is new with its process")
    async with open_store(store_url) as store:
        await raw(store, "UPDATE store_schema SET version = ?", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreTooNew) as refused:
        async with open_store(store_url):
            pass
    assert f"the store's schema is version {SCHEMA_VERSION + 1}, newer than this host-receiver knows" in str(
        refused.value
    )
    async with open_store(store_url, migrate=False) as store:
        assert await store.schema_version() == SCHEMA_VERSION + 1


async def test_a_sqlite_store_others_may_use_is_refused_with_the_chmod_to_run(tmp_path: Path) -> None:
    path = tmp_path / "fleet.db"
    async with open_store(f"sqlite:///{path}") as store:
        item = await new_item(store)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # made the owner's only
    path.chmod(0o666)  # anyone may now write a row that a resumer runs
    with pytest.raises(UnsafeFile) as refused:
        async with open_store(f"sqlite:///{path}"):
            pass
    assert f"refusing to use the store {path}" in str(refused.value) and "-rw-rw-rw-" in str(refused.value)
    assert f"fix it with: chmod 600 {path}" in str(refused.value)
    path.chmod(0o600)
    async with open_store(f"sqlite:///{path}") as store:
        assert await store.item(item.id) == item


async def test_people_tokens_are_kept_only_as_a_hash_and_authenticate_their_person(store_url: str) -> None:
    async with open_store(store_url) as store:
        ann, token = await store.add_person("ann", ["ops", "security"])
        await store.add_person("bob")
        assert len(token) >= 43  # 32 random bytes
        kept = await raw(store, "SELECT name, token_hash, teams FROM people ORDER BY name")
        assert all(token not in str(row) for row in kept)
        assert kept[0][:2] == ("ann", hashlib.sha256(token.encode()).hexdigest())
        assert await store.authenticate(token) == ann
        assert await store.authenticate(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
        assert [p.name for p in await store.people()] == ["ann", "bob"]
        assert await store.remove_person("ann") and not await store.remove_person("ann")
        assert await store.authenticate(token) is None


async def test_a_person_sees_only_the_items_routed_to_them_or_their_teams(store_url: str) -> None:
    async with open_store(store_url) as store:
        everyone = await new_item(store)
        ops = await new_item(store, routed_to=["ops"])
        bob = await new_item(store, routed_to=["bob"])
        ann = Person("ann", ("ops",))
        assert [i.id for i in await store.pending_items(ann)] == [everyone.id, ops.id]
        assert [i.id for i in await store.pending_items(Person("bob"))] == [everyone.id, bob.id]
        assert [i.id for i in await store.pending_items()] == [everyone.id, ops.id, bob.id]


async def test_the_audit_chain_verifies_and_a_changed_or_removed_row_is_found(store_url: str) -> None:
    async with open_store(store_url) as store:
        item = await new_item(store)
        await store.append_audit(
            "created", host="worker-1", server="notes", item=item.id, detail={"kind": "form"}
        )
        await store.answer(item.id, {"action": "accept"}, by="ann", address="10.0.0.7")
        await store.append_audit("remembered", person="ann", detail={"verdict": "always"})
        rows = await store.audit()
        assert (
            [r.seq for r in rows] == [1, 2, 3] and rows[1].person == "ann" and rows[1].address == "10.0.0.7"
        )
        assert await store.verify_audit() is None
        await raw(store, "UPDATE audit_log SET person = ? WHERE seq = ?", ("mallory", 2))
        broken = await store.verify_audit()
        assert broken is not None and broken.seq == 2 and "changed" in broken.problem
        await raw(store, "UPDATE audit_log SET person = ? WHERE seq = ?", ("ann", 2))
        assert await store.verify_audit() is None
        await raw(store, "DELETE FROM audit_log WHERE seq = ?", (2,))
        broken = await store.verify_audit()
        assert broken is not None and broken.seq == 2 and "missing" in broken.problem


async def test_hostile_server_text_round_trips_unchanged_in_every_stored_field(store_url: str) -> None:
    async with open_store(store_url) as store:
        item = await new_item(
            store,
            server_name=HOSTILE,
            server_title=HOSTILE,
            payload={"message": HOSTILE, HOSTILE: [HOSTILE, 1.5, None]},
        )
        again = await store.item(item.id)
        assert again == item and again.server_name == HOSTILE and again.payload["message"] == HOSTILE
        await store.answer(item.id, {"content": {"name": HOSTILE}}, by="ann", address=None)
        answered = await store.item(item.id)
        assert answered is not None and answered.answer == {"content": {"name": HOSTILE}}
        await store.append_audit("note", server=HOSTILE, detail={"text": HOSTILE})
        assert (await store.audit())[-1].server == HOSTILE and await store.verify_audit() is None


async def test_a_lease_is_held_by_one_owner_until_it_expires_then_another_may_take_it(store_url: str) -> None:
    async with open_store(store_url) as store:
        assert await store.claim("call", "c1", "host-a", 10)
        assert not await store.claim("call", "c1", "host-b", 10)
        assert not await store.renew("call", "c1", "host-b", 1)
        assert await store.renew("call", "c1", "host-a", 0.1)  # its last renewal: a tenth of a second
        await anyio.sleep(0.15)
        assert await store.claim("call", "c1", "host-b", 10)
        assert not await store.renew("call", "c1", "host-a", 10)
        assert not await store.release("call", "c1", "host-a") and await store.release("call", "c1", "host-b")


async def test_ending_a_session_withdraws_its_pending_items_with_the_reason(store_url: str) -> None:
    async with open_store(store_url) as store:
        mine, answered = await new_item(store), await new_item(store)
        other = await new_item(store, session="session-2")
        await store.answer(answered.id, {"action": "accept"}, by="ann", address=None)
        assert await store.withdraw_session("session-1", "the server's session ended") == [mine.id]
        gone = await store.item(mine.id)
        assert gone is not None and gone.status == "withdrawn" and gone.reason == "the server's session ended"
        assert [i.id for i in await store.pending_items()] == [other.id]
        with pytest.raises(AlreadyAnswered):
            await store.answer(mine.id, {"action": "accept"}, by="ann", address=None)
        assert (await store.wait_answer(mine.id)).status == "withdrawn"


async def test_a_session_whose_lease_is_not_renewed_has_its_items_withdrawn_by_the_sweep(
    store_url: str,
) -> None:
    async with open_store(store_url) as store:
        dead = await new_item(store, lease_seconds=60)
        alive = await new_item(store, session="session-2", lease_seconds=60)
        unleased = await new_item(store, session="session-3")
        reason = "the server's session ended"
        assert await store.withdraw_expired_sessions(reason) == []
        assert await store.renew_session("session-2", 600) == 1
        later = time.time() + 120  # the sweep as it runs two minutes on: session-1's lease ran out
        assert await store.withdraw_expired_sessions(reason, now=later) == [dead.id]
        assert await store.withdraw_expired_sessions(reason, now=later) == []  # once
        gone = await store.item(dead.id)
        assert gone is not None and gone.status == "withdrawn" and gone.reason == reason
        assert [i.id for i in await store.pending_items()] == [alive.id, unleased.id]
        assert await store.renew_session("session-1", 10) == 0  # nothing left to claim


async def test_decisions_are_kept_per_server_identity_and_person_or_team(store_url: str) -> None:
    async with open_store(store_url) as store:
        await store.remember("stdio:notes", "team:ops", "always")
        await store.remember("stdio:notes", "person:bob", "never")
        await store.remember("stdio:notes", "team:ops", "session", session="s1")
        kept = await store.decisions("stdio:notes", ["person:ann", "team:ops"])
        assert [(d.subject, d.verdict, d.session) for d in kept] == [("team:ops", "session", "s1")]
        assert await store.decisions("stdio:other", ["team:ops"]) == []
        assert await store.forget("stdio:notes", "team:ops") and not await store.forget(
            "stdio:notes", "team:ops"
        )


async def test_a_continuable_call_is_kept_with_its_round_and_taken_by_one_process_at_a_time(
    store_url: str,
) -> None:
    call = ContinuableCall(
        id="call-1",
        server_identity="stdio:notes",
        address={"command": ["python", "notes.py"], "cwd": "/srv", "env": ["NOTES_DIR"]},
        method="tools/call",
        target=HOSTILE,
        arguments={"text": HOSTILE},
        input_requests={"name": {"method": "elicitation/create", "params": {"message": HOSTILE}}},
        request_state=HOSTILE,
        rounds_used=1,
        deadline=None,
        items={"name": "item-1"},
        created=1.0,
    )
    async with open_store(store_url) as store:
        await store.save_call(call)
        assert await store.call("call-1") == call
        assert await store.claim("call", "call-1", "host-a", 10)
        kept = await store.call("call-1")
        assert kept is not None and kept.lease_owner == "host-a"
        await store.save_call(replace(call, rounds_used=2, request_state="next"))  # its next round
        again = await store.calls()
        assert [(c.rounds_used, c.request_state, c.lease_owner) for c in again] == [(2, "next", "host-a")]
        assert await store.set_call_status("call-1", "finished") and not await store.set_call_status(
            "x", "failed"
        )


async def test_a_followed_remote_task_is_kept_once_listed_with_its_lease_and_forgotten(
    store_url: str,
) -> None:
    task = StoredRemoteTask(
        id="t1",
        identity="http:https://example.com/mcp",
        address={"url": "https://example.com/mcp"},
        version="2026-07-28",
        task_id="server-task-9",
        tool="report",
        arguments={"q": HOSTILE},
        ttl_ms=60_000,
        created=5.0,
    )
    async with open_store(store_url) as store:
        await store.keep_remote_task(task)
        await store.keep_remote_task(replace(task, created=9.0))  # a resume never replaces the record
        assert await store.remote_tasks() == [task]
        assert await store.claim("task", "t1", "host-b", 10)
        assert [t.lease_owner for t in await store.remote_tasks()] == ["host-b"]
        assert await store.forget_remote_task("t1") and await store.remote_tasks() == []


async def test_a_waiter_on_postgresql_still_wakes_after_its_listen_connection_was_cut(
    postgres_cluster: PostgresCluster, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_core, "NOTIFY_FALLBACK_POLL", 60.0)  # only NOTIFY can wake it in time
    database = postgres_url.rsplit("/", 1)[1]
    async with open_store(postgres_url) as owner, open_store(postgres_url) as inbox:
        item = await new_item(owner)
        done = anyio.Event()

        async def wait() -> None:
            await owner.wait_answer(item.id)
            done.set()

        async with anyio.create_task_group() as group:
            group.start_soon(wait)
            await anyio.sleep(0.2)
            listening = (
                "FROM pg_stat_activity WHERE datname = '" + database + "' AND query LIKE 'LISTEN%' "
                "AND state = 'idle'"
            )
            cut = await anyio.to_thread.run_sync(
                postgres_cluster.sql, f"SELECT count(pg_terminate_backend(pid)) {listening}"
            )
            assert cut.strip() == "2"  # each store's LISTEN connection
            for _ in range(200):  # until both listen again (a first retry after 0.1 s)
                await anyio.sleep(0.05)
                if (
                    await anyio.to_thread.run_sync(postgres_cluster.sql, f"SELECT count(*) {listening}")
                ).strip() == "2":
                    break
            else:
                pytest.fail("the stores did not listen again within 10 s")
            answered = time.monotonic()
            await inbox.answer(item.id, {"action": "accept"}, by="ann", address=None)
            with anyio.fail_after(5):
                await done.wait()
            assert time.monotonic() - answered < 0.5  # by NOTIFY on the new connection, not the 1 s read


async def test_the_items_answering_a_calls_input_requests_are_found_by_the_call_and_key(
    store_url: str,
) -> None:
    async with open_store(store_url) as store:
        first = await new_item(store, call=("call-1", "name"))
        await store.close_item(first.id, "withdrawn", "the host stopped")
        again = await new_item(store, call=("call-1", "name"))
        other = await new_item(store, call=("call-1", HOSTILE))
        await new_item(store, call=("call-2", "name"))
        await new_item(store)
        await store.answer(again.id, {"action": "accept", "content": {"name": "Ann"}}, by="ann", address=None)
        found = await store.call_items("call-1")
        assert {key: item.id for key, item in found.items()} == {"name": again.id, HOSTILE: other.id}
        assert found["name"].answer == {"action": "accept", "content": {"name": "Ann"}}
        assert (found["name"].call_id, found["name"].call_key) == ("call-1", "name")
        assert await store.call_items("call-3") == {}


async def test_a_queued_notice_is_queued_once_and_claimed_by_one_of_two_connections(store_url: str) -> None:
    async with open_store(store_url) as first:
        second_url = store_url if store_url != "memory" else None
        async with open_store(second_url) if second_url else _same(first) as second:
            entry = ("person:ann:1", "item-1.item.waiting", {"id": "item-1", "event": "item.waiting"})
            assert await first.queue_notices([entry]) == 1
            assert await second.queue_notices([entry]) == 0  # the idempotency key: queued once
            assert await first.queued_channels() == ["person:ann:1"]
            claims: dict[str, list[Any]] = {}

            async def claim(store: SqlStore, owner: str) -> None:
                claims[owner] = await store.claim_notices("person:ann:1", owner, 60)

            async with anyio.create_task_group() as group:
                group.start_soon(claim, first, "one")
                group.start_soon(claim, second, "two")
            assert sorted(len(c) for c in claims.values()) == [0, 1], claims
            owner, other = ("one", "two") if claims["one"] else ("two", "one")
            (held,) = claims[owner]
            assert held.key == "item-1.item.waiting" and held.notice["id"] == "item-1" and held.attempts == 1
            assert await second.claim_notices("person:ann:1", other, 60) == []
            assert await first.release_notices(owner) == 1  # its process stopped: another takes it
            (again,) = await second.claim_notices("person:ann:1", other, 60)
            assert again.attempts == 2
            assert await first.finish_notices("person:ann:1", [again.key], owner) == 0  # not its claim
            assert await second.finish_notices("person:ann:1", [again.key], other) == 1
            assert await first.claim_notices("person:ann:1", owner, 60) == []
            assert await first.queue_notices([entry]) == 0  # sent: never queued again
            assert await first.queued_channels() == []


async def test_widening_an_items_routing_lets_the_other_team_see_it(store_url: str) -> None:
    async with open_store(store_url) as store:
        item = await new_item(store, routed_to=("ops",))
        sales = Person("bob", ("sales",))
        assert await store.pending_items(sales) == []
        widened = await store.widen_routing(item.id, ["sales"])
        assert widened is not None and widened.routed_to == ("ops", "sales")
        assert [i.id for i in await store.pending_items(sales)] == [item.id]
        everyone = await store.widen_routing((await new_item(store)).id, ["sales"])
        assert everyone is not None and everyone.routed_to == ()  # routed to everyone: stays so
        await store.close_item(item.id, "expired", "no answer")
        assert await store.widen_routing(item.id, ["ops"]) is None


async def test_sent_notices_are_pruned_once_their_item_ended_never_before(store_url: str) -> None:
    async with open_store(store_url) as store:
        waiting, ended = await new_item(store), await new_item(store)
        await store.answer(ended.id, {"action": "decline"}, by="ann", address=None)
        entries: list[tuple[str, str, dict[str, Any]]] = [
            ("c", f"{item.id}.item.waiting", {}) for item in (waiting, ended)
        ]
        entries.append(("c", f"{ended.id}x.item.waiting", {}))  # another item's, never sent
        await store.queue_notices(entries)
        claimed = await store.claim_notices("c", "me", 60)
        await store.finish_notices("c", [n.key for n in claimed if "x" not in n.key], "me")
        assert await store.prune_notices(time.time() - 60) == 0  # sent too recently
        assert await store.prune_notices(time.time() + 1) == 1  # the ended item's only
        assert await store.queue_notices(entries[:1]) == 0  # a pending item's: still not queued again
        rows = await raw(store, "SELECT notice_key FROM notifications ORDER BY notice_key")
        assert sorted(r[0] for r in rows) == sorted([entries[0][1], entries[2][1]])


class _Counted:
    """An engine that counts the transactions run through it (each read of waited items is one)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.runs = 0

    async def run(self, work: Any, *, write: bool = True) -> Any:
        self.runs += 1
        return await self.engine.run(work, write=write)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)


@pytest.mark.slow
async def test_three_hundred_waiting_items_are_read_in_one_query_per_poll_period_and_all_answered(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_core, "NOTIFY_FALLBACK_POLL", 0.2)  # PostgreSQL: 5 periods a second
    async with open_store(store_url) as owner:
        items = [await new_item(owner) for _ in range(300)]
        got: dict[str, InboxItem] = {}

        async def wait(item_id: str) -> None:
            got[item_id] = await owner.wait_answer(item_id)

        with anyio.fail_after(60):  # the group ends once every waiter has its answer
            async with anyio.create_task_group() as group:
                for item in items:
                    group.start_soon(wait, item.id)
                await anyio.sleep(0.5)  # every waiter has read its item once
                counted = _Counted(owner._engine)
                monkeypatch.setattr(owner, "_engine", counted)
                await anyio.sleep(1.0)
                periods = 1.0 / owner._poll
                assert counted.runs <= periods + 3, f"{counted.runs} reads in {periods:g} poll periods"
                async with open_store(store_url) if store_url != "memory" else _same(owner) as inbox:
                    for n, item in enumerate(items):
                        await inbox.answer(item.id, {"action": "accept", "n": n}, by="ann", address=None)
        assert [got[item.id].answer for item in items] == [{"action": "accept", "n": n} for n in range(300)]
