"""The commands on the shared store alone: ``store migrate``, ``people``, ``audit``, ``inbox list``,
``inbox serve``.

(About 500 lines, one idea: every command that needs only the store, each a short function over
one store method.)

Each takes ``--store URL`` (or ``$HOST_RECEIVER_STORE``): a SQLite file or a
PostgreSQL URL (docs/fleet.md); ``memory`` is refused, since it would be gone
when the command ends. A URL is shown without its password. ``people add``
prints the new token alone on stdout, once; everything else a person reads
goes to stderr, and text from servers is escaped (``safe_text``). Exit 0 on
success, 2 on a usage error, an unreachable store or a broken audit chain.
``inbox serve`` serves the page and API of every host's items (:mod:`host_receiver.web._board`)
until it is interrupted (Ctrl-C, SIGTERM), printing ``inbox: http://HOST:PORT/`` on stderr once it
listens.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import sys
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio

from host_receiver.cli._hooks import EXIT_FAILURE, EXIT_OK
from host_receiver.cli._notify import (
    add_link_options,
    add_pacing_option,
    add_remind_option,
    duration_option,
)
from host_receiver.errors import ChannelError, InvalidStoreUrl, StoreError, UnsafeFile
from host_receiver.notify import channel_for
from host_receiver.sanitize import safe_text
from host_receiver.store import CallKeeping, SqlStore, StoreUrl, open_store, parse_store_url
from host_receiver.store._core import check_name
from host_receiver.store._leases import DEFAULT_LEASE

__all__ = ["DEFAULT_LEASE", "STORE_ENV", "add_store_commands", "call_keeping", "lease_owner", "store_option"]

#: The environment variable ``--store`` defaults to.
STORE_ENV = "HOST_RECEIVER_STORE"
#: ``--lease``: how often a host renews its claims (seconds).


async def call_keeping(args: argparse.Namespace, stack: AsyncExitStack) -> CallKeeping | None:
    """With a shared ``--store``, the store opened for ``stack``'s life, to keep calls in with
    ``--lease``; None with ``memory``. Raises :class:`StoreError` when it cannot be opened."""
    url: StoreUrl | None = getattr(args, "store", None)
    if url is None or not url.shared:
        return None
    store = await stack.enter_async_context(open_store(url))
    return CallKeeping(store=store, lease=getattr(args, "lease", DEFAULT_LEASE), owner=lease_owner(args))


def lease_owner(args: argparse.Namespace) -> str:
    """This process's name in the leases it takes: ``--host-name`` (default ``HOSTNAME:PID``) and a
    random suffix (so that two processes of one name never share a lease), shown to whoever is
    refused the call or task it holds."""
    name = getattr(args, "host_name", None) or f"{socket.gethostname()}:{os.getpid()}"
    return f"{name}/{secrets.token_hex(4)}"


def store_option(value: str) -> StoreUrl:
    """An argparse ``type``: the parsed ``--store``, or argparse's usage error saying the forms."""
    try:
        return parse_store_url(value)
    except InvalidStoreUrl as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--store ")) from None


def public_url_option(value: str) -> str:
    """An argparse ``type``: ``--public-url``, an http(s) address without credentials, query or
    fragment (a path prefix may follow the host), without its trailing slash. The error does not
    repeat it (it might hold a password)."""
    wrong = "not an http(s) address without credentials, query or fragment, like https://inbox.example.com"
    parts = urllib.parse.urlsplit(value)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or "@" in parts.netloc
        or parts.query
        or parts.fragment
        or not value.isprintable()
    ):
        raise argparse.ArgumentTypeError(wrong)
    try:
        parts.port  # noqa: B018 (raises ValueError for a port that is not one)
    except ValueError:
        raise argparse.ArgumentTypeError(wrong) from None
    return value.rstrip("/")


def _add_store(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        type=store_option,
        default=os.environ.get(STORE_ENV),
        metavar="URL",
        help=f"the shared store: sqlite:///PATH (or a path ending .db or .sqlite) or postgresql://... "
        f"(default: ${STORE_ENV}); a password in the URL is never printed",
    )


