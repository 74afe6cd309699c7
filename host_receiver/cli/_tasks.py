"""``host-receiver tasks``: the servers' tasks kept in a task store, listed, resumed, cancelled.

The store is ``--task-store PATH`` or ``$HOST_RECEIVER_TASK_STORE``, the file
``call --task-store`` and ``run --call --task-store`` keep a server's task in
until it ends (:mod:`host_receiver.remote_task_store`).

- ``tasks`` prints one line per kept task: its ID, the tool, the server's
  task id, its age and ttl, the server's identity.
- ``tasks resume ID`` reconnects to the task's server (its command line,
  working directory and the environment variables named when it was called,
  with this environment's values; or its URL) speaking the protocol version
  agreed then, follows the task to its end and prints its result as ``call``
  does (exit 0, 1 when ``isError``, 2 on failure). The options of ``run``
  (hooks, provider, ``--auth-*``, ``--header``) serve the server meanwhile.
- ``tasks cancel ID`` reconnects the same way and sends ``tasks/cancel``.
- A task whose ttl has passed is removed without connecting, one a server
  says it does not know is removed, each with one line saying so (exit 2);
  an ID the store does not hold is an error (exit 2).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import anyio

from host_receiver.cli._hooks import EXIT_FAILURE, EXIT_OK, describe_error
from host_receiver.cli._run import add_connection_options, prepare, serve
from host_receiver.cli._servers import ServerEntry
from host_receiver.cli._show import TASK_STORE_ENV, add_task_store_option, remote_task_store, run_and_print
from host_receiver.client.host import ServerConnection
from host_receiver.errors import RemoteTaskLost
from host_receiver.remote_task_store import RemoteTaskStore, StoredTask
from host_receiver.sanitize import safe_text

__all__ = ["add_tasks_command"]


def add_tasks_command(commands: Any) -> None:
    """The ``tasks`` subcommand, added to ``commands`` (an argparse subparsers object)."""
    tasks = commands.add_parser(
        "tasks",
        help="list the servers' tasks kept by --task-store, resume one, or cancel one",
        description="List the servers' tasks that 'call --task-store' kept because they had not ended "
        "(the host was stopped or killed), each with an ID.",
    )
    add_task_store_option(tasks)
    tasks.set_defaults(func=_list)
    actions = tasks.add_subparsers(dest="tasks_action", metavar="ACTION")
    for name, summary, run in (
        (
            "resume",
            "reconnect to the task's server, follow the task to its end and print its result",
            _resume,
        ),
        ("cancel", "reconnect to the task's server and cancel the task", _cancel),
    ):
        action = actions.add_parser(name, help=summary, description=f"{summary[0].upper()}{summary[1:]}.")
        action.add_argument("id", metavar="ID", help="the task's ID, as 'host-receiver tasks' lists it")
        add_task_store_option(action)
        add_connection_options(action)
        action.set_defaults(func=run, server_command=[], json=False)
        if name == "resume":
            action.add_argument("--json", action="store_true", help="print the result as JSON")


def _store(args: argparse.Namespace) -> RemoteTaskStore | None:
    store = remote_task_store(args)
    if store is None:
        print(f"host-receiver tasks: give --task-store PATH (or set ${TASK_STORE_ENV})", file=sys.stderr)
    return store


def _list(args: argparse.Namespace) -> int:
    store = _store(args)
    if store is None:
        return EXIT_FAILURE
    kept = anyio.run(store.tasks)
    if not kept:
        print(f"no kept tasks ({store.path})", file=sys.stderr)
    now = time.time()
    for task in kept:
        if task.expired(now):
            anyio.run(store.remove, task.id)
            print(_expired(task), file=sys.stderr)
            continue
        ttl = "no ttl" if task.ttl_ms is None else f"ttl {task.ttl_ms // 1000}s"
        print(
            f"{task.id}  {safe_text(task.tool, 60)}  task {safe_text(task.task_id, 80)}  "
            f"{int(now - task.created)}s old, {ttl}  {safe_text(task.identity, None)}"
        )
    return EXIT_OK


def _expired(task: StoredTask) -> str:
    return f"host-receiver: task {task.id} ({safe_text(task.tool, 60)}) is past its ttl: removed"


def _found(args: argparse.Namespace) -> tuple[RemoteTaskStore, StoredTask] | int:
    """The store and the task ``args.id`` names, or the exit code after saying why not."""
    store = _store(args)
    if store is None:
        return EXIT_FAILURE
    task = anyio.run(store.get, args.id)
    if task is None:
        print(
            f"host-receiver tasks {args.tasks_action}: no kept task {safe_text(args.id, 40)} "
            "(see 'host-receiver tasks')",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    if task.expired():
        anyio.run(store.remove, task.id)
        print(_expired(task), file=sys.stderr)
        return EXIT_FAILURE
    return store, task


def _reconnect(args: argparse.Namespace, task: StoredTask, body: Any) -> int:
    """Connect to ``task``'s server as it was reached before and run ``body`` there."""
    address = task.address
    entry = ServerEntry(
        command=tuple(address.get("command", ())),
        url=address.get("url"),
        env={name: os.environ[name] for name in address.get("env", ()) if name in os.environ},
        cwd=address.get("cwd"),
    )
    target = prepare(args, entry)
    if isinstance(target, int):
        return target
    args.protocol = task.version
    return anyio.run(serve, args, target, body)


def _resume(args: argparse.Namespace) -> int:
    found = _found(args)
    if isinstance(found, int):
        return found
    _, task = found
    as_json = args.json or not sys.stdout.isatty()

    async def body(server: ServerConnection) -> int:
        async def resumed(observer: Any) -> Any:
            try:
                return await server.resume_task(
                    task.task_id, task.tool, arguments=task.arguments, on_task=observer
                )
            except RemoteTaskLost as exc:
                raise RemoteTaskLost(f"{exc}: removed task {task.id}") from None

        return await run_and_print(task.tool, server, resumed, as_json=as_json)

    return _reconnect(args, task, body)


def _cancel(args: argparse.Namespace) -> int:
    found = _found(args)
    if isinstance(found, int):
        return found
    store, task = found

    async def body(server: ServerConnection) -> int:
        try:
            await server.cancel_task(task.task_id)
        except RemoteTaskLost as exc:
            await store.remove(task.id)
            print(f"host-receiver: {describe_error(exc)}: removed task {task.id}", file=sys.stderr)
            return EXIT_FAILURE
        except Exception as exc:
            print(f"host-receiver: cancelling task {task.id} failed: {describe_error(exc)}", file=sys.stderr)
            return EXIT_FAILURE
        await store.remove(task.id)
        print(f"host-receiver: cancelled task {task.id} ({safe_text(task.tool, 60)})", file=sys.stderr)
        return EXIT_OK

    return _reconnect(args, task, body)
