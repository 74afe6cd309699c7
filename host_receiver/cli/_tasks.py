"""``host-receiver tasks``: the servers' tasks kept in a task store, listed, resumed, cancelled.

The store is ``--task-store PATH`` or ``$HOST_RECEIVER_TASK_STORE``, the file
``call --task-store`` and ``run --call --task-store`` keep a server's task in
until it ends (:mod:`host_receiver.client.remote_tasks.store`).

- ``tasks`` prints one line per kept task: its ID, the tool, the server's
  task id, its age and ttl, the server's identity as computed now from the
  command line (and the file it runs) or URL the record holds, never the
  identity the record says; a record that cannot be read is skipped with one
  line naming it, the others listed.
- ``tasks resume ID SERVER`` reconnects to the task's server, given as for
  ``call`` (``-- COMMAND [ARG...]``, ``--url URL`` or ``--server NAME``, with
  its ``--env``, ``--header`` and ``--auth-*``): nothing the store holds
  chooses what runs, where it connects or what it is given. The identity
  computed from the server given must be the one computed from the record's
  command line and directory (or URL), else it is refused, naming both
  (exit 2); without a server, the record's is shown to be given. Then it
  speaks the protocol version agreed before, follows the task to its end and
  prints its result as ``call`` does (exit 0, 1 when ``isError``, 2 on
  failure). The options of ``run`` serve the server meanwhile.
- On a shared ``--store``, ``tasks resume`` follows the task under its lease
  (:mod:`host_receiver.client.remote_tasks.shared`): a task another process
  follows is refused, naming that process and until when its lease holds
  (exit 2); the task's ``inputRequests`` answered in the inbox since are sent
  with ``tasks/update``, the others asked through ``--approve``/``--elicit``.
- ``tasks cancel ID SERVER`` reconnects the same way and sends ``tasks/cancel``.
- A task whose ttl has passed is removed without connecting, one a server
  says it does not know is removed, each with one line saying so (exit 2);
  an ID the store does not hold is an error (exit 2). A store that is not the
  user's, or that group or others may use, is refused with the ``chmod`` to run.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from typing import Any

import anyio

from host_receiver.cli._hooks import EXIT_FAILURE, EXIT_OK, describe_error
from host_receiver.cli._options import add_connection_options
from host_receiver.cli._run import serve
from host_receiver.cli._show import TASK_STORE_ENV, add_task_store_option, remote_task_store, run_and_print
from host_receiver.cli._store import STORE_ENV, store_option
from host_receiver.cli._target import prepare
from host_receiver.client.host import ServerConnection
from host_receiver.client.remote_tasks.shared import SharedRemoteTaskStore
from host_receiver.client.remote_tasks.store import (
    RemoteTaskStore,
    StoredTask,
    server_address,
    server_identity,
)
from host_receiver.errors import RemoteTaskLost, StoreError, TaskLeased, UnsafeFile
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
    tasks.add_argument(
        "--store",
        type=store_option,
        default=argparse.SUPPRESS,
        metavar="URL",
        help=f"a shared store keeping the tasks, when no --task-store is given (default: ${STORE_ENV})",
    )
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
        action = actions.add_parser(
            name,
            help=summary,
            description=f"{summary[0].upper()}{summary[1:]}. Give the server as for 'call' "
            "(-- COMMAND [ARG...], --url URL or --server NAME): it must be the task's server.",
            usage=f"host-receiver tasks {name} [OPTIONS] ID -- COMMAND [ARG...]\n"
            f"       host-receiver tasks {name} [OPTIONS] ID --url URL|--server NAME",
        )
        action.add_argument("id", metavar="ID", help="the task's ID, as 'host-receiver tasks' lists it")
        add_task_store_option(action)
        add_connection_options(action)
        action.set_defaults(func=run, server_command=[], json=False)
        if name == "resume":
            action.add_argument("--json", action="store_true", help="print the result as JSON")


def _store(args: argparse.Namespace) -> RemoteTaskStore | None:
    try:
        store = remote_task_store(args)
    except StoreError as exc:  # $HOST_RECEIVER_STORE of no known form
        print(f"host-receiver tasks: {exc}", file=sys.stderr)
        return None
    if store is None:
        print(
            f"host-receiver tasks: give --task-store PATH or a shared --store URL (or set ${TASK_STORE_ENV} "
            f"or ${STORE_ENV})",
            file=sys.stderr,
        )
    return store


def _list(args: argparse.Namespace) -> int:
    store = _store(args)
    if store is None:
        return EXIT_FAILURE
    try:
        kept, damaged = anyio.run(store.read)
    except (UnsafeFile, StoreError) as exc:
        print(f"host-receiver tasks: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    for bad in damaged:
        print(
            f"host-receiver: skipped the damaged task record {safe_text(bad.id, 40)} "
            f"(row {bad.row}): {bad.problem}",
            file=sys.stderr,
        )
    if not kept and not damaged:
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
            f"{int(now - task.created)}s old, {ttl}  {safe_text(server_identity(task.address), None)}"
        )
    return EXIT_OK


def _expired(task: StoredTask) -> str:
    return f"host-receiver: task {task.id} ({safe_text(task.tool, 60)}) is past its ttl: removed"


def _found(args: argparse.Namespace) -> tuple[RemoteTaskStore, StoredTask] | int:
    """The store and the task ``args.id`` names, or the exit code after saying why not."""
    store = _store(args)
    if store is None:
        return EXIT_FAILURE
    try:
        task = anyio.run(store.get, args.id)
    except (UnsafeFile, StoreError) as exc:
        print(f"host-receiver tasks {args.tasks_action}: {exc}", file=sys.stderr)
        return EXIT_FAILURE
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
    """Connect to the server the options name, if it is ``task``'s, and run ``body`` there."""
    action = f"host-receiver tasks {args.tasks_action}"
    recorded = server_identity(task.address)
    if not (args.server_command or args.url or args.server):
        names = task.address.get("env") or []
        with_env = f" with --env {' --env '.join(map(safe_text, names))}" if names else ""
        print(
            f"{action}: give the task's server as you gave it to 'call'{with_env}: it was {_where(task)} "
            "(check that it is yours before you give it)",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    target = prepare(args)
    if isinstance(target, int):
        return target
    address = server_address(target.transport)
    given = None if address is None else server_identity(address)
    if given != recorded:
        print(
            f"{action}: refusing: task {task.id} was called on {safe_text(recorded, None)}, "
            f"not on the server given, {safe_text(given or target.where, None)}",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    args.protocol = task.version
    return anyio.run(serve, args, target, body)


def _where(task: StoredTask) -> str:
    """The record's server as it would be given on a command line (shown, never run)."""
    address = task.address
    if "url" in address:
        return f"--url {safe_text(shlex.quote(address['url']), None)}"
    command = safe_text(shlex.join(address["command"]), None)
    return f"-- {command} (in {safe_text(address['cwd'], None)})"


def _resume(args: argparse.Namespace) -> int:
    found = _found(args)
    if isinstance(found, int):
        return found
    store, task = found
    if isinstance(store, SharedRemoteTaskStore):  # one process at a time: said before connecting
        try:
            record = anyio.run(store.record, task.id)
        except StoreError as exc:
            print(f"host-receiver tasks resume: {exc}", file=sys.stderr)
            return EXIT_FAILURE
        expires = None if record is None else record.lease_expires
        if record is not None and expires is not None and expires > time.time():
            print(
                f"host-receiver tasks resume: {TaskLeased(task.id, record.lease_owner, expires)}",
                file=sys.stderr,
            )
            return EXIT_FAILURE
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
