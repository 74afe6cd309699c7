"""The 2026-07-28 wire: the request envelope, result types, input rounds, the tasks extension.

Rules (basic-versioning.mdx, basic-patterns-mrtr.mdx, the tasks extension):

- Every modern request carries, in ``params._meta``, its protocol version,
  the client's info and the client's capabilities for this request
  (:func:`envelope`). Servers keep nothing between requests.
- A result's ``resultType`` says what it is: ``complete`` (also when absent,
  from older servers), ``input_required`` (an :class:`InputRound`), or
  ``task`` (a :class:`RemoteTask`, with the tasks extension). Anything else
  is a :class:`BadResult` naming the value.
- An ``input_required`` result carries ``inputRequests`` (a map of
  server-chosen keys to ``{method, params}``), ``requestState`` (an opaque
  string, kept byte for byte), or both; neither (an empty ``inputRequests``
  counts as none), or anything malformed (``inputRequests`` or
  ``requestState`` present but null included), is a :class:`BadResult`
  naming the key or field. Methods an input request may
  use: ``sampling/createMessage``, ``elicitation/create``, ``roots/list``.
- A task of the extension is flat: ``taskId``, ``status``, ``ttlMs``,
  ``pollIntervalMs`` and, by status, ``inputRequests``, ``result`` or
  ``error``.
- Modern errors a client recognises: -32020 header mismatch, -32021 missing
  client capability (``data.requiredCapabilities``), -32022 unsupported
  version (``data.supported``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from host_receiver.errors import BadResult

__all__ = [
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "HEADER_MISMATCH",
    "INPUT_METHODS",
    "MISSING_CAPABILITY",
    "MODERN_ERROR_CODES",
    "PROTOCOL_VERSION_KEY",
    "SERVER_INFO_KEY",
    "SUBSCRIPTION_ID_KEY",
    "TASKS_EXTENSION",
    "TERMINAL_STATUSES",
    "UNSUPPORTED_VERSION",
    "InputRound",
    "RemoteTask",
    "envelope",
    "input_round",
    "remote_task",
    "result_type",
]

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
#: The ``_meta`` key tying a notification to the ``subscriptions/listen`` request (its id) it belongs to.
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
#: The tasks extension's identifier, in ``capabilities.extensions``.
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022
#: Error codes only a modern server sends: one of them identifies a modern server.
MODERN_ERROR_CODES = frozenset({HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION})

#: What an input request may ask for.
INPUT_METHODS = frozenset({"sampling/createMessage", "elicitation/create", "roots/list"})
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})
_TASK_STATUSES = frozenset({"working", "input_required", *TERMINAL_STATUSES})


def envelope(version: str, client_info: dict[str, Any], capabilities: dict[str, Any]) -> dict[str, Any]:
    """The ``_meta`` every modern request carries."""
    return {
        PROTOCOL_VERSION_KEY: version,
        CLIENT_INFO_KEY: client_info,
        CLIENT_CAPABILITIES_KEY: capabilities,
    }


def result_type(result: dict[str, Any]) -> str:
    """``complete``, ``input_required`` or ``task``; an absent ``resultType`` is ``complete``."""
    kind = result.get("resultType", "complete")
    if kind not in ("complete", "input_required", "task"):
        raise BadResult(f"resultType {_shown(kind)} is not one this client knows")
    return str(kind)


@dataclass(frozen=True, slots=True)
class InputRound:
    """What an ``input_required`` result asks: the requests by key, and the state to echo."""

    requests: dict[str, tuple[str, dict[str, Any] | None]]
    request_state: str | None


def input_round(result: dict[str, Any]) -> InputRound:
    """The :class:`InputRound` of an ``input_required`` result (rules above)."""
    requests = input_requests(result["inputRequests"], required=True) if "inputRequests" in result else {}
    state = result.get("requestState")
    if "requestState" in result and type(state) is not str:
        raise BadResult(f"requestState must be a string, not {_kind(state)}")
    if not requests and state is None:
        empty = " (its inputRequests is empty)" if "inputRequests" in result else ""
        raise BadResult(
            f"an input_required result needs inputRequests or requestState; it has neither{empty}"
        )
    return InputRound(requests, state)


def input_requests(raw: object, *, required: bool) -> dict[str, tuple[str, dict[str, Any] | None]]:
    """An ``inputRequests`` map checked entry by entry: ``{key: (method, params)}``."""
    if raw is None and not required:
        return {}
    if type(raw) is not dict:
        raise BadResult(f"inputRequests must be an object, not {_kind(raw)}")
    checked: dict[str, tuple[str, dict[str, Any] | None]] = {}
    for key, entry in raw.items():
        where = f"inputRequests[{_shown(key)}]"
        if type(entry) is not dict:
            raise BadResult(f"{where} must be an object, not {_kind(entry)}")
        method = entry.get("method")
        if method not in INPUT_METHODS:
            raise BadResult(
                f"{where}.method {_shown(method)} is not an input request "
                f"(one of {', '.join(sorted(INPUT_METHODS))})"
            )
        params = entry.get("params")
        if params is not None and type(params) is not dict:
            raise BadResult(f"{where}.params must be an object, not {_kind(params)}")
        checked[key] = (method, params)
    return checked


@dataclass(frozen=True, slots=True)
class RemoteTask:
    """A server's task (of the tasks extension, or of a 2025-11-25 task-augmented ``tools/call``),
    as the server last described it."""

    task_id: str
    status: str
    status_message: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    input_requests: dict[str, tuple[str, dict[str, Any] | None]] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


def remote_task(raw: dict[str, Any], *, legacy: bool = False) -> RemoteTask:
    """A :class:`RemoteTask` from a ``CreateTaskResult`` or a ``tasks/get`` result.

    ``legacy``: a 2025-11-25 ``Task`` (``ttl`` and ``pollInterval``, no
    result, error or input requests: those come through ``tasks/result``).
    """
    task_id = raw.get("taskId")
    if type(task_id) is not str or not task_id:
        raise BadResult(f"a task needs a string taskId, not {_kind(task_id)}")
    status = raw.get("status")
    if status not in _TASK_STATUSES:
        raise BadResult(f"task status {_shown(status)} is not one of {', '.join(sorted(_TASK_STATUSES))}")
    names = ("ttl", "pollInterval") if legacy else ("ttlMs", "pollIntervalMs")
    ttl, poll = raw.get(names[0]), raw.get(names[1])
    for name, value in zip(names, (ttl, poll), strict=True):
        if value is not None and (type(value) is not int or value < 0):
            raise BadResult(f"task {name} must be a non-negative integer, not {_kind(value)}")
    message = raw.get("statusMessage")
    result, error = raw.get("result"), raw.get("error")
    if legacy:  # a 2025-11-25 task's outcome comes through tasks/result
        result, error, requests = None, None, {}
    else:
        if status == "completed" and type(result) is not dict:
            raise BadResult("a completed task needs a result object")
        if status == "failed" and (
            type(error) is not dict
            or type(error.get("code")) is not int
            or type(error.get("message")) is not str
        ):
            raise BadResult("a failed task needs an error object with an integer code and a string message")
        requests = input_requests(raw.get("inputRequests"), required=status == "input_required")
    return RemoteTask(
        task_id=task_id,
        status=str(status),
        status_message=message if type(message) is str else None,
        ttl_ms=ttl,
        poll_interval_ms=poll,
        created_at=raw.get("createdAt") if type(raw.get("createdAt")) is str else None,
        last_updated_at=raw.get("lastUpdatedAt") if type(raw.get("lastUpdatedAt")) is str else None,
        input_requests=requests,
        result=result if status == "completed" else None,
        error=error if status == "failed" else None,
    )


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _shown(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}… ({len(text)} characters)"
