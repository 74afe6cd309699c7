"""``host-receiver calls``: the continuable calls of a shared store; ``calls resume ID`` continues one.

``calls --store URL [--json]`` lists the calls kept waiting (a 2026-07-28
call whose input round waited for a person, its host stopped or killed),
one a line, ID first: ID, when, method, tool/prompt/resource, the rounds
used, who holds its lease and until when, the server's identity as computed
from what the record would run, never the identity it says (server text
escaped; ``--json``: a JSON array, kept as sent).

A record is data whoever can write the store wrote (docs/security.md, "What
the shared store may choose"): without a server given, ``calls resume``
shows the identity computed from the command line and directory (or URL) it
is about to use, and refuses a record whose stated identity is not that one;
given a server, the identity computed from it must be the record's.

``calls resume ID --store URL [--json]`` takes the call's lease, connects to
its server as the record says (a stdio server's command line in its
directory, given only what ``--env`` gives: none of this environment's
variables the record names, which a failure shows as a hint; an HTTP
server's URL: give ``--header``/OAuth options as for ``call``) or as
``-- COMMAND``/``--url``/``--server`` say (it must be the same server),
answers the input requests with their inbox items' answers, or through the
hooks (``--approve``, ``--elicit``) when there are none, retries with
``requestState`` and prints the result as ``call`` does: exit 0, 1 when the
result has ``isError``, 2 when the call could not be continued (no such
call, another process holds its lease, the server failed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import anyio

from host_receiver.cli._hooks import EXIT_FAILURE, EXIT_OK, safe_json
from host_receiver.cli._options import add_connection_options, usage_error
from host_receiver.cli._run import serve
from host_receiver.cli._show import run_and_print
from host_receiver.cli._store import STORE_ENV, store_option
from host_receiver.cli._target import Target, prepare
from host_receiver.client._kept_calls import KeptCall, kept_identity
from host_receiver.client.host import ServerConnection
from host_receiver.client.remote_tasks.store import server_address, server_identity
from host_receiver.errors import CallLeased, StoreError, UnsafeFile
from host_receiver.protocol.results import CallToolResult, parse_result
from host_receiver.sanitize import safe_id, safe_text
from host_receiver.store import ContinuableCall, StoreUrl, open_store

__all__ = ["add_calls_command"]


def add_calls_command(commands: Any) -> None:
    """``calls`` and ``calls resume``, added to ``commands`` (argparse subparsers)."""
    calls = commands.add_parser(
        "calls",
        help="list the continuable calls of a shared store, or resume one",
        description="List the 2026-07-28 calls kept in a shared store because their input round waited "
        "for a person when their host stopped, one a line, ID first.",
    )
    _add_store(calls)  # (its own names: the parent's defaults must not hide the subcommand's options)
    calls.add_argument(
        "--json", dest="list_json", action="store_true", help="print a JSON array of the calls"
    )
    calls.set_defaults(func=_list)
    actions = calls.add_subparsers(dest="calls_action", metavar="ACTION")
    resume = actions.add_parser(
        "resume",
        help="continue a call: answer its input requests from the inbox, retry it, print its result",
        description="Take the call's lease, connect to its server, answer its input requests with the "
        "answers of their inbox items (or through --approve/--elicit when there are none), retry the call "
        "with them and its requestState, and print its result as 'call' does.",
        usage="host-receiver calls resume [OPTIONS] ID --store URL [-- COMMAND [ARG...] | --url URL]",
    )
    resume.add_argument("id", metavar="ID", help="the call's ID, as 'host-receiver calls' lists it")
    add_connection_options(resume)  # its --store: the shared store the call is kept in
    resume.add_argument("--json", action="store_true", help="print the result as JSON")
    resume.set_defaults(func=_resume, server_command=[])  # after '--': the command line's parser


def _add_store(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        dest="list_store",
        type=store_option,
        default=os.environ.get(STORE_ENV),
        metavar="URL",
        help=f"the shared store: sqlite:///PATH or postgresql://... (default: ${STORE_ENV})",
    )


def _shared(url: StoreUrl | None, name: str) -> StoreUrl | None:
    if url is None or not url.shared:
        print(
            f"host-receiver {name}: give --store URL or ${STORE_ENV}: the shared store the calls are kept "
            "in (sqlite:///PATH or postgresql://...)",
            file=sys.stderr,
        )
        return None
    return url


def _computed(call: ContinuableCall) -> str:
    """The identity of what the call's record would run (never the identity it says)."""
    try:
        return kept_identity(call.address)
    except ValueError as exc:
        return f"(unusable record: {exc})"