def add_store_commands(commands: Any) -> None:
    """``store``, ``people``, ``audit`` and ``inbox``, added to ``commands`` (argparse subparsers)."""
    store = commands.add_parser(
        "store",
        help="the shared store: bring its schema up to date",
        description="The shared store (docs/fleet.md).",
    )
    store_actions = store.add_subparsers(dest="store_action", metavar="ACTION", required=True)
    migrate = store_actions.add_parser(
        "migrate",
        help="apply the schema migrations the store lacks (also done on first use)",
        description="Apply the schema migrations the store lacks. A store newer than this host-receiver "
        "is refused, untouched.",
    )
    _add_store(migrate)
    migrate.set_defaults(func=_command(_migrate, "store migrate", migrate=False))

    people = commands.add_parser(
        "people",
        help="the people who answer through the shared store's inbox",
        description="The people who answer through the inbox of a shared store, and their teams.",
    )
    people_actions = people.add_subparsers(dest="people_action", metavar="ACTION", required=True)
    add = people_actions.add_parser(
        "add",
        help="add a person; prints their new token alone on stdout, once",
        description="Add a person (and their teams). Their new token is printed alone on one line on "
        "stdout, once: the store keeps only a hash of it.",
    )
    add.add_argument("name", metavar="NAME", help="the person's name (letters, digits, . _ @ + -)")
    add.add_argument(
        "--team", action="append", default=[], metavar="TEAM", help="a team of theirs (repeatable)"
    )
    add.add_argument(
        "--notify",
        action="append",
        default=[],
        metavar="URL",
        help="a channel that tells them when an item waits for them (repeatable): webhook+https://... "
        "or any Apprise URL (docs/notify.md); it holds secrets: never shown",
    )
    _add_store(add)
    add.set_defaults(func=_command(_people_add, "people add"))
    notify = people_actions.add_parser(
        "notify",
        help="add a notification channel to a person, or remove theirs (--clear)",
        description="Add a channel (a webhook+https:// or Apprise URL, docs/notify.md) that `inbox serve` "
        "tells the person through when an item waits for them; --clear removes every channel of theirs "
        "first (alone: just removes them). A channel URL holds secrets: it is never shown.",
    )
    notify.add_argument("name", metavar="NAME")
    notify.add_argument("url", nargs="?", metavar="URL", help="the channel to add")
    notify.add_argument("--clear", action="store_true", help="remove the person's channels first")
    _add_store(notify)
    notify.set_defaults(func=_command(_people_notify, "people notify"))
    listing = people_actions.add_parser(
        "list", help="list the people, their teams and channels (redacted; never a token)"
    )
    _add_store(listing)
    listing.set_defaults(func=_command(_people_list, "people list"))
    remove = people_actions.add_parser("remove", help="remove a person: their token stops working")
    remove.add_argument("name", metavar="NAME")
    _add_store(remove)
    remove.set_defaults(func=_command(_people_remove, "people remove"))

    audit = commands.add_parser(
        "audit", help="the shared store's audit log: list it, verify its chain", description="The audit log."
    )
    audit_actions = audit.add_subparsers(dest="audit_action", metavar="ACTION", required=True)
    audit_list = audit_actions.add_parser("list", help="list the audit log, oldest first")
    audit_list.add_argument("--json", action="store_true", help="print a JSON array of the rows")
    _add_store(audit_list)
    audit_list.set_defaults(func=_command(_audit_list, "audit list"))
    verify = audit_actions.add_parser(
        "verify",
        help="check the hash chain: exit 0 when intact, 2 naming the first row that is not",
        description="Check that no row of the audit log was changed or removed: each row carries the "
        "hash of the one before.",
    )
    _add_store(verify)
    verify.set_defaults(func=_command(_audit_verify, "audit verify"))

    inbox = commands.add_parser(
        "inbox", help="the shared store's inbox: list the pending items", description="The shared inbox."
    )
    inbox_actions = inbox.add_subparsers(dest="inbox_action", metavar="ACTION", required=True)
    inbox_list = inbox_actions.add_parser("list", help="list the pending items, oldest first (for scripts)")
    inbox_list.add_argument("--json", action="store_true", help="print a JSON array of the items")
    _add_store(inbox_list)
    inbox_list.set_defaults(func=_command(_inbox_list, "inbox list"))
    serve = inbox_actions.add_parser(
        "serve",
        help="serve the inbox's page and API for every host of the store (people's tokens sign in)",
        description="Serve the page and JSON API of docs/inbox.md for every host of the store; each "
        "person signs in with their token (bearer token, or http://HOST:PORT/?token=TOKEN) and sees "
        "the items routed to them or their teams. Several may serve one store at once.",
    )
    serve.add_argument(
        "--listen",
        default="127.0.0.1:0",
        metavar="HOST:PORT",
        help="where to listen (default: 127.0.0.1:0, a free port on this machine; another address "
        "needs --cert and --key, or is warned about)",
    )
    serve.add_argument("--cert", metavar="FILE", help="serve over TLS with this certificate")
    serve.add_argument("--key", metavar="FILE", help="the private key of --cert")
    serve.add_argument(
        "--notify",
        action="append",
        default=[],
        metavar="URL",
        help="tell this channel of every item that waits (repeatable): webhook+https://... (signed with "
        "$HOST_RECEIVER_WEBHOOK_SECRET) or any Apprise URL; the people an item is routed to are told "
        "through their own channels (people notify) whether or not this is given; once across every "
        "process serving the store (docs/notify.md)",
    )
    add_pacing_option(serve)
    add_remind_option(serve)
    add_link_options(serve)
    serve.add_argument(
        "--public-url",
        type=public_url_option,
        default=None,
        metavar="URL",
        help="where people reach this inbox (behind a load balancer or proxy), e.g. "
        "https://inbox.example.com: the origin of the links in notifications, and a Host and Origin "
        "taken besides the listen address",
    )
    serve.add_argument(
        "--escalate-after",
        type=duration_option,
        default=None,
        metavar="DURATION",
        help="with --escalate-to: once an item has waited this long, route it to them as well and tell "
        "them through their channels",
    )
    serve.add_argument(
        "--escalate-to",
        action="append",
        default=[],
        metavar="NAME",
        help="a person or team of the store an item is escalated to (repeatable)",
    )
    _add_store(serve)
    serve.set_defaults(func=_serve_command)


