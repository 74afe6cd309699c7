"""Every exception host-receiver raises, in one place, with the JSON-RPC error codes a host compares.

(About 530 lines, one idea: every exception in one place, drawn as one tree below.)

Rule: the ``str()`` of every exception here is safe to show to a user, to put
in a task's ``statusMessage`` and to log. It never holds an API key, a token or
another secret, and text a server or a backend wrote is escaped and cut
(:mod:`host_receiver.sanitize`). It says what failed and, where it can, what
to do about it.

The tree::

    HostReceiverError
    ├── RpcError                      a JSON-RPC error: code, message, data
    │   ├── InvalidMessage            a frame that is no valid JSON-RPC message for MCP
    │   ├── InputRequestFailed        a server's input request could not be fulfilled
    │   └── UrlElicitationRequired    the links a request needs (-32042) were not completed
    ├── ConnectionClosed              the session ended before the response came
    ├── TransportError                the connection to the peer failed
    │   ├── SessionExpired            the HTTP server no longer knows the MCP session (404)
    │   └── HttpStatusError           an error status without a JSON-RPC error
    ├── ProtocolError                 the server answered what MCP does not allow
    │   ├── UnsupportedProtocolVersion  no version both sides speak
    │   ├── MissingCapability         the server needs a client capability not declared (-32021)
    │   └── InvalidToolHeaders (ValueError)  a tool's x-mcp-header annotations break the rules
    ├── BadResult                     a result that breaks the schema
    ├── InputRoundsExceeded           the server kept asking for input past the round cap
    ├── RemoteTaskCancelled           the server's task for our request was cancelled
    ├── RemoteTaskLost                the server no longer knows our task
    ├── UnsafeFile (PermissionError)  a state file not the user's, or open to group or others
    ├── IllegalTransition             a task move the lifecycle forbids
    ├── InvalidCursor (ValueError)    a tasks/list cursor this receiver did not issue
    ├── AuthError                     MCP authorization (OAuth) failed
    │   ├── DiscoveryError            metadata missing, unusable or inconsistent
    │   │   └── ResourceMismatch      the metadata names another resource
    │   ├── InsecureEndpoint          plain http off loopback, a non-loopback redirect
    │   ├── RegistrationError         no client identity could be had
    │   ├── AuthorizationDenied       the authorization response was an error or failed a check
    │   ├── TokenRequestError         the token endpoint refused or answered nonsense
    │   └── InsufficientScope         403 insufficient_scope past the allowed steps
    ├── AdapterUnavailable (ImportError)  an adapter's client library is missing or out of range
    ├── InvalidAnswer (ValueError), UnknownItem (LookupError), AlreadyAnswered  the web inbox took no answer
    ├── Interrupted                   the person pressed Ctrl-C or Ctrl-D at a terminal prompt
    ├── StoreError                    the shared store (host_receiver.store) failed or was refused
    │   ├── InvalidStoreUrl (ValueError)  a --store URL of none of the known forms
    │   ├── StoreTooNew               the store's schema is newer than this code
    │   ├── StoreUnreachable          the store's database could not be reached
    │   ├── UnknownCall (LookupError)  no continuable call of that id (or it ended)
    │   ├── CallLeased                another process is continuing the call (it holds its lease)
    │   └── TaskLeased                another process is following the server's task (its lease)
    ├── ChannelError (ValueError)     a notification channel cannot be set up (URL, secret, extra)
    ├── DeliveryFailed                a notification was not delivered (this attempt)
    └── ProviderError                 a sampling or configuration failure of the LLM side
        ├── NoSuitableModel           no configured model may serve the request
        ├── UnsupportedRequest        the request cannot be served as sent (-32602)
        │   └── LimitExceeded         beyond the host's sampling limits
        ├── ConfigError               the config file, the keys or the command line is unusable
        └── ReplyTooLong              the reply grew past the host's reply cap

``providers`` re-exports the ``ProviderError`` branch for provider authors;
it is defined here, once. This module imports only :mod:`host_receiver.sanitize`,
so both packages can build on it without loading anything else.

Fixed caps (docs/limits.md): ``_QUOTED_ERROR``.
"""

from __future__ import annotations

import time
from enum import Enum
from typing import Any

