"""One host of the ``fleet`` scenario: a host's store-backed inbox, asked for forms that wait in the store.

``.venv/bin/python -m benchmarks.fleet_host --store URL --host NAME --items N --out PATH [--no-listen]``

The host side is the one a host with ``--elicit web`` and a shared store runs:
:class:`~host_receiver.web._fleet.StoreInbox` (its session kept alive as the
CLI keeps it), whose ``fill_form`` puts the item into the store
(:meth:`~host_receiver.store.Store.add_item`) and waits for its answer
(:meth:`~host_receiver.store.Store.wait_answer`). The items are asked for one
after the other (requests arrive one by one; each waits in a task of its
own, so all of them wait at once), each ``add_item`` timed. When an answer
arrives, the delay from the answer (``answered_at``: the inbox process's clock
as it began the answering transaction) to this process holding the answered
item is noted: both clocks are this machine's ``time.time()``. Every form must
end accepted with the person's content. ``--no-listen`` opens the store
without its LISTEN/NOTIFY relay, so that only the store's own reading every
``NOTIFY_FALLBACK_POLL`` seconds tells the host (what happens while
notifications are lost). Writes its measurements as JSON to ``--out`` and
exits once every form is answered, or with a failure at ``--deadline``.

The delivery delay is also split into its stages (:class:`Stages`, a benchmark-only
figure: the store's methods are wrapped in this process): the answer's transaction
begun -> its NOTIFY handed to the store by this host's LISTEN relay (the answering
transaction, its commit, PostgreSQL's delivery, this process's loop reaching the
socket) -> the read that found the item answered begun (the waiter woken and run)
-> that read done (a worker thread, a pool connection, the query) -> the waiter's
caller holding the item. An item whose answer was found by a read begun before its
NOTIFY came (the fallback poll) counts under "by a poll", its whole delay.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio

from host_receiver.store import InboxItem, SqlStore, Store, open_store, parse_store_url
from host_receiver.store._engines import open_engine
from host_receiver.web._fleet import StoreInbox
from tests.web.conftest import form_view

#: The form every item asks for: one required text field.
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@asynccontextmanager
async def store_without_listen(url: str) -> AsyncIterator[SqlStore]:
    """The store as :func:`open_store` opens it, but with no LISTEN connection relaying NOTIFY."""
    parsed = parse_store_url(url)
    engine = await open_engine(parsed)
    try:
        store = SqlStore(parsed, engine)
        reader = getattr(store, "_read_answers", None)  # the waiters' reader, where there is one
        if reader is None:
            yield store
            return
        async with anyio.create_task_group() as group:
            await group.start(reader)
            yield store
            group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await engine.aclose()


class Stages:
    """When each item's NOTIFY reached the store and when the read that found it ended began and
    returned: :class:`SqlStore`'s ``_wake`` and its reads wrapped, in this process only."""

    def __init__(self) -> None:
        self.notified: dict[str, list[float]] = {}
        self.read: dict[str, tuple[float, float]] = {}
        self.ms: dict[str, list[float]] = {}

    def install(self) -> None:
        wake = SqlStore._wake
        stages = self

        def timed_wake(store: SqlStore, item_id: str | None, *known: Any) -> None:
            if item_id is not None:
                stages.notified.setdefault(item_id, []).append(time.time())
            wake(store, item_id, *known)

        read_one = SqlStore.item

        async def timed_item(store: SqlStore, item_id: str) -> InboxItem | None:
            begun = time.time()
            item = await read_one(store, item_id)
            if item is not None and item.status != "pending":
                stages.read.setdefault(item_id, (begun, time.time()))
            return item

        setattr(SqlStore, "_wake", timed_wake)  # noqa: B010 (a benchmark's wrapper)
        setattr(SqlStore, "item", timed_item)  # noqa: B010
        read_many = getattr(SqlStore, "_ended_items", None)  # the batched reads, where they exist
        if read_many is not None:

            async def timed_many(store: SqlStore, ids: Any) -> Any:
                begun = time.time()
                found = await read_many(store, ids)
                for item in found:
                    stages.read.setdefault(item.id, (begun, time.time()))
                return found

            setattr(SqlStore, "_ended_items", timed_many)  # noqa: B010

    def held(self, item: InboxItem, answered_at: float) -> None:
        """Split the delay of ``item``, held now."""
        now = time.time()
        notified = next((t for t in self.notified.pop(item.id, []) if t >= answered_at), None)
        begun, done = self.read.pop(item.id, (now, now))
        if notified is None or begun < notified:
            self.ms.setdefault("by a poll", []).append((now - answered_at) * 1e3)
            return
        for stage, value in (
            ("answer -> notified", notified - answered_at),
            ("notified -> read begun", begun - notified),
            ("read begun -> read", done - begun),
            ("read -> held", now - done),
        ):
            self.ms.setdefault(stage, []).append(value * 1e3)