def _serve_command(args: argparse.Namespace) -> int:
    """``inbox serve``: its options checked before the store is opened."""
    if (args.cert is None) != (args.key is None):
        print("host-receiver inbox serve: --cert and --key go together", file=sys.stderr)
        return EXIT_FAILURE
    try:
        from host_receiver.web._serve import parse_listen

        parse_listen(args.listen)
    except ImportError as exc:
        print(f"host-receiver inbox serve: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except ValueError as exc:
        print(f"host-receiver inbox serve: --listen: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    try:
        for number, url in enumerate(args.notify, 1):
            channel_for(url, number, environ=dict(os.environ))
    except ChannelError as exc:
        print(f"host-receiver inbox serve: --notify: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    if (args.escalate_after is None) != (not args.escalate_to):
        print("host-receiver inbox serve: --escalate-after and --escalate-to go together", file=sys.stderr)
        return EXIT_FAILURE
    try:
        for name in args.escalate_to:
            check_name(name, "--escalate-to: a person's or team's")
    except StoreError as exc:
        print(f"host-receiver inbox serve: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    return _command(_inbox_serve, "inbox serve")(args)


async def _inbox_serve(store: SqlStore, args: argparse.Namespace) -> int:
    from host_receiver.web._board import StoreBoard
    from host_receiver.web._fleet_notify import FleetNotifier
    from host_receiver.web._links import SignedLinks

    links = await SignedLinks.of(store, args.link_ttl.seconds) if args.notify_links == "signed" else None
    board = StoreBoard(store, links=links, public_url=args.public_url)
    notifier = FleetNotifier(
        store,
        args.notify,
        environ=os.environ,
        every=args.notify_every.seconds,
        escalate_after=args.escalate_after.seconds if args.escalate_after is not None else None,
        escalate_to=args.escalate_to,
        remind_every=args.remind_every.seconds if args.remind_every is not None else None,
        links=links,
    )
    try:
        async with board.serve(args.listen, certfile=args.cert, keyfile=args.key):
            assert board.origin is not None
            async with notifier.running(args.public_url or board.origin):
                print(f"inbox: {board.origin}/", file=sys.stderr, flush=True)
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for _ in signals:
                        break
    except OSError as exc:
        reason = exc.strerror or str(exc)
        print(f"host-receiver inbox serve: cannot listen on {args.listen}: {reason}", file=sys.stderr)
        return EXIT_FAILURE
    print("inbox: stopped", file=sys.stderr)
    return EXIT_OK


def _command(
    work: Callable[[SqlStore, argparse.Namespace], Awaitable[int]], name: str, *, migrate: bool = True
) -> Callable[[argparse.Namespace], int]:
    """A subcommand's ``func``: open the store ``--store`` names, run ``work``, report a store error."""

    def run(args: argparse.Namespace) -> int:
        url: StoreUrl | None = args.store
        if url is None or not url.shared:
            print(
                f"host-receiver {name}: give --store URL or ${STORE_ENV}: a shared store "
                "(sqlite:///PATH or postgresql://...); 'memory' would be gone when the command ends",
                file=sys.stderr,
            )
            return EXIT_FAILURE

        async def main() -> int:
            async with open_store(url, migrate=migrate) as store:
                return await work(store, args)

        try:
            return anyio.run(main)
        except (StoreError, UnsafeFile) as exc:
            print(f"host-receiver {name}: {exc}", file=sys.stderr)
            return EXIT_FAILURE

    return run


async def _migrate(store: SqlStore, args: argparse.Namespace) -> int:
    before, after = await store.migrate()
    change = f"migrated from version {before}" if before != after else "already up to date"
    print(f"store {store.url.shown}: schema version {after} ({change})", file=sys.stderr)
    return EXIT_OK


async def _people_add(store: SqlStore, args: argparse.Namespace) -> int:
    person, token = await store.add_person(args.name, args.team, channels=args.notify)
    print(token, flush=True)
    teams = f" in {', '.join(person.teams)}" if person.teams else ""
    channels = f", {len(args.notify)} channel(s)" if args.notify else ""
    print(
        f"added {person.name}{teams}{channels}: the token above is shown once; it signs in as the bearer "
        "token or as http://HOST:PORT/?token=TOKEN",
        file=sys.stderr,
    )
    return EXIT_OK


async def _people_notify(store: SqlStore, args: argparse.Namespace) -> int:
    if args.url is None and not args.clear:
        print("host-receiver people notify: give a channel URL to add, or --clear", file=sys.stderr)
        return EXIT_FAILURE
    name = safe_text(args.name, 80)
    if not any(person.name == args.name for person in await store.people()):
        print(f"host-receiver people notify: nobody named {name} (see 'people list')", file=sys.stderr)
        return EXIT_FAILURE
    if args.clear:
        removed = await store.clear_channels(args.name)
        print(f"removed {removed} channel(s) of {name}", file=sys.stderr)
    if args.url is not None:
        await store.add_channel(args.name, args.url)
        count = len(await store.channels(args.name))
        print(f"{name} now has {count} channel(s): see 'people list' (redacted)", file=sys.stderr)
    return EXIT_OK


async def _people_list(store: SqlStore, args: argparse.Namespace) -> int:
    from host_receiver.notify import redact

    people = await store.people()
    channels: dict[str, list[str]] = {}
    for channel in await store.channels():
        theirs = channels.setdefault(channel.person, [])
        theirs.append(redact(channel.url, len(theirs) + 1))
    if not people:
        print(f"nobody in the store {store.url.shown}", file=sys.stderr)
    for person in people:
        shown = ", ".join(channels.get(person.name, ())) or "-"
        print(f"{person.name}\t{','.join(person.teams) or '-'}\t{shown}")
    return EXIT_OK


async def _people_remove(store: SqlStore, args: argparse.Namespace) -> int:
    if not await store.remove_person(args.name):
        print(
            f"host-receiver people remove: nobody named {safe_text(args.name, 80)} (see 'people list')",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    print(f"removed {args.name}: their token no longer works", file=sys.stderr)
    return EXIT_OK


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


async def _audit_list(store: SqlStore, args: argparse.Namespace) -> int:
    rows = await store.audit()
    if args.json:
        print(json.dumps([_audit_json(row) for row in rows], ensure_ascii=True))
        return EXIT_OK
    for row in rows:
        fields = [
            str(row.seq),
            _when(row.at),
            row.event,
            row.person or "-",
            row.address or "-",
            row.host or "-",
        ]
        fields += [
            row.server or "-",
            row.item or "-",
            json.dumps(row.detail, ensure_ascii=True, sort_keys=True),
        ]
        print("\t".join(safe_text(field, 500) for field in fields))
    return EXIT_OK


def _audit_json(row: Any) -> dict[str, Any]:
    return {
        "seq": row.seq,
        "at": row.at,
        "event": row.event,
        "host": row.host,
        "server": row.server,
        "item": row.item,
        "person": row.person,
        "address": row.address,
        "detail": row.detail,
        "hash": row.hash,
    }


async def _audit_verify(store: SqlStore, args: argparse.Namespace) -> int:
    broken = await store.verify_audit()
    if broken is not None:
        print(
            f"host-receiver audit verify: the chain is broken at row {broken.seq}: {broken.problem}",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    rows = len(await store.audit())
    print(f"audit log intact: {rows} row(s)", file=sys.stderr)
    return EXIT_OK


async def _inbox_list(store: SqlStore, args: argparse.Namespace) -> int:
    items = await store.pending_items()
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "id": item.id,
                        "host": item.host,
                        "server": {"name": item.server_name, "title": item.server_title},
                        "kind": item.kind,
                        "routedTo": list(item.routed_to),
                        "created": item.created,
                        "expires": item.expires,
                        "request": item.payload,
                    }
                    for item in items
                ],
                ensure_ascii=True,
            )
        )
        return EXIT_OK
    for item in items:
        routed = ",".join(item.routed_to) or "everyone"
        fields = [
            item.id,
            _when(item.created),
            item.kind,
            item.host,
            item.server_title or item.server_name,
            routed,
        ]
        print("\t".join(safe_text(field, 200) for field in fields))
    return EXIT_OK
