"""``inbox serve`` for the ``fleet`` scenario, each answer's time inside it split into stages.

``.venv/bin/python -m benchmarks.fleet_inbox --answers-out PATH inbox serve ...`` runs
``host-receiver inbox serve ...`` with the store's answer path wrapped in this process
(a benchmark-only figure; nothing of host-receiver changes), and writes one JSON line
per answer given to ``PATH`` (all times this machine's ``time.time()``):

- ``received``: the answering HTTP request reached the app;
- ``called``: :meth:`Store.answer` was called (the person and the item read meanwhile);
  the item's ``answered_at`` is taken here, the start of the hosts' "answer -> notified";
- ``thread``: a worker thread began the transaction's step (after the thread wait);
- ``pool``, ``begun``: it asked the pool for a connection; the first statement began (lent);
- ``lock``, ``locked``: the audit append asked for its advisory lock, and held it;
- ``done``: the transaction's work returned; ``committed``: its commit too;
- ``returned``: :meth:`Store.answer` returned (the event loop back).

:data:`ANSWER_STAGES` names the differences the scenario reports.
"""

from __future__ import annotations

import contextvars
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The stages of an answer inside ``inbox serve``: (name, from mark, to mark).
ANSWER_STAGES = (
    ("request -> answer called", "received", "called"),
    ("thread wait", "called", "thread"),
    ("pool wait", "pool", "begun"),
    ("begun -> lock asked", "begun", "lock"),
    ("audit lock wait", "lock", "locked"),
    ("lock held -> work done", "locked", "done"),
    ("commit", "done", "committed"),
    ("committed -> returned", "committed", "returned"),
)

_received: contextvars.ContextVar[float | None] = contextvars.ContextVar("received", default=None)
_marks: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar("marks", default=None)
_thread = threading.local()


def install(out: Path) -> None:
    """Wrap the app, :meth:`SqlStore.answer`, the pool and the audit lock; write each answer to ``out``."""
    import psycopg_pool

    from host_receiver.store._engines import Tx, _PostgresEngine
    from host_receiver.store._store import SqlStore
    from host_receiver.web import _board
    from host_receiver.web._app import build_app

    sink = out.open("a", buffering=1)

    def timed_app(board: Any) -> Any:
        app = build_app(board)

        async def asgi(scope: Any, receive: Any, send: Any) -> None:
            if scope.get("type") == "http" and str(scope.get("path", "")).endswith("/answer"):
                _received.set(time.time())
            await app(scope, receive, send)

        return asgi

    setattr(_board, "build_app", timed_app)  # noqa: B010 (a benchmark's wrapper)

    answer = SqlStore.answer

    async def timed_answer(store: SqlStore, item_id: str, *args: Any, **kwargs: Any) -> Any:
        marks = {"received": _received.get() or time.time(), "called": time.time()}
        _marks.set(marks)
        try:
            return await answer(store, item_id, *args, **kwargs)
        finally:
            marks["returned"] = time.time()
            _marks.set(None)
            sink.write(json.dumps(marks) + "\n")

    setattr(SqlStore, "answer", timed_answer)  # noqa: B010

    engine_run = _PostgresEngine.run

    async def timed_run(engine: Any, work: Callable[[Tx], Any], *, write: bool = True) -> Any:
        if _marks.get() is None:
            return await engine_run(engine, work, write=write)

        def timed_work(tx: Tx) -> Any:
            result = work(tx)
            mark("done")
            return result

        return await engine_run(engine, timed_work, write=write)

    setattr(_PostgresEngine, "run", timed_run)  # noqa: B010
    getconn = psycopg_pool.ConnectionPool.getconn

    def timed_getconn(pool: Any, *args: Any, **kwargs: Any) -> Any:
        marks: dict[str, float] | None = getattr(_thread, "marks", None)
        if marks is not None:
            marks.setdefault("pool", time.time())
        return getconn(pool, *args, **kwargs)

    setattr(psycopg_pool.ConnectionPool, "getconn", timed_getconn)  # noqa: B010

    rows = Tx.rows
    execute = Tx.execute

    def mark(name: str) -> None:
        marks: dict[str, float] | None = getattr(_thread, "marks", None)
        if marks is not None:
            marks.setdefault(name, time.time())

    def timed_rows(tx: Tx, sql: str, params: Any = ()) -> Any:
        mark("begun")
        locking = sql == tx.dialect.lock_writers
        if locking:
            mark("lock")
        try:
            return rows(tx, sql, params)
        finally:
            if locking:
                mark("locked")

    def timed_execute(tx: Tx, sql: str, params: Any = ()) -> Any:
        mark("begun")
        return execute(tx, sql, params)

    setattr(Tx, "rows", timed_rows)  # noqa: B010
    setattr(Tx, "execute", timed_execute)  # noqa: B010

    import anyio.to_thread

    to_thread = anyio.to_thread.run_sync

    async def timed_run_sync(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        marks = _marks.get()
        if marks is None:
            return await to_thread(function, *args, **kwargs)

        def in_thread() -> Any:
            _thread.marks = marks
            marks.setdefault("thread", time.time())
            try:
                return function(*args)
            finally:
                _thread.marks = None
                marks.setdefault("committed", time.time())

        return await to_thread(in_thread, **kwargs)

    setattr(anyio.to_thread, "run_sync", timed_run_sync)  # noqa: B010


def main() -> None:
    args = sys.argv[1:]
    if len(args) < 2 or args[0] != "--answers-out":
        sys.exit("usage: python -m benchmarks.fleet_inbox --answers-out PATH inbox serve ...")
    install(Path(args[1]))
    from host_receiver.cli import main as cli_main

    cli_main(args[2:])


if __name__ == "__main__":
    main()