STAGES = Stages()


class Timed:
    """The store, its ``add_item`` timed and each answer's delivery delay noted; the rest as is."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        self.add_ms: list[float] = []
        self.delivery_ms: list[float] = []
        #: Set when the next ``add_item`` has returned.
        self.added = anyio.Event()

    async def add_item(self, **item: Any) -> InboxItem:
        started = time.perf_counter()
        try:
            return await self.store.add_item(**item)
        finally:
            self.add_ms.append((time.perf_counter() - started) * 1e3)
            self.added.set()
            self.added = anyio.Event()

    async def wait_answer(self, item_id: str) -> InboxItem:
        item = await self.store.wait_answer(item_id)
        if item.answered_at is not None:
            self.delivery_ms.append((time.time() - item.answered_at) * 1e3)
            STAGES.held(item, item.answered_at)
        return item

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


async def run(url: str, host: str, items: int, listen: bool, deadline: float) -> dict[str, Any]:
    """Ask for ``items`` forms and wait for each answer; the add times and the delivery delays (ms)."""
    view = form_view(server="bench", schema=SCHEMA, message="Who are you?")
    outcomes: list[str] = []
    opened = open_store(url, migrate=False) if listen else store_without_listen(url)
    async with opened as store:
        timed = Timed(store)
        inbox = StoreInbox(cast(Store, timed), host=host, session=secrets.token_hex(16), timeout=deadline)

        async def ask() -> None:
            result = await inbox.fill_form(view)
            content = result.content or {}
            outcomes.append("ok" if result.action == "accept" and content.get("name") else repr(result))

        async with anyio.create_task_group() as group:
            group.start_soon(inbox.keep_alive)
            async with anyio.create_task_group() as asking:
                for _ in range(items):
                    added = timed.added
                    asking.start_soon(ask)
                    await added.wait()
            group.cancel_scope.cancel()
    result: dict[str, Any] = {
        "host": host,
        "add_ms": timed.add_ms,
        "delivery_ms": timed.delivery_ms,
        "stages_ms": STAGES.ms,
    }
    wrong = [o for o in outcomes if o != "ok"]
    if wrong:
        result["failure"] = f"{len(wrong)} forms did not end accepted: {wrong[0][:200]}"
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--items", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--no-listen", action="store_true")
    parser.add_argument("--deadline", type=float, default=300.0)
    args = parser.parse_args()
    STAGES.install()

    async def bounded() -> dict[str, Any]:
        with anyio.fail_after(args.deadline):
            return await run(args.store, args.host, args.items, not args.no_listen, args.deadline)

    try:
        result = anyio.run(bounded)
    except TimeoutError:
        result = {"host": args.host, "failure": f"not every item answered in {args.deadline:g} s"}
    args.out.write_text(json.dumps(result))
    sys.exit(1 if "failure" in result else 0)


if __name__ == "__main__":
    main()
