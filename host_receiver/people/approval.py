"""Human-in-the-loop hooks: what a host implements to let a person decide.

A host plugs in a :class:`SamplingApprover` (see, edit or refuse a sampling
request; review, edit or refuse its result) and an :class:`ElicitationUI`
(fill a form; consent to a URL). Every hook is an async call that may wait for
a person for as long as it takes; cancelling the task (``tasks/cancel``, the
server leaving, expiry) cancels the call, which must then close its prompt.

Ready-made policies for hosts without a person at hand: :class:`AutoApprove`,
:class:`DenyAll`, :class:`FillDefaults` and :class:`DeclineAll`. Without an
explicit approver a host refuses sampling (the safe default).

The views hand a person's interface what the server sent, unescaped: each
view's docstring names its raw fields, which are shown through
:func:`host_receiver.sanitize.safe_text` (the built-in terminal does so).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Literal, Protocol
from urllib.parse import urlsplit

from host_receiver._url_host import browser_ipv4
from host_receiver.errors import INVALID_REQUEST, RpcError
from host_receiver.protocol.elicitation_rules import FormSchema
from host_receiver.protocol.types import (
    CreateMessageResult,
    ElicitResult,
    ElicitValue,
    SamplingMessage,
    SamplingRequest,
    TextContent,
)
from host_receiver.sanitize import safe_logger, safe_text

logger = safe_logger(__name__)
_DOMAIN = re.compile(r"\b(?:[a-z0-9-]+\.)+[a-z]{2,}\b")

RememberScope = Literal["once", "session", "always", "never"]

#: Requests of one server that may wait for a person at once, sampling and elicitation each
#: (:class:`~host_receiver.people.policies.RememberDecisions`,
#: :class:`~host_receiver.handlers.ElicitationService`).
DEFAULT_MAX_WAITING = 32


def too_many_waiting(server: str, what: str, maximum: int) -> RpcError:
    """The error a request gets when ``maximum`` of its server's ``what`` already wait for a person:
    JSON-RPC -32600, the code of the host's other policy limits; ``data`` names the limit."""
    return RpcError(
        INVALID_REQUEST,
        f"Too many requests waiting for a person: {server!r} already has {maximum} {what} waiting "
        "for an answer; this one is refused (try again once they are answered)",
        {"limit": "max_waiting", "max": maximum},
    )


# --- sampling -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SamplingRequestView:
    """What the person is shown before anything is sent to a model.

    ``params`` are what will be sent: within the host's limits, so their
    ``maxTokens`` may be lower than the server asked (``requested_max_tokens``,
    and :attr:`clamped` says so).

    Raw server text: ``params`` (messages, system prompt, stop sequences,
    metadata, tool definitions) are what the server sent, as it sent it (escape
    sequences, bidi controls, any length). Show them through
    :func:`host_receiver.sanitize.safe_text` (``multiline=True`` for a message body), never
    raw on a terminal or in a log. ``server`` is the name the host gave the
    connection, and ``task_id`` this host's own.
    """

    server: str
    task_id: str | None
    params: SamplingRequest
    model: str
    #: Models the person may switch to (the server's allow-list, as configured).
    allowed_models: tuple[str, ...]
    #: The ``maxTokens`` the server asked for (None: the same as ``params``).
    requested_max_tokens: int | None = None
    #: The provider that serves ``model``, and why the host chose that model.
    provider: str | None = None
    reason: str = ""
    #: Fields of ``params`` the provider will not send (its API does not take them).
    not_sent: tuple[str, ...] = ()

    @property
    def max_tokens(self) -> int:
        """The ``maxTokens`` that will be sent."""
        return self.params.max_tokens

    @property
    def clamped(self) -> bool:
        """Whether the host lowered the server's ``maxTokens`` to its limit."""
        return self.requested_max_tokens is not None and self.requested_max_tokens > self.params.max_tokens


@dataclass(frozen=True, slots=True)
class Approve:
    """Go ahead, optionally with edits (None keeps what the server sent)."""

    messages: list[SamplingMessage] | None = None
    system_prompt: str | None = None
    model: str | None = None
    max_tokens: int | None = None
    #: How long to remember this answer for the requesting server.
    remember: RememberScope = "once"


