"""``host-receiver decisions``: the saved "always"/"never" sampling answers, listed and forgotten.

``decisions`` prints one line per saved decision: its ID, the verdict and the
server's identity (:func:`host_receiver._identity.stdio_identity`,
:func:`~host_receiver._identity.http_identity`). ``decisions forget ID...``
removes those, ``decisions forget --all`` every one; an unknown ID is an
error (exit 2) that removes nothing. The file is ``$HOST_RECEIVER_DECISIONS``
or ``decisions.json`` in the config directory; one that is not the user's, or
that group or others may use, is refused with the ``chmod`` to run (exit 2).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from host_receiver.cli._hooks import EXIT_FAILURE, EXIT_OK
from host_receiver.people.policies import DecisionStore, decision_id
from host_receiver.sanitize import safe_text

__all__ = ["add_decisions_command"]


def add_decisions_command(commands: Any) -> None:
    """The ``decisions`` subcommand, added to ``commands`` (an argparse subparsers object)."""
    decisions = commands.add_parser(
        "decisions",
        help="list the saved sampling decisions ('always'/'never' answers), or forget them",
        description="List the sampling decisions saved by 'always' and 'never' answers, each with "
        "an ID and the server it is bound to (its executable, arguments and directory, or its URL).",
    )
    decisions.set_defaults(func=_list)
    actions = decisions.add_subparsers(dest="decisions_action", metavar="ACTION")
    forget = actions.add_parser(
        "forget",
        help="forget saved decisions: you are asked again",
        description="Forget saved decisions, by the ID 'host-receiver decisions' shows, or all of them.",
    )
    forget.add_argument("ids", nargs="*", metavar="ID", help="a decision's ID, as 'decisions' lists it")
    forget.add_argument("--all", action="store_true", help="forget every saved decision")
    forget.set_defaults(func=_forget)


def _safe_store() -> DecisionStore | None:
    store = DecisionStore()
    problem = store.problem()
    if problem is not None:
        print(f"host-receiver decisions: {problem}", file=sys.stderr)
        return None
    return store


def _list(args: argparse.Namespace) -> int:
    store = _safe_store()
    if store is None:
        return EXIT_FAILURE
    saved = store.saved()
    if not saved:
        print(f"no saved decisions ({store.path})", file=sys.stderr)
    for identity, verdict in sorted(saved.items()):
        print(f"{decision_id(identity)}  {verdict:<7}  {safe_text(identity, None)}")
    return EXIT_OK


def _forget(args: argparse.Namespace) -> int:
    if bool(args.ids) == bool(args.all):
        print("host-receiver decisions forget: give IDs or --all (one of them)", file=sys.stderr)
        return EXIT_FAILURE
    store = _safe_store()
    if store is None:
        return EXIT_FAILURE
    by_id = {decision_id(identity): identity for identity in store.saved()}
    unknown = [i for i in args.ids if i not in by_id]
    if unknown:
        print(
            f"host-receiver decisions forget: no saved decision {', '.join(map(safe_text, unknown))} "
            "(see 'host-receiver decisions')",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    gone = list(by_id.values()) if args.all else [by_id[i] for i in args.ids]
    store.forget(gone)
    print(f"forgot {len(gone)} decision(s)", file=sys.stderr)
    return EXIT_OK
