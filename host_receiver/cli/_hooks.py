"""What ``run`` and ``demo`` share: the ``--approve``/``--elicit`` hooks, exit codes, error words.

(About 420 lines, one idea: who answers a server's requests, said by options and built into
hooks: the terminal, the web inbox, fixed answers, and the words of their errors.)

Rules:

- ``ask`` puts a person in the loop at the terminal (prompts on stderr); it is
  the default when stdin and stderr are terminals, otherwise each command's
  own default applies. ``ask`` without a terminal, or without the ``cli``
  extra (prompt_toolkit), is a usage error that says what to do.
- ``ask`` remembers "session"/"always"/"never" answers per server identity
  (:mod:`host_receiver.people.policies`; ``host-receiver decisions`` lists them);
  requests approved by such a remembered answer are limited to
  ``--remembered-per-minute`` per server (0: no limit). 'web' does the same.
- Off a terminal, when ``--approve`` is not given and the command's default
  is 'deny', each refusal says why and what to do, on stderr and in the
  error the server gets (:data:`NO_TERMINAL`); likewise, when ``--elicit`` is
  not given and the default is 'decline', each declined form or link says
  why on stderr (:data:`NO_TERMINAL_TO_ANSWER`). ``--elicit defaults`` warns
  which required field had no default when it declines a form.
- ``web`` puts a person in the loop through the web inbox
  (:mod:`host_receiver.web`), the same for sampling and elicitation: it
  listens on ``--inbox-listen`` and prints ``inbox: URL`` on stderr once it
  does; ``--inbox-timeout`` bounds each wait. Without the ``web`` extra it is
  a usage error that says what to install.
- Exit codes: 0 success, 1 the tool reported an error, 2 the command could
  not do its job (usage, connection, protocol).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING

from host_receiver.cli._notify import add_notify_options, build_notifier, notify_problem
from host_receiver.errors import RpcError, StoreError, UnsafeFile
from host_receiver.handlers import ElicitationService, SamplingService
from host_receiver.notify import Duration, parse_timeout
from host_receiver.people.approval import (
    AutoApprove,
    DeclineAll,
    DenyAll,
    ElicitationUI,
    FillDefaults,
    FormView,
    RequestDecision,
    SamplingApprover,
    SamplingRequestView,
    UrlAnswer,
    UrlView,
)
from host_receiver.people.policies import DEFAULT_REMEMBERED_PER_MINUTE, ModelAllowList, RememberDecisions
from host_receiver.protocol.types import ElicitResult
from host_receiver.receiver.work import ElicitationHandler, SamplingHandler
from host_receiver.sanitize import safe_text
from providers import ProviderRegistry

if TYPE_CHECKING:
    from host_receiver.cli.terminal import Console
    from host_receiver.client.host import ServerConnection
    from host_receiver.store import StoreUrl
    from host_receiver.web import WebInbox

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_FAILURE = 2

APPROVERS: dict[str, type[AutoApprove] | type[DenyAll]] = {"auto": AutoApprove, "deny": DenyAll}
ELICITORS: dict[str, type[FillDefaults] | type[DeclineAll]] = {
    "defaults": FillDefaults,
    "decline": DeclineAll,
}


def add_hook_options(
    parser: argparse.ArgumentParser, *, approve: str = "deny", elicit: str = "decline"
) -> None:
    """``--approve`` and ``--elicit``, shared by ``run`` and ``demo`` (defaults off a terminal)."""
    parser.add_argument(
        "--approve",
        choices=["ask", "web", *sorted(APPROVERS)],
        default=None,
        help="sampling approval: 'ask' asks at the terminal (and remembers 'session', 'always' and "
        "'never' answers per server); 'web' asks in the web inbox (the same); 'auto' approves every "
        "request and sends every result; 'deny' "
        f"refuses all (default: ask on a terminal, else {approve})",
    )
    parser.add_argument(
        "--elicit",
        choices=["ask", "web", *sorted(ELICITORS)],
        default=None,
        help="elicitation: 'ask' asks at the terminal; 'web' asks in the web inbox; 'defaults' accepts "
        "form requests with every schema default filled in and declines URL requests; 'decline' "
        f"declines all (default: ask on a terminal, else {elicit})",
    )
    parser.add_argument(
        "--remembered-per-minute",
        type=_count,
        default=DEFAULT_REMEMBERED_PER_MINUTE,
        metavar="N",
        help="with --approve ask or web: sampling requests per minute one server may have approved "
        f"by a remembered 'session' or 'always' answer; more are refused (default: "
        f"{DEFAULT_REMEMBERED_PER_MINUTE}; 0: no limit)",
    )
    inbox = parser.add_argument_group("web inbox (with --approve web or --elicit web)")
    inbox.add_argument(
        "--inbox-listen",
        default=None,
        metavar="HOST:PORT",
        help="where the inbox listens (default: 127.0.0.1:0, a free port on this machine; another "
        "address is reachable from the network: give a certificate too). With a shared --store the "
        "host serves no page of its own unless this is given: 'host-receiver inbox serve' does",
    )
    inbox.add_argument(
        "--inbox-timeout",
        type=_timeout,
        default=Duration(600.0, "600s"),
        metavar="DURATION|never",
        help="how long a request waits for an answer in the inbox before it expires (sampling is "
        "refused, a form or link cancelled, the server told it expired): seconds, or 90s, 10m, 2h; "
        "'never': it waits until answered (default: 600)",
    )
    add_notify_options(inbox)
    inbox.add_argument("--inbox-cert", metavar="FILE", help="serve the inbox over TLS with this certificate")
    inbox.add_argument("--inbox-key", metavar="FILE", help="the private key of --inbox-cert")


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is not a whole number, 0 or more")
    return value


def _timeout(text: str) -> Duration | None:
    try:
        return parse_timeout(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_seconds(text: str) -> float:
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def interactive() -> bool:
    """Whether a person can answer: stdin and stderr (where prompts go) are terminals."""
    return sys.stdin.isatty() and sys.stderr.isatty()


def resolve_hooks(args: argparse.Namespace, *, approve: str = "deny", elicit: str = "decline") -> str | None:
    """Fill in ``args.approve``/``args.elicit`` defaults; an error message if 'ask' has no terminal."""
    person = interactive()
    #: Refusals by default, off a terminal, say so (:class:`NobodyToAsk`).
    args.refused_for_want_of_a_terminal = args.approve is None and not person and approve == "deny"
    args.declined_for_want_of_a_terminal = args.elicit is None and not person and elicit == "decline"
    if args.approve is None:
        args.approve = "ask" if person else approve
    if args.elicit is None:
        args.elicit = "ask" if person else elicit
    if "ask" in (args.approve, args.elicit) and importlib.util.find_spec("prompt_toolkit") is None:
        return (
            "'ask' needs the terminal extra: pip install 'host-receiver[cli]' "
            "(or use --approve auto|deny and --elicit defaults|decline)"
        )
    if not person and "ask" in (args.approve, args.elicit):
        return (
            "'ask' needs a terminal on stdin and stderr; "
            "use --approve web|auto|deny and --elicit web|defaults|decline"
        )
    if uses_inbox(args):
        return _inbox_problem(args)
    if getattr(args, "notify", None) or getattr(args, "escalate_to", None):
        return "--notify and --escalate-to are for the web inbox: add --approve web or --elicit web"
    return None


def _inbox_problem(args: argparse.Namespace) -> str | None:
    if any(importlib.util.find_spec(m) is None for m in ("starlette", "hypercorn")):
        return "'web' needs the web extra: pip install 'host-receiver[web]'"
    problem = notify_problem(args)
    if problem is not None:
        return problem
    if shared_store(args) is not None and (args.notify or args.escalate_to):
        return (
            "--notify and --escalate-to are not for a host on a shared --store: its items are told by "
            "'host-receiver inbox serve --notify URL' and people's own channels (docs/notify.md, "
            "'In a fleet')"
        )
    if (args.inbox_cert is None) != (args.inbox_key is None):
        return "--inbox-cert and --inbox-key go together"
    from host_receiver.web._serve import parse_listen

    try:
        parse_listen(args.inbox_listen or DEFAULT_LISTEN)
    except ValueError as exc:
        return f"--inbox-listen: {exc}"
    from host_receiver.store._core import NAME

    for name in args.route_to:
        if not NAME.fullmatch(name):
            return (
                f"--for {safe_text(name, 80)}: use 1 to 64 letters, digits and . _ @ + - (a person or team)"
            )
    return None


#: Where the inbox listens when --inbox-listen is not given (and no shared store takes its place).
DEFAULT_LISTEN = "127.0.0.1:0"


def uses_terminal(args: argparse.Namespace) -> bool:
    return "ask" in (args.approve, args.elicit)


def uses_inbox(args: argparse.Namespace) -> bool:
    return "web" in (args.approve, args.elicit)


class InboxUnavailable(Exception):
    """The web inbox could not listen where it was told to."""


def shared_store(args: argparse.Namespace) -> StoreUrl | None:
    """The shared store ``--store`` names (SQLite, PostgreSQL), or None (memory, or no ``--store``)."""
    url: StoreUrl | None = getattr(args, "store", None)
    return url if url is not None and url.shared else None


@asynccontextmanager
async def open_inbox(
    args: argparse.Namespace, *, identity: str | None = None
) -> AsyncIterator[WebInbox | None]:
    """The web inbox when 'web' is chosen (else None): served, its address printed on stderr; with
    a shared store, its items kept there and a page only with ``--inbox-listen``
    (:func:`open_fleet_inbox`). ``identity``: the one server's identity (None: its name)."""
    if not uses_inbox(args):
        yield None
        return
    from host_receiver.web import WebInbox

    notifier = build_notifier(args)
    async with AsyncExitStack() as stack:
        if notifier is not None:
            await stack.enter_async_context(notifier)
        url = shared_store(args)
        if url is not None:
            from host_receiver.cli._fleet import open_fleet_inbox

            try:
                inbox: WebInbox = await stack.enter_async_context(open_fleet_inbox(args, url, identity))
            except (StoreError, UnsafeFile) as exc:
                raise InboxUnavailable(str(exc)) from None
            if args.inbox_listen is None:
                yield inbox
                return
        else:
            inbox = WebInbox(
                timeout=args.inbox_timeout,
                notifier=notifier,
                notify_content=args.notify_content,
                remind_every=args.remind_every.seconds if args.remind_every else None,
                escalate_after=args.escalate_after.seconds if args.escalate_after else None,
                signed_links=args.notify_links == "signed",
                link_ttl=args.link_ttl.seconds,
            )
        listen = args.inbox_listen or DEFAULT_LISTEN
        try:
            await stack.enter_async_context(
                inbox.serve(listen, certfile=args.inbox_cert, keyfile=args.inbox_key)
            )
        except OSError as exc:
            raise InboxUnavailable(f"the web inbox cannot listen on {listen}: {exc}") from None
        print(f"inbox: {inbox.url}", file=sys.stderr, flush=True)
        yield inbox