from host_receiver.sanitize import bounded, safe_id, safe_text

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "URL_ELICITATION_REQUIRED",
    "USER_REJECTED",
    "AdapterUnavailable",
    "AlreadyAnswered",
    "AuthError",
    "AuthorizationDenied",
    "BadResult",
    "CallLeased",
    "ChannelError",
    "ConfigError",
    "ConnectionClosed",
    "DeliveryFailed",
    "DiscoveryError",
    "HostReceiverError",
    "HttpStatusError",
    "IllegalTransition",
    "InputRequestFailed",
    "InputRoundsExceeded",
    "InsecureEndpoint",
    "InsufficientScope",
    "Interrupted",
    "InvalidAnswer",
    "InvalidCursor",
    "InvalidMessage",
    "InvalidStoreUrl",
    "InvalidToolHeaders",
    "LimitExceeded",
    "MissingCapability",
    "NoSuitableModel",
    "ProtocolError",
    "ProviderError",
    "RegistrationError",
    "RemoteTaskCancelled",
    "RemoteTaskLost",
    "ReplyTooLong",
    "ResourceMismatch",
    "RpcError",
    "SessionExpired",
    "StoreError",
    "StoreTooNew",
    "StoreUnreachable",
    "TaskLeased",
    "TokenRequestError",
    "TransportError",
    "UnknownCall",
    "UnknownItem",
    "UnsafeFile",
    "UnsupportedProtocolVersion",
    "UnsupportedRequest",
    "UrlElicitationRequired",
    "invalid_params",
    "method_not_found",
    "user_rejected",
]

#: The most characters of a server's error message quoted in :class:`InputRequestFailed`.
_QUOTED_ERROR = 500

# The JSON-RPC error codes a host compares ``RpcError.code`` with.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: MCP: the server asked for a URL elicitation it needs before it can go on.
URL_ELICITATION_REQUIRED = -32042
#: MCP sampling: the user (or the host's policy on the user's behalf) refused.
USER_REJECTED = -1


class HostReceiverError(Exception):
    """The base of every exception of host-receiver, its ``host_receiver`` and ``providers`` packages."""


# --- JSON-RPC ------------------------------------------------------------


class RpcError(HostReceiverError):
    """A JSON-RPC error: ``code``, ``message`` and optional ``data``.

    Every layer that refuses something raises it; the session turns it into a
    JSON-RPC error response, and a task stores it as the outcome of a failed
    task so that ``tasks/result`` returns the very same error.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        """The ``error`` member of a JSON-RPC error response."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_dict(cls, error: dict[str, Any]) -> RpcError:
        """Rebuild the exception from an ``error`` member."""
        return cls(int(error["code"]), str(error["message"]), error.get("data"))

    def __repr__(self) -> str:
        return f"RpcError({self.code}, {self.message!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RpcError) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.code, self.message))


def invalid_params(message: str, data: Any = None) -> RpcError:
    """-32602 with ``message``."""
    return RpcError(INVALID_PARAMS, message, data)


def method_not_found(method: str) -> RpcError:
    """-32601 naming ``method`` (cut to a few dozen characters)."""
    return RpcError(METHOD_NOT_FOUND, f"Method not found: {bounded(method)}")


def user_rejected(message: str = "User rejected sampling request") -> RpcError:
    """-1: the user refused a sampling request or its result."""
    return RpcError(USER_REJECTED, message)


class InvalidMessage(RpcError):
    """A frame that is not a valid JSON-RPC message for MCP.

    ``request_id`` is the id to answer to, when one could be read;
    ``respond`` is False when the frame was meant as a response
    (:func:`host_receiver.protocol.jsonrpc.error_response` builds the answer).
    """

    def __init__(
        self,
        code: int,
        message: str,
        *,
        request_id: str | int | None = None,
        respond: bool = True,
    ) -> None:
        super().__init__(code, message)
        self.request_id = request_id
        self.respond = respond

    def __repr__(self) -> str:
        return f"InvalidMessage({self.code}, {self.message!r}, request_id={self.request_id!r})"


class InputRequestFailed(RpcError):
    """An input request of the server's could not be fulfilled; the call ends (nothing is sent).

    The message quotes the server's key and the error escaped and cut;
    ``key`` is the key as sent.
    """

    def __init__(self, key: str, method: str, error: RpcError) -> None:
        shown = f"input request '{safe_id(key)}' ({method}) failed: {safe_text(error.message, _QUOTED_ERROR)}"
        super().__init__(error.code, shown, error.data)
        self.key = key
        self.method = method


