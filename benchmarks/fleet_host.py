"""One host of the ``fleet`` scenario: items put into a shared store, each waited for as a host waits.

``.venv/bin/python -m benchmarks.fleet_host --store URL --host NAME --items N --out PATH [--no-listen]``

It does what a host's store-backed inbox does with each request that needs a
person: :meth:`~host_receiver.store.Store.add_item` (a form, as the web
inbox's request JSON), then :meth:`~host_receiver.store.Store.wait_answer`
in a task of its own, so that all its items wait at once. The items are
added one after the other (requests arrive one by one), each add timed.
When an answer arrives, the delay from the answer (``answered_at``, the
inbox process's clock as it began the answering transaction) to this
process holding the answered item is noted: both clocks are this machine's
``time.time()``. ``--no-listen`` opens the store without its LISTEN/NOTIFY
relay, so that only the store's own reading every ``NOTIFY_FALLBACK_POLL``
seconds tells the host (what happens while notifications are lost). Writes
its measurements as JSON to ``--out`` and exits once every item is answered,
or with a failure at ``--deadline``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from host_receiver.store import SqlStore, open_store, parse_store_url
from host_receiver.store._engines import open_engine
from host_receiver.web import _items
from tests.web.conftest import form_view

#: The form every item asks for: one required text field.
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@asynccontextmanager
async def store_without_listen(url: str) -> AsyncIterator[SqlStore]:
    """The store as :func:`open_store` opens it, but with no LISTEN connection relaying NOTIFY."""
    parsed = parse_store_url(url)
    engine = await open_engine(parsed)
    try:
        yield SqlStore(parsed, engine)
    finally:
        with anyio.CancelScope(shield=True):
            await engine.aclose()


async def run(url: str, host: str, items: int, listen: bool) -> dict[str, Any]:
    """Add ``items`` items and wait for each answer; the add times and the delivery delays (ms)."""
    payload = _items.form(form_view(server="bench", schema=SCHEMA, message="Who are you?"))
    adds: list[float] = []
    delays: list[float] = []
    opened = open_store(url, migrate=False) if listen else store_without_listen(url)
    async with opened as store:

        async def wait(item_id: str) -> None:
            item = await store.wait_answer(item_id)
            arrived = time.time()
            if item.status != "answered" or item.answered_at is None:
                raise RuntimeError(f"item {item_id} ended {item.status}, not answered")
            delays.append((arrived - item.answered_at) * 1e3)

        async with anyio.create_task_group() as group:
            for _ in range(items):
                started = time.perf_counter()
                item = await store.add_item(
                    host=host,
                    server_name="bench",
                    server_title="Benchmark",
                    server_identity="stdio:bench",
                    kind="form",
                    payload=payload,
                    session=f"{host}-session",
                )
                adds.append((time.perf_counter() - started) * 1e3)
                group.start_soon(wait, item.id)
    return {"host": host, "add_ms": adds, "delivery_ms": delays}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--items", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--no-listen", action="store_true")
    parser.add_argument("--deadline", type=float, default=300.0)
    args = parser.parse_args()

    async def bounded() -> dict[str, Any]:
        with anyio.fail_after(args.deadline):
            return await run(args.store, args.host, args.items, not args.no_listen)

    try:
        result = anyio.run(bounded)
    except TimeoutError:
        result = {"host": args.host, "failure": f"not every item answered in {args.deadline:g} s"}
    args.out.write_text(json.dumps(result))
    sys.exit(1 if "failure" in result else 0)


if __name__ == "__main__":
    main()