def build_hooks(
    args: argparse.Namespace,
    registry: ProviderRegistry,
    console: Console | None,
    *,
    inbox: WebInbox | None = None,
    approver: Callable[[SamplingApprover], SamplingApprover] = lambda a: a,
    ui: Callable[[ElicitationUI], ElicitationUI] = lambda u: u,
    identity: str | None = None,
) -> tuple[SamplingHandler, ElicitationHandler]:
    """The sampling and elicitation handlers ``args.approve``/``args.elicit`` select.

    ``console`` is needed for 'ask', ``inbox`` for 'web'; ``approver`` and ``ui`` may wrap the
    hooks chosen; ``identity`` is the one server's identity 'ask' and 'web' remember decisions
    under (None: its name).
    """
    if uses_terminal(args) and console is None:
        raise ValueError("'ask' needs a console")
    identify: Callable[[str], str] = str if identity is None else lambda _name: identity
    if uses_inbox(args) and inbox is None:
        raise ValueError("'web' needs an inbox")
    sampling: SamplingHandler
    person: ElicitationUI
    per_minute = getattr(args, "remembered_per_minute", DEFAULT_REMEMBERED_PER_MINUTE) or None
    if args.approve == "ask" and console is not None:
        from host_receiver.cli.terminal import TerminalApprover, terminal_sampling

        remember = RememberDecisions(
            ModelAllowList(TerminalApprover(console)), identify=identify, remembered_per_minute=per_minute
        )
        chain = approver(remember)
        sampling = terminal_sampling(registry, chain, console.activity)
    elif args.approve == "web" and inbox is not None:
        from host_receiver.cli._fleet import web_decisions

        remember = web_decisions(inbox, identify, per_minute)
        sampling = inbox.watch(SamplingService(registry, approver(remember)))
    elif getattr(args, "refused_for_want_of_a_terminal", False):
        sampling = SamplingService(registry, approver(NobodyToAsk(NO_TERMINAL)))
    else:
        sampling = SamplingService(registry, approver(APPROVERS[args.approve]()))
    if args.elicit == "ask" and console is not None:
        from host_receiver.cli.terminal import TerminalElicitationUI

        person = TerminalElicitationUI(console)
    elif args.elicit == "web" and inbox is not None:
        return sampling, inbox.watch(ElicitationService(ui(inbox), opener=inbox.opens_nothing))
    elif getattr(args, "declined_for_want_of_a_terminal", False):
        person = NobodyToAnswer()
    else:
        person = ELICITORS[args.elicit]()
    return sampling, ElicitationService(ui(person))