class UrlElicitationRequired(RpcError):
    """A request the server answered with -32042 (``URLElicitationRequiredError``) ends: a link it
    needs was declined, not completed in time, could not be offered, or the retry was refused
    again. ``code`` is -32042 and ``data`` the server's; ``urls`` are the links as the server sent
    them (raw: show them through :func:`~host_receiver.sanitize.safe_text`); the message names
    them escaped, with ``why``.
    """

    def __init__(self, server: str, method: str, why: str, urls: list[str], data: Any = None) -> None:
        links = ", ".join(safe_text(url, _QUOTED_ERROR) for url in urls) or "(none)"
        many = "links" if len(urls) > 1 else "link"
        shown = f"{safe_text(server)} needs the {many} {links} completed before {method}: {why}"
        super().__init__(URL_ELICITATION_REQUIRED, shown, data)
        self.urls = tuple(urls)
        self.method = method


# --- connections ---------------------------------------------------------


class ConnectionClosed(HostReceiverError):
    """The session ended before a response arrived; ``str()`` says why."""


class TransportError(HostReceiverError):
    """The connection to the peer failed; ``str()`` says how."""


class SessionExpired(TransportError):
    """The server no longer knows our MCP session (HTTP 404); reconnect from scratch."""


class HttpStatusError(TransportError):
    """The server answered a POST with an error status and no JSON-RPC error; ``status`` is it."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class ProtocolError(HostReceiverError):
    """The server answered something MCP does not allow."""


class UnsupportedProtocolVersion(ProtocolError):
    """No protocol version is spoken by both this client and the server."""


class MissingCapability(ProtocolError):
    """The server needs a client capability this connection did not declare (-32021)."""

    def __init__(self, message: str, required: dict[str, Any]) -> None:
        super().__init__(message)
        self.required = required


class InvalidToolHeaders(ProtocolError, ValueError):
    """A tool's ``x-mcp-header`` annotations break the HTTP binding's rules; the message says how."""


class BadResult(HostReceiverError):
    """A result that breaks the schema (a modern round or task, or a typed result's fields); the
    message names the method or the key, and each bad field."""


class InputRoundsExceeded(HostReceiverError):
    """The server kept asking for input past the round cap."""


class RemoteTaskCancelled(HostReceiverError):
    """The task for our request was cancelled: the server ended it ``cancelled``, or this host
    cancelled the call (``TaskHandle.cancel``)."""


class RemoteTaskLost(HostReceiverError):
    """The server no longer knows our task, or answered about another one."""


class UnsafeFile(HostReceiverError, PermissionError):
    """A file host-receiver keeps state in is not the user's own, or group or others may use it;
    the message gives the commands that fix it (:func:`host_receiver.paths.private_file_problem`)."""


# --- tasks this host runs ------------------------------------------------


class IllegalTransition(HostReceiverError):
    """A move the lifecycle forbids, such as leaving a terminal status (two ``TaskStatus`` values)."""

    def __init__(self, current: Enum, target: Enum) -> None:
        super().__init__(f"a task cannot move from {current.value!r} to {target.value!r}")
        self.current = current
        self.target = target


class InvalidCursor(HostReceiverError, ValueError):
    """The cursor was not issued by this receiver to this requestor."""


# --- authorization -------------------------------------------------------


class AuthError(HostReceiverError):
    """MCP authorization failed; the message says why and never holds a secret."""


class DiscoveryError(AuthError):
    """Resource or authorization server metadata is missing, unusable or inconsistent."""


class ResourceMismatch(DiscoveryError):
    """The protected resource metadata names a resource other than the server we talk to."""


class InsecureEndpoint(AuthError):
    """An endpoint or redirect URI the flow refuses: plain http off loopback, or a non-loopback redirect."""


class RegistrationError(AuthError):
    """No client identity could be had (no pre-registration, no metadata document, no registration)."""


class AuthorizationDenied(AuthError):
    """The authorization response was an error, or failed the state or issuer check."""


class TokenRequestError(AuthError):
    """The token endpoint refused a request or answered something unusable; ``error`` is its code."""

    def __init__(self, message: str, *, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error


class InsufficientScope(AuthError):
    """The server kept answering 403 insufficient_scope after the allowed re-authorizations."""


# --- adapters, the web inbox ----------------------------------------------


class AdapterUnavailable(HostReceiverError, ImportError):
    """An adapter's client library is missing, or installed in a version outside its extra's range."""


class InvalidAnswer(HostReceiverError, ValueError):
    """A web inbox answer that cannot be taken; ``problems``: field (or ``action``) -> what is wrong."""

    def __init__(self, problems: dict[str, str]) -> None:
        super().__init__(safe_text("; ".join(f"{k} {v}" for k, v in problems.items())))
        self.problems = problems


class UnknownItem(HostReceiverError, LookupError):
    """No web inbox item has this id (or it has left the history)."""


class AlreadyAnswered(HostReceiverError):
    """The web inbox item ``item_id`` was answered (or withdrawn) before: the first answer won."""

    def __init__(self, item_id: str) -> None:
        super().__init__(f"item {safe_id(item_id)} was answered before")
        self.item_id = item_id


class Interrupted(HostReceiverError):
    """The person pressed Ctrl-C or Ctrl-D at a terminal prompt (``host_receiver.cli.terminal``)."""


class StoreError(HostReceiverError):
    """The shared store (:mod:`host_receiver.store`) failed or refused an operation."""


class InvalidStoreUrl(StoreError, ValueError):
    """A ``--store`` value of none of the known forms (memory, sqlite:///PATH, a .db or .sqlite
    path, postgresql://...)."""


class StoreTooNew(StoreError):
    """The store's schema is at a version this code does not know: a newer host-receiver wrote it."""

    def __init__(self, found: int, known: int) -> None:
        super().__init__(
            f"the store's schema is version {found}, newer than this host-receiver knows ({known}): "
            "upgrade host-receiver; an older one must not write to it"
        )
        self.found = found
        self.known = known


class StoreUnreachable(StoreError):
    """The store's database could not be reached (the message never holds a password)."""


class ChannelError(HostReceiverError, ValueError):
    """A notification channel cannot be set up: its URL, the webhook secret, or the notify extra.

    The message never holds the channel's URL (it holds secrets), only its redacted form.
    """


class DeliveryFailed(HostReceiverError):
    """One attempt to deliver a notification failed; ``retry``: whether another attempt may succeed
    (5xx, a timeout, a refused connection) or not (another 4xx)."""

    def __init__(self, message: str, *, retry: bool) -> None:
        super().__init__(message)
        self.retry = retry


class UnknownCall(StoreError, LookupError):
    """The store holds no continuable call of this id, or it ended (``str()`` says which)."""


class CallLeased(StoreError):
    """Another process holds the lease of the continuable call ``call_id``: it is continuing it."""

    def __init__(self, call_id: str, expires: float | None) -> None:
        left = "" if expires is None else f" (its lease runs out in {max(0.0, expires - time.time()):.0f} s)"
        super().__init__(
            f"call {safe_id(call_id)} is being continued by another process{left}: a call is continued by "
            "one process at a time"
        )
        self.call_id = call_id


class TaskLeased(StoreError):
    """Another process (``owner``) holds the lease of the kept task ``task_id`` until ``expires``:
    it is following the task."""

    def __init__(self, task_id: str, owner: str | None, expires: float | None) -> None:
        who = "another process" if owner is None else f"another process ({safe_text(owner, 120)})"
        until = ""
        if expires is not None:
            at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires))
            until = f" until {at} (its lease runs out in {max(0.0, expires - time.time()):.0f} s)"
        super().__init__(
            f"task {safe_id(task_id)} is being followed by {who}{until}: a task is followed by one "
            "process at a time"
        )
        self.task_id = task_id
        self.owner = owner
        self.expires = expires


