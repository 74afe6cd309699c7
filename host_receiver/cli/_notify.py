"""The ``--notify`` options of a command with the web inbox: channels, batching, reminders, escalation.

Rules:

- ``--notify URL`` (repeatable) and ``--escalate-to URL`` are channels
  (:func:`host_receiver.notify.channel_for`): checked before anything runs, a
  wrong one is a usage error that names it redacted, never its URL.
- ``--escalate-to`` takes a URL for now; a person's or team's name comes with
  the fleet store, and the error says so.
- ``--remind-every``, ``--escalate-after``, ``--notify-content`` and
  ``--notify-links signed`` need a channel; ``--escalate-after`` and
  ``--escalate-to`` go together.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from host_receiver.errors import ChannelError
from host_receiver.notify import Duration, Notifier, channel_for, parse_duration


def add_notify_options(group: Any) -> None:
    """The options of notifications, in ``group`` (the web inbox's argument group)."""
    group.add_argument(
        "--notify",
        action="append",
        default=[],
        metavar="URL",
        help="tell a person when a request waits (repeatable): webhook+https://... (signed with "
        "$HOST_RECEIVER_WEBHOOK_SECRET) or any Apprise URL, mailto://, slack://, ntfys://, json://... "
        "(the notify extra); docs/notify.md",
    )
    group.add_argument(
        "--notify-content",
        action="store_true",
        help="with --notify: put an excerpt of the request in the message (by default: who asks for "
        "what, never the content)",
    )
    add_pacing_option(group)
    add_link_options(group)
    add_remind_option(group)
    group.add_argument(
        "--escalate-after",
        type=duration_option,
        default=None,
        metavar="DURATION",
        help="with --escalate-to: tell that channel too once a request has waited this long",
    )
    group.add_argument(
        "--escalate-to",
        action="append",
        default=[],
        metavar="URL",
        help="where an escalated request is told (repeatable): a channel URL as for --notify",
    )


def add_pacing_option(group: Any) -> None:
    """``--notify-every`` (a host's inbox and ``inbox serve`` alike)."""
    group.add_argument(
        "--notify-every",
        type=duration_option,
        default=Duration(30.0, "30s"),
        metavar="DURATION",
        help="at most one message per channel (a person's, or --notify) this often; what comes "
        "meanwhile is summed up in one (default: 30s)",
    )


def add_link_options(group: Any) -> None:
    """``--notify-links`` and ``--link-ttl`` (a host's inbox and ``inbox serve`` alike)."""
    group.add_argument(
        "--notify-links",
        choices=["sign-in", "signed"],
        default="sign-in",
        help="'sign-in' (default): a message's link opens its item once the person signs in; "
        "'signed': the link itself signs in for that one item, until it is answered or --link-ttl "
        "is up",
    )
    group.add_argument(
        "--link-ttl",
        type=duration_option,
        default=Duration(3600.0, "1h"),
        metavar="DURATION",
        help="with --notify-links signed: how long a link signs in (default: 1h)",
    )


def add_remind_option(group: Any) -> None:
    """``--remind-every`` (a host's inbox and ``inbox serve`` alike)."""
    group.add_argument(
        "--remind-every",
        type=duration_option,
        default=None,
        metavar="DURATION",
        help="remind while a request still waits, this often (default: no reminders)",
    )


def duration_option(text: str) -> Duration:
    """An argparse ``type``: a duration (``90s``, ``10m``), or argparse's usage error."""
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def notify_problem(args: argparse.Namespace) -> str | None:
    if (args.escalate_after is None) != (not args.escalate_to):
        return "--escalate-after and --escalate-to go together"
    for value in args.escalate_to:
        if "://" not in value:
            return (
                "--escalate-to takes a channel URL (webhook+https://..., mailto://...); a person's or a "
                "team's name is for 'inbox serve --escalate-to' on a shared store"
            )
    if (
        (args.remind_every or args.escalate_after or args.notify_content or args.notify_links == "signed")
        and not args.notify
        and not args.escalate_to
    ):
        return "--remind-every, --escalate-after, --notify-content and --notify-links need --notify URL"
    try:
        for number, url in enumerate([*args.notify, *args.escalate_to], 1):
            channel_for(url, number, environ=dict(os.environ))
    except ChannelError as exc:
        return f"--notify: {exc}"
    return None


def build_notifier(args: argparse.Namespace) -> Notifier | None:
    """The notifier of ``--notify`` and ``--escalate-to`` (checked before: :func:`_notify_problem`)."""
    if not args.notify and not args.escalate_to:
        return None
    environ = dict(os.environ)
    channels = [channel_for(url, n, environ=environ) for n, url in enumerate(args.notify, 1)]
    first = len(channels) + 1
    escalation = [channel_for(url, n, environ=environ) for n, url in enumerate(args.escalate_to, first)]
    return Notifier(channels, escalation=escalation, every=args.notify_every.seconds)