#: Why sampling is refused when nobody chose ``--approve`` and there is no terminal to ask on.
NO_TERMINAL = "sampling refused: no terminal to ask on; use --approve auto|web|deny"


class NobodyToAsk(DenyAll):
    """Refuse every request, saying why on stderr as well as to the server."""

    async def review_request(self, view: SamplingRequestView) -> RequestDecision:
        print(f"host-receiver: {self.reason} (a request from {safe_text(view.server)})", file=sys.stderr)
        return await super().review_request(view)


#: Why a form or link is declined when nobody chose ``--elicit`` and there is no terminal to ask on.
NO_TERMINAL_TO_ANSWER = "no terminal to ask on; use --elicit web|defaults|decline"


class NobodyToAnswer(DeclineAll):
    """Decline every form and link, saying why on stderr."""

    async def fill_form(self, view: FormView) -> ElicitResult:
        print(
            f"host-receiver: form declined: {NO_TERMINAL_TO_ANSWER} (a form from {safe_text(view.server)})",
            file=sys.stderr,
        )
        return await super().fill_form(view)

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        print(
            f"host-receiver: link declined: {NO_TERMINAL_TO_ANSWER} (a link from {safe_text(view.server)})",
            file=sys.stderr,
        )
        return await super().consent_url(view)