# --- the LLM side (providers) --------------------------------------------


class ProviderError(HostReceiverError):
    """A sampling or configuration failure with a safe, useful message.

    ``status`` is the backend's HTTP status when there was one.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class NoSuitableModel(ProviderError):
    """No configured model may serve this request (allow-list, capabilities, context)."""


class UnsupportedRequest(ProviderError):
    """The request cannot be served as sent (suggested JSON-RPC mapping: -32602)."""


class LimitExceeded(UnsupportedRequest):
    """A request beyond the host's limits; ``field`` is the wire name of what is too big."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class ConfigError(ProviderError):
    """The configuration file, the credentials or the command-line choice is unusable."""


class ReplyTooLong(ProviderError):
    """The reply grew beyond the host's ``max_reply_chars`` (``limit``).

    With ``over_bytes`` it was read as bytes: the reply, or one streamed event
    (``event``), was longer than that many, the most ``limit`` characters take.
    """

    def __init__(self, limit: int, *, over_bytes: int | None = None, event: bool = False) -> None:
        if over_bytes is None:
            text = f"the reply is longer than this host's limit of {limit:,} characters"
        else:
            what = "a streamed event" if event else "the reply"
            text = (
                f"the reply is over this host's size cap: {what} of more than {over_bytes:,} bytes "
                f"(the most a reply of {limit:,} characters takes)"
            )
        super().__init__(text)
        self.limit = limit
