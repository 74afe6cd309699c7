"""The 2026-07-28 HTTP binding's request headers: body fields mirrored for intermediaries.

Rules (basic-transports-streamable-http.mdx, "Request Metadata"; the tasks extension):

- Every modern POST carries ``MCP-Protocol-Version`` (the version in the
  request's ``_meta``) and ``Mcp-Method``; ``tools/call`` and ``prompts/get``
  carry ``Mcp-Name`` (``params.name``), ``resources/read`` the ``params.uri``,
  and ``tasks/get|update|cancel`` the ``params.taskId``.
- A tool's ``inputSchema`` may mark properties with ``x-mcp-header``; a call
  then carries ``Mcp-Param-{Name}`` with the argument at that exact path
  (absent or null: no header). A tool whose annotations break the rules
  (empty, not a token, duplicated ignoring case, on a ``number`` or a
  non-primitive, reached through anything but ``properties``, an integer
  beyond JavaScript's safe range at call time) is rejected: it is left out
  of ``tools/list`` with a warning. The error quotes the tool's names and
  paths escaped and cut (:func:`host_receiver.sanitize.safe_text`).
- Values: strings as they are, integers in decimal, booleans ``true`` /
  ``false``; a value that is not plain visible ASCII (or has leading or
  trailing blanks, or looks like the sentinel) is sent as
  ``=?base64?{UTF-8 base64}?=``.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

from host_receiver.errors import InvalidToolHeaders
from host_receiver.sanitize import safe_id, safe_text

__all__ = ["encode_value", "param_headers", "request_headers", "tool_header_paths"]

_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_PLAIN = re.compile(r"^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$")
_SAFE_INTEGER = 2**53 - 1
_NAME_OF = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
_COMPOSITION = ("items", "prefixItems", "oneOf", "anyOf", "allOf", "not", "if", "then", "else", "$ref")

#: A tool's header annotations: header name -> the path of ``properties`` keys to its argument.
HeaderPaths = dict[str, tuple[str, ...]]


def encode_value(value: str) -> str:
    """A header value: ``value`` itself when it is plain visible ASCII, else the base64 sentinel."""
    if _PLAIN.match(value) and not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode("ascii") + "?="


def request_headers(method: str, params: Mapping[str, Any] | None, version: str) -> dict[str, str]:
    """``MCP-Protocol-Version``, ``Mcp-Method`` and, where the method has one, ``Mcp-Name``."""
    headers = {"mcp-protocol-version": version, "mcp-method": method}
    key = _NAME_OF.get(method) or ("taskId" if method in _TASK_METHODS else None)
    value = params.get(key) if params is not None and key is not None else None
    if isinstance(value, str):
        headers["mcp-name"] = encode_value(value)
    return headers


def tool_header_paths(tool: Mapping[str, Any]) -> HeaderPaths:
    """The ``x-mcp-header`` annotations of ``tool``; :class:`InvalidToolHeaders` if any is invalid."""
    schema = tool.get("inputSchema")
    found: HeaderPaths = {}
    if isinstance(schema, Mapping):
        _walk(schema, (), found, reachable=True)
    return found


def _walk(schema: Mapping[str, Any], path: tuple[str, ...], found: HeaderPaths, *, reachable: bool) -> None:
    name = schema.get("x-mcp-header")
    if name is not None:
        where = safe_text(".".join(path), 200) or "the schema root"
        if not reachable or not path:
            raise InvalidToolHeaders(f"x-mcp-header on {where} is not reached through properties alone")
        if not isinstance(name, str) or not _TOKEN.match(name):
            raise InvalidToolHeaders(f"x-mcp-header '{safe_id(name)}' on {where} is not an HTTP header token")
        if schema.get("type") not in ("string", "integer", "boolean"):
            raise InvalidToolHeaders(f"x-mcp-header on {where} needs a string, integer or boolean property")
        if name.lower() in {n.lower() for n in found}:
            raise InvalidToolHeaders(f"x-mcp-header '{safe_id(name)}' appears twice (ignoring case)")
        found[name] = path
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for key, child in properties.items():
            if isinstance(child, Mapping):
                _walk(child, (*path, str(key)), found, reachable=reachable)
    for keyword in _COMPOSITION:
        nested = schema.get(keyword)
        for child in nested if isinstance(nested, list) else [nested]:
            if isinstance(child, Mapping):
                _walk(child, path, found, reachable=False)


def param_headers(paths: HeaderPaths, arguments: Mapping[str, Any] | None) -> dict[str, str]:
    """``Mcp-Param-{Name}`` for each annotated argument present; :class:`InvalidToolHeaders` if unsendable."""
    headers: dict[str, str] = {}
    for name, path in paths.items():
        value: Any = arguments
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is None:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int):
            if abs(value) > _SAFE_INTEGER:
                where = safe_text(".".join(path), 200)
                raise InvalidToolHeaders(f"argument {where} is beyond the safe integer range")
            text = str(value)
        elif isinstance(value, str):
            text = value
        else:
            continue  # the server's schema check reports the wrong type
        headers[f"mcp-param-{name.lower()}"] = encode_value(text)
    return headers