def describe_server(
    server: ServerConnection,
    where: str,
    *,
    inbox: WebInbox | None,
    console: Console | None,
    name: str | None = None,
) -> None:
    """Tell the inbox and the terminal (those in use) the server's own title or name, for their
    headings; the terminal also shows ``where`` (its command or URL). ``name`` (``--name``) wins."""
    info = server.server_info
    own = name or info.title or info.name
    if inbox is not None:
        inbox.describe_server(server.name, own)
    if console is not None:
        console.describe_server(server.name, own, where)


def open_console() -> Console:
    """The terminal console (prompt_toolkit is imported only when a person is asked)."""
    from host_receiver.cli.terminal import Console

    return Console()


def describe_error(exc: BaseException) -> str:
    """A one-line description of a connection or protocol failure, safe to print (it may quote
    the server)."""
    if isinstance(exc, RpcError):
        return f"JSON-RPC error {exc.code}: {safe_text(exc.message)}"
    if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        return describe_error(exc.exceptions[0])
    return safe_text(str(exc)) or type(exc).__name__


def safe_json(value: object) -> str:
    """``value`` as JSON on one line, every character that is not printable written ``\\uXXXX``.

    ``json.dumps`` escapes C0 controls but leaves C1 controls and bidi and other
    format characters raw; escaped, the JSON value is the same and a terminal
    shows it as it is.
    """
    return _NON_ASCII.sub(_json_escape, json.dumps(value, ensure_ascii=False))


_NON_ASCII = re.compile(r"[^\x00-\x7e]")


def _json_escape(match: re.Match[str]) -> str:
    char = match.group()
    if char.isprintable():
        return char
    code = ord(char)
    if code > 0xFFFF:  # a surrogate pair, as JSON writes astral characters
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"