def _when(at: float | None) -> str:
    return "-" if at is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def _list(args: argparse.Namespace) -> int:
    url = _shared(args.list_store, "calls")
    if url is None:
        return EXIT_FAILURE

    async def read() -> list[ContinuableCall]:
        async with open_store(url) as store:
            return [call for call in await store.calls() if call.status == "waiting"]

    try:
        calls = anyio.run(read)
    except (StoreError, UnsafeFile) as exc:
        print(f"host-receiver calls: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    now = time.time()
    if args.list_json:
        print(json.dumps([_call_json(call, now) for call in calls], ensure_ascii=True))
        return EXIT_OK
    if not calls:
        print(f"no continuable calls in {url.shown}", file=sys.stderr)
    for call in calls:
        held = call.lease_expires is not None and call.lease_expires > now
        lease = f"leased until {_when(call.lease_expires)}" if held else "free"
        fields = [
            call.id,
            _when(call.created),
            call.method,
            call.target,
            f"round {call.rounds_used}",
            lease,
            _computed(call),
        ]
        print("\t".join(safe_text(field, 200) for field in fields))
    return EXIT_OK


def _call_json(call: ContinuableCall, now: float) -> dict[str, Any]:
    held = call.lease_expires is not None and call.lease_expires > now
    return {
        "id": call.id,
        "created": call.created,
        "method": call.method,
        "target": call.target,
        "arguments": call.arguments,
        "serverIdentity": _computed(call),
        "address": call.address,
        "inputRequests": call.input_requests,
        "roundsUsed": call.rounds_used,
        "leased": held,
        "leaseExpires": call.lease_expires if held else None,
    }


def _resume(args: argparse.Namespace) -> int:
    action = "host-receiver calls resume"
    url = _shared(args.store, "calls resume")
    if url is None:
        return EXIT_FAILURE

    async def read() -> ContinuableCall | None:
        async with open_store(url) as store:
            return await store.call(args.id)

    try:
        record = anyio.run(read)
    except (StoreError, UnsafeFile) as exc:
        print(f"{action}: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    if record is None or record.status != "waiting":
        what = "no continuable call" if record is None else f"call {safe_id(args.id)} has {record.status}:"
        ending = "(see 'host-receiver calls')" if record is None else "there is nothing to continue"
        name = f" {safe_text(args.id, 40)}" if record is None else ""
        print(f"{action}: {what}{name} {ending}", file=sys.stderr)
        return EXIT_FAILURE
    if record.lease_expires is not None and record.lease_expires > time.time():
        print(f"{action}: {CallLeased(record.id, record.lease_expires)}", file=sys.stderr)
        return EXIT_FAILURE
    target = _target(args, record)
    if isinstance(target, int):
        return target
    as_json = args.json or not sys.stdout.isatty()

    async def body(server: ServerConnection) -> int:
        keeping = server.options.call_store
        assert keeping is not None  # a shared --store: serve kept it
        kept = KeptCall.resumed(keeping, record)
        try:
            await kept.claim()
        except CallLeased as exc:
            print(f"{action}: {exc}", file=sys.stderr)
            return EXIT_FAILURE
        if record.method != "tools/call":
            try:
                result = await server.resume_call(kept)
            except Exception as exc:
                print(f"{action}: {safe_text(str(exc), 2000)}", file=sys.stderr)
                return EXIT_FAILURE
            print(safe_json(result))
            return EXIT_OK

        async def resumed(observer: Any) -> CallToolResult:
            result = await server.resume_call(kept)
            return parse_result(CallToolResult, "tools/call", result, server=server.name)

        return await run_and_print(record.target, server, resumed, as_json=as_json)

    code = anyio.run(serve, args, target, body)
    named = _names_not_given(args, record)
    if code == EXIT_FAILURE and named:
        print(
            f"{action}: the call's server was started with {', '.join(named)} (names only, from the "
            f"record, never passed on by itself): if it needs them, give --env {' --env '.join(named)}",
            file=sys.stderr,
        )
    return code


def _names_not_given(args: argparse.Namespace, record: ContinuableCall) -> list[str]:
    """The variable names the record keeps for its stdio server that ``--env`` did not give, escaped."""
    names = record.address.get("env") if "command" in record.address else None
    given = {entry.partition("=")[0] for entry in args.env}
    return [safe_text(name, 100) for name in names or [] if isinstance(name, str) and name not in given]


def _target(args: argparse.Namespace, record: ContinuableCall) -> Target | int:
    """The call's server: as the options give it, checked to be the one the record would run; else
    as kept, its identity computed from what runs and shown, with only the environment ``--env`` gives."""
    action = "host-receiver calls resume"
    given = bool(args.server_command or args.url or args.server)
    address = record.address
    try:
        recorded = kept_identity(address)
    except ValueError as exc:
        print(f"{action}: refusing call {safe_id(record.id)}: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    if not given:
        if record.server_identity != recorded:
            print(
                f"{action}: refusing call {safe_id(record.id)}: its record says it was made on "
                f"{safe_text(record.server_identity, None)}, but it would run {safe_text(recorded, None)}",
                file=sys.stderr,
            )
            return EXIT_FAILURE
        if "url" in address:
            args.url = address["url"]
        else:
            args.server_command = list(address["command"])  # with the resumer's own --env only
    target = prepare(args)
    if isinstance(target, int):
        return target
    if not given and "command" in address:  # in the directory it was started in
        transport = target.transport
        transport.cwd = address["cwd"]  # type: ignore[attr-defined]
    found = server_address(target.transport)
    identity = None if found is None else server_identity(found)
    if identity != recorded:
        return usage_error(
            args,
            f"refusing: call {safe_id(record.id)} was made on {safe_text(recorded, None)}, not on "
            f"the server given, {safe_text(identity or target.where, None)}",
        )
    if not given:
        print(
            f"{action}: continuing call {safe_id(record.id)} on {safe_text(recorded, None)}", file=sys.stderr
        )
    return target
