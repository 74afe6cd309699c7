"""A host on a shared store: ``--host-name``, ``--for``, ``--lease``, and its inbox kept in the store.

With ``--approve web`` or ``--elicit web`` and a shared ``--store`` (SQLite,
PostgreSQL), the host's inbox is a :class:`~host_receiver.web._fleet.StoreInbox`:
its items wait in the store under ``--host-name`` (default ``HOSTNAME:PID``),
routed to the ``--for`` names (default: everyone of the store), renewed every
``--lease`` seconds; it serves a page of its own only with ``--inbox-listen``.
Its remembered decisions are the store's
(:class:`~host_receiver.people.shared.SharedRememberDecisions`). A store that
cannot be reached when the host starts leaves it serving, with every request
that needs a person refused or declined (said once on stderr); a store that is
newer than the code, or unusable otherwise, stops it with the store's error.
"""

from __future__ import annotations

import argparse
import secrets
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING

import anyio

from host_receiver.people.policies import ModelAllowList, RememberDecisions
from host_receiver.sanitize import safe_text
from host_receiver.store._leases import DEFAULT_LEASE

if TYPE_CHECKING:
    from host_receiver.store import StoreUrl
    from host_receiver.web import WebInbox
    from host_receiver.web._fleet import StoreInbox

__all__ = ["add_fleet_options", "end_inbox_session", "fleet_problem", "open_fleet_inbox", "web_decisions"]


def add_fleet_options(parser: argparse.ArgumentParser) -> None:
    """``--host-name``, ``--for`` and ``--lease``, for the commands that take ``--store``."""
    fleet = parser.add_argument_group("a fleet (with --approve web or --elicit web and a shared --store)")
    fleet.add_argument(
        "--host-name",
        default=None,
        metavar="NAME",
        help="this host's name on its items in the shared store (default: HOSTNAME:PID)",
    )
    fleet.add_argument(
        "--for",
        dest="route_to",
        action="append",
        default=[],
        metavar="NAME",
        help="a person or team who may see and answer this host's items (repeatable; default: everyone "
        "of the store); remembered decisions are shared per server and per these names",
    )
    fleet.add_argument(
        "--lease",
        type=_seconds,
        default=DEFAULT_LEASE,
        metavar="SECONDS",
        help="with a shared --store: how often this host renews its claim on its items and on the calls "
        f"it keeps there (default: {DEFAULT_LEASE:g}); a host that stopped renewing for three periods has "
        "its items withdrawn, and its calls may be taken over",
    )


def _seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def fleet_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with ``--for``, if anything."""
    from host_receiver.store._core import NAME

    for name in getattr(args, "route_to", ()):
        if not NAME.fullmatch(name):
            return f"--for {safe_text(name, 80)}: use 1 to 64 letters, digits and . _ @ + - (a name)"
    return None


@asynccontextmanager
async def open_fleet_inbox(
    args: argparse.Namespace, url: StoreUrl, identity: str | None
) -> AsyncIterator[StoreInbox]:
    """The inbox of a host on the shared store ``url``: its items kept there, its claim renewed every
    ``--lease`` seconds, its pending items withdrawn when it stops. A store that cannot be reached
    now leaves the host serving, every request that needs a person refused or declined (said once
    on stderr); any other store error is raised."""
    from host_receiver.errors import StoreUnreachable
    from host_receiver.people.shared import subjects
    from host_receiver.store import Store, open_store
    from host_receiver.web._fleet import StoreInbox, default_host_name, unreachable_store

    host = args.host_name or default_host_name()
    identify: Callable[[str], str] = str if identity is None else lambda _name: identity
    async with AsyncExitStack() as stack:
        try:
            store: Store = await stack.enter_async_context(open_store(url))
            people = [p.name for p in await store.people()]
        except StoreUnreachable as exc:
            print(
                f"host-receiver: {exc}; until this host is restarted with it reachable, each request "
                "that needs a person is refused (sampling) or declined (forms, links)",
                file=sys.stderr,
                flush=True,
            )
            store, people = unreachable_store(str(exc)), []
        inbox = StoreInbox(
            store,
            host=host,
            session=secrets.token_hex(16),
            routed_to=args.route_to,
            identify=identify,
            lease=args.lease,
            timeout=args.inbox_timeout,
        )
        inbox.decision_subjects = subjects(args.route_to, people)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(inbox.keep_alive)
                try:
                    yield inbox
                finally:
                    await inbox.end_session()
                    group.cancel_scope.cancel()
        except BaseExceptionGroup as failures:  # the block's own error, as raised
            if len(failures.exceptions) == 1:
                raise failures.exceptions[0] from None
            raise


async def end_inbox_session(inbox: WebInbox | None) -> None:
    """Before the host closes its connections: a host on a shared store withdraws its pending items
    with the reason "the server's session ended" (a plain inbox has nothing to do)."""
    from host_receiver.web._fleet import StoreInbox

    if isinstance(inbox, StoreInbox):
        await inbox.end_session()


def web_decisions(
    inbox: WebInbox, identify: Callable[[str], str], per_minute: int | None
) -> RememberDecisions:
    """The remembered decisions of 'web': in the shared store when the inbox keeps its items there."""
    from host_receiver.web._fleet import StoreInbox

    if isinstance(inbox, StoreInbox):
        from host_receiver.people.shared import SharedRememberDecisions

        return SharedRememberDecisions(
            ModelAllowList(inbox),
            inbox.store,
            subjects=inbox.decision_subjects,
            session=inbox.session,
            identify=identify,
            remembered_per_minute=per_minute,
        )
    return RememberDecisions(ModelAllowList(inbox), identify=identify, remembered_per_minute=per_minute)