@dataclass(frozen=True, slots=True)
class Refuse:
    """Do not go ahead: the server gets JSON-RPC error -1."""

    reason: str = "User rejected sampling request"
    remember: RememberScope = "once"


@dataclass(frozen=True, slots=True)
class SamplingResultView:
    """What the person is shown before a generated result goes back to the server.

    Raw server text: ``params`` are what the server sent, as it sent it (escape
    sequences, bidi controls, any length). Show them through
    :func:`host_receiver.sanitize.safe_text` (``multiline=True`` for a message body), never
    raw on a terminal or in a log. ``server`` is the name the host gave the
    connection, and ``task_id`` this host's own.
    ``result`` is the model's answer (a backend's text: show it escaped too).
    """

    server: str
    task_id: str | None
    params: SamplingRequest
    result: CreateMessageResult


def result_text(result: CreateMessageResult) -> str | None:
    """The text of a result made of one text block (the only kind a person can edit)."""
    blocks = result.content if isinstance(result.content, list) else [result.content]
    if len(blocks) == 1 and isinstance(blocks[0], TextContent):
        return blocks[0].text
    return None


@dataclass(frozen=True, slots=True)
class Send:
    """Send the result, or ``result`` instead when the person edited it."""

    result: CreateMessageResult | None = None


RequestDecision = Approve | Refuse
ResultDecision = Send | Refuse


class SamplingApprover(Protocol):
    """The person (or a policy) who approves sampling requests and their results."""

    async def review_request(self, view: SamplingRequestView) -> RequestDecision: ...

    async def review_result(self, view: SamplingResultView) -> ResultDecision: ...


class AutoApprove:
    """Approve every request and send every result unchanged (for trusted servers)."""

    async def review_request(self, view: SamplingRequestView) -> RequestDecision:
        return Approve()

    async def review_result(self, view: SamplingResultView) -> ResultDecision:
        return Send()


class DenyAll:
    """Refuse every sampling request (the safe default when nobody can be asked)."""

    def __init__(self, reason: str = "User rejected sampling request") -> None:
        self.reason = reason

    async def review_request(self, view: SamplingRequestView) -> RequestDecision:
        return Refuse(self.reason)

    async def review_result(self, view: SamplingResultView) -> ResultDecision:
        return Refuse(self.reason)


# --- elicitation -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FormView:
    """A form to show: who asks, what for, the fields with their defaults.

    Raw server text: ``message``, the ``schema``'s field names, titles,
    descriptions, options and defaults, and ``values`` are what the server
    sent, as it sent it (escape sequences, bidi controls, any length). Show
    them through :func:`host_receiver.sanitize.safe_text` (``multiline=True`` for a message
    body), never raw on a terminal or in a log. ``server`` is the name the host
    gave the connection, and ``task_id`` this host's own.
    """

    server: str
    task_id: str | None
    message: str
    schema: FormSchema
    #: Values to pre-fill: the schema's defaults, then the person's last answer.
    values: dict[str, ElicitValue] = field(default_factory=dict)
    #: Field -> what was wrong with the last answer (empty on the first showing).
    problems: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class UrlView:
    """A URL the server wants the person to open, and what to warn about.

    Raw server text: ``message``, ``url`` (checked:
    :func:`~host_receiver.protocol.elicitation_rules.check_url`), :attr:`domain` and
    ``elicitation_id`` are what the server sent, as it sent it (escape
    sequences, bidi controls, any length). Show them through
    :func:`host_receiver.sanitize.safe_text` (``multiline=True`` for a message body), never
    raw on a terminal or in a log. ``server`` is the name the host gave the
    connection, and ``task_id`` this host's own.
    ``warnings`` are the host's own, already escaped.
    """

    server: str
    task_id: str | None
    message: str
    url: str
    #: The id a 2025-11-25 server completes the elicitation under (None in 2026-07-28).
    elicitation_id: str | None
    warnings: tuple[str, ...] = ()

    @property
    def domain(self) -> str:
        """The host name the URL leads to (shown highlighted)."""
        return urlsplit(self.url).hostname or ""


UrlAnswer = Literal["accept", "decline", "cancel"]

#: A person's word on a link a request needs, once opened: done there, or given up.
LinkDone = Literal["done", "cancel"]


