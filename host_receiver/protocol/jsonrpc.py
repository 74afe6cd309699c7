"""JSON-RPC 2.0 messages as MCP uses them: parse one frame, encode one message.

Rules of this module:

- One frame is one JSON object. Arrays are batches, which MCP removed in
  2025-06-18: they are refused with -32600, like any other non-object.
- Ids are strings or integers (booleans and floats are not ids). A request
  must have one; ``null`` is refused. An error response may lack a usable id
  (the peer could not read ours): it is kept with ``id=None``, and such a
  response is encoded without an ``id`` member, as the MCP schema wants.
- ``params`` and ``result`` are JSON objects; MCP never uses positional params.
  ``"params": null`` is read as absent.
- Parsing raises :class:`InvalidMessage` and nothing else; the exception is
  the error to answer with, carries the id when one could be read, and says
  whether an answer is due at all (a broken *response* is never answered, or
  two peers could trade errors forever; its id, when read, lets the session
  fail the request it answered).
- A frame that is not JSON at all, or too long to be read (the transport's
  limit), is judged by a bounded look at its head (:func:`unreadable`,
  :mod:`host_receiver.protocol._head`): a request is answered with its id, a
  response is not answered, and anything else is answered without an id (the
  schema's form of JSON-RPC's ``null``).
- This is the hot path: plain dicts in, frozen slotted dataclasses out, no
  validation library, exact ``type()`` checks. The codec is orjson, which
  takes pipelined ``tasks/get`` from about 0.8 to 1.0 of the transport limit
  (docs/performance.md). It is stricter than the standard library: ``NaN``,
  ``Infinity`` and invalid UTF-8 in a frame are parse errors (-32700).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import orjson

from host_receiver.errors import INVALID_REQUEST, PARSE_ERROR, InvalidMessage, RpcError
from host_receiver.protocol._head import peek
from host_receiver.protocol.types import ProgressToken, RequestId

__all__ = [
    "ErrorResponse",
    "Message",
    "Notification",
    "Request",
    "Response",
    "decode_message",
    "dumps_message",
    "encode_message",
    "error_response",
    "is_request_id",
    "oversized",
    "parse_message",
    "unreadable",
]


@dataclass(frozen=True, slots=True)
class Request:
    """A request: the peer owes a response with the same ``id``."""

    id: RequestId
    method: str
    params: dict[str, Any] | None = None
    #: Not part of the message: header fields the stream's binding sends with
    #: it (the 2026-07-28 HTTP binding's mirrored headers); never encoded.
    headers: Mapping[str, str] | None = field(default=None, compare=False, repr=False)

    @property
    def meta(self) -> dict[str, Any] | None:
        """``params._meta``, if the peer sent an object there."""
        meta = self.params.get("_meta") if self.params is not None else None
        return meta if type(meta) is dict else None

    @property
    def progress_token(self) -> ProgressToken | None:
        """``params._meta.progressToken``: the peer wants progress under this token."""
        meta = self.meta
        token = meta.get("progressToken") if meta is not None else None
        return token if is_request_id(token) else None


@dataclass(frozen=True, slots=True)
class Notification:
    """A one-way message: no ``id``, no response."""

    method: str
    params: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Response:
    """A successful response to the request with the same ``id``."""

    id: RequestId
    result: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """An error response; ``id`` is None when the peer could not read one."""

    id: RequestId | None
    error: RpcError


Message: TypeAlias = Request | Notification | Response | ErrorResponse


def error_response(invalid: InvalidMessage) -> ErrorResponse:
    """The error response that answers the frame ``invalid`` describes."""
    return ErrorResponse(invalid.request_id, RpcError(invalid.code, invalid.message))


def is_request_id(value: object) -> bool:
    """Whether ``value`` may be a JSON-RPC id in MCP: a string or an integer."""
    kind = type(value)
    return kind is str or kind is int


_MISSING: Any = object()


def parse_message(obj: Any) -> Message:
    """Classify one decoded JSON value; raise :class:`InvalidMessage` if it is none."""
    if type(obj) is not dict:
        if type(obj) is list:
            raise InvalidMessage(INVALID_REQUEST, "Batches are not supported by MCP")
        raise InvalidMessage(INVALID_REQUEST, "A JSON-RPC message must be a JSON object")
    method = obj.get("method", _MISSING)
    if obj.get("jsonrpc") == "2.0" and type(method) is str and "result" not in obj and "error" not in obj:
        params = obj.get("params")
        raw_id = obj.get("id", _MISSING)
        if params is None or type(params) is dict:
            if raw_id is _MISSING:
                return Notification(method, params)
            kind = type(raw_id)
            if kind is str or kind is int:
                return Request(raw_id, method, params)
    return _checked_message(obj, method)


def _checked_message(obj: dict[str, Any], method: Any) -> Message:
    """Every other frame: responses, and the precise error for a malformed one."""
    raw_id = obj.get("id", _MISSING)
    request_id: RequestId | None = raw_id if is_request_id(raw_id) else None
    is_response = method is _MISSING and ("result" in obj or "error" in obj)

    def invalid(reason: str) -> InvalidMessage:
        return InvalidMessage(INVALID_REQUEST, reason, request_id=request_id, respond=not is_response)

    if obj.get("jsonrpc") != "2.0":
        raise invalid('"jsonrpc" must be "2.0"')

    if method is not _MISSING:
        if type(method) is not str:
            raise invalid('"method" must be a string')
        if "result" in obj or "error" in obj:
            raise invalid('A request cannot carry "result" or "error"')
        params = obj.get("params")
        if params is not None and type(params) is not dict:
            raise invalid('"params" must be an object')
        raise invalid('A request "id" must be a string or an integer')

    if "result" in obj:
        if "error" in obj:
            raise invalid('A response cannot carry both "result" and "error"')
        if request_id is None:
            raise invalid('A response "id" must be a string or an integer')
        result = obj["result"]
        if type(result) is not dict:
            raise invalid('"result" must be an object')
        return Response(request_id, result)

    if "error" in obj:
        error = obj["error"]
        if (
            type(error) is not dict
            or type(error.get("code")) is not int
            or type(error.get("message")) is not str
        ):
            raise invalid('"error" must be an object with an integer code and a string message')
        if request_id is None and raw_id is not _MISSING and raw_id is not None:
            raise invalid('A response "id" must be a string or an integer')
        return ErrorResponse(request_id, RpcError(error["code"], error["message"], error.get("data")))

    raise invalid('A message needs "method", "result" or "error"')


def decode_message(data: bytes | str) -> Message:
    """Parse one frame of JSON text; not JSON at all is -32700 (see :func:`unreadable`)."""
    try:
        obj = orjson.loads(data)
    except (ValueError, RecursionError) as exc:
        # ValueError covers JSONDecodeError and undecodable UTF-8.
        raise unreadable(data, PARSE_ERROR, f"Parse error: {exc}") from None
    return parse_message(obj)


def unreadable(head: bytes | str, code: int, message: str) -> InvalidMessage:
    """The error for a frame that cannot be read whole, judged by its head (only the head is read).

    A request gets the error with its id; a response gets none (but its id is
    kept, for the request it answered); anything else gets one without an id.
    """
    kind, frame_id = peek(head)
    return InvalidMessage(
        code,
        message,
        request_id=frame_id if kind != "unknown" else None,
        respond=kind != "response",
    )


def oversized(head: bytes, limit: int) -> InvalidMessage:
    """The error for a frame over a transport's ``limit``, judged by its ``head`` (:func:`unreadable`)."""
    return unreadable(head, PARSE_ERROR, f"Message longer than {limit} bytes dropped")


def encode_message(message: Message) -> dict[str, Any]:
    """The wire object of ``message``."""
    out: dict[str, Any] = {"jsonrpc": "2.0"}
    if isinstance(message, Request):
        out["id"] = message.id
        out["method"] = message.method
        if message.params is not None:
            out["params"] = message.params
    elif isinstance(message, Notification):
        out["method"] = message.method
        if message.params is not None:
            out["params"] = message.params
    elif isinstance(message, Response):
        out["id"] = message.id
        out["result"] = message.result
    else:
        if message.id is not None:
            out["id"] = message.id
        out["error"] = message.error.to_dict()
    return out


def dumps_message(message: Message) -> bytes:
    """Compact UTF-8 JSON for ``message``, without newlines.

    Raises TypeError if the content is not JSON (a key that is not a string,
    an integer beyond 64 bits, a lone surrogate, an unknown type). NaN and the
    infinities, which JSON cannot carry, are written as ``null``.
    """
    return orjson.dumps(encode_message(message))