class ElicitationUI(Protocol):
    """The person (or a policy) who answers elicitation requests.

    A UI may also have ``async def link_done(self, view: UrlView) -> LinkDone``
    (:class:`LinkDoneUI`): after the person opened a link a request needs
    (the server's -32042 ``URLElicitationRequiredError``), it asks them to say
    when they are done there (``"done"``) or give up (``"cancel"``). It is
    cancelled (and must close its prompt) when the server says the link is
    complete first. Without it the host waits for the server's word only.
    """

    async def fill_form(self, view: FormView) -> ElicitResult: ...

    async def consent_url(self, view: UrlView) -> UrlAnswer: ...


class LinkDoneUI(Protocol):
    """The optional hook of an :class:`ElicitationUI`: the person says they are done at a link."""

    async def link_done(self, view: UrlView) -> LinkDone: ...


class FillDefaults:
    """Accept forms with every default filled in; decline forms that need more (with a warning
    that names the fields), and URLs."""

    async def fill_form(self, view: FormView) -> ElicitResult:
        content = view.schema.defaults()
        problems = view.schema.problems(content)
        if problems:
            logger.warning(
                "declined a form from %s: %s",
                view.server,
                "; ".join(
                    f"required field {name!r} has no default"
                    if problem == "is required"
                    else f"{name!r} {problem}"
                    for name, problem in problems.items()
                ),
            )
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content=content)

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        return "decline"


def _why_not(field: str, problem: str) -> str:
    return f"required field {field!r} has no default" if problem == "is required" else f"{field!r} {problem}"


class DeclineAll:
    """Decline every elicitation."""

    async def fill_form(self, view: FormView) -> ElicitResult:
        return ElicitResult(action="decline")

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        return "decline"


def url_warnings(url: str, message: str) -> tuple[str, ...]:
    """What a person should be warned of before opening ``url`` (a URL the receiver accepted).

    An IP address instead of a name (also one only a browser reads as one,
    ``http://2130706433/``, which :func:`~host_receiver.protocol.elicitation_rules.check_url`
    refuses before this), an internationalised (punycode or non-ASCII)
    domain, a port that is not the scheme's own, http to a host that is not
    this machine, and a message that names another domain. The warnings
    quote the URL's parts escaped (:func:`host_receiver.sanitize.safe_text`).
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    shown_host = safe_text(host, 120)
    warnings = []
    address = _ip_address(host)
    if address is not None:
        written = "" if host == str(address) else f", written {shown_host}"
        warnings.append(f"The link goes to an IP address ({address}{written}), not to a named site.")
    elif any(label.startswith("xn--") for label in host.split(".")):
        warnings.append(f"The domain {shown_host!r} is internationalised (punycode); it may imitate another.")
    elif not host.isascii():
        warnings.append(f"The domain {shown_host!r} contains non-ASCII characters; it may imitate another.")
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and port != _DEFAULT_PORTS.get(parts.scheme):
        warnings.append(f"The link uses port {port}, not the usual one for {parts.scheme}.")
    loopback = host.lower() == "localhost" or (address is not None and address.is_loopback)
    if parts.scheme != "https" and not loopback:
        warnings.append("The link is not encrypted (http, not https).")
    mentioned = set(_DOMAIN.findall(message.lower()))
    if mentioned and host.lower() not in mentioned:
        named = safe_text(", ".join(sorted(mentioned)), 200)
        warnings.append(f"The message names {named}, but the link leads to {shown_host}.")
    return tuple(warnings)


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _ip_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address ``host`` is, as a browser reads it (``0x7f000001`` is 127.0.0.1 too)."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        return browser_ipv4(host)
    except ValueError:
        return None


#: The ready-made policies: they decide without asking anyone.
AUTOMATIC = (AutoApprove, DenyAll, FillDefaults, DeclineAll)


def asks_person(hook: object) -> bool:
    """Whether ``hook`` (an approver or an elicitation UI) may ask a person: not when it is one
    of the ready-made policies, or wraps one (a policy's ``inner``, at any depth). Only a
    person's wait is a ``person`` span (docs/observability.md)."""
    while not isinstance(hook, AUTOMATIC):
        hook = getattr(hook, "inner", None)
        if hook is None:
            return True
    return False
