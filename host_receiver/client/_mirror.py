"""The 2026-07-28 HTTP binding's request headers: body fields mirrored for intermediaries.

The map from a request to its headers lives here, in the connection layer,
not in the transport (which parses no MCP method): a connection whose
stream's binding mirrors headers (``Binding.mirrors_headers``) keeps one
:class:`HeaderMirror`, which learns the tools' annotations from
``tools/list`` and puts each 2026-07-28 request's headers in
``Request.headers``; the HTTP stream sends them as they are.

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
  of ``tools/list`` with a warning, and calling it is refused before anything
  is sent (:meth:`HeaderMirror.check_callable`), naming the annotation. The
  error quotes the tool's names and paths escaped and cut
  (:func:`host_receiver.sanitize.safe_text`).
- A request is a 2026-07-28 one when its ``_meta`` carries a protocol
  version; a legacy request has no mirrored headers.
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

from host_receiver.errors import InvalidToolHeaders, TransportError
from host_receiver.protocol.modern import PROTOCOL_VERSION_KEY
from host_receiver.sanitize import safe_id, safe_logger, safe_text

__all__ = ["HeaderMirror", "encode_value", "param_headers", "request_headers", "tool_header_paths"]

logger = safe_logger(__name__)

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


class HeaderMirror:
    """The mirrored headers of one connection's requests."""

    def __init__(self) -> None:
        self._tool_paths: dict[str, HeaderPaths] = {}  # x-mcp-header paths, by tool name
        self._refused: dict[str, str] = {}  # why a listed tool's annotations were rejected, by name

    def accept_tools(self, tools: list[dict[str, Any]], server: str) -> list[dict[str, Any]]:
        """The tools whose ``x-mcp-header`` annotations are valid; the others are left out,
        with a warning naming ``server``."""
        accepted = []
        for tool in tools:
            name = tool.get("name")
            try:
                paths = tool_header_paths(tool)
            except InvalidToolHeaders as exc:
                logger.warning("left out tool %r of %s: %s", name, server, exc)
                if isinstance(name, str):
                    self._refused[name] = str(exc)
                continue
            if isinstance(name, str):
                self._refused.pop(name, None)
                if paths:
                    self._tool_paths[name] = paths
                else:
                    self._tool_paths.pop(name, None)
            accepted.append(tool)
        return accepted

    def check_callable(self, tool: str, server: str) -> None:
        """Raise :class:`InvalidToolHeaders` naming the annotation when ``tool`` was listed with
        annotations that break the rules (such a tool is not called)."""
        refused = self._refused.get(tool)
        if refused is not None:
            raise InvalidToolHeaders(
                f"tool {safe_text(tool, 80)!r} of {server} is not called: its header annotations break "
                f"the HTTP binding's rules ({refused})"
            )

    def headers(self, method: str, params: Mapping[str, Any] | None) -> dict[str, str] | None:
        """The headers of a 2026-07-28 request; None for a legacy one.

        Raises :class:`TransportError` when a ``tools/call`` argument cannot go in its header.
        """
        meta = params.get("_meta") if params is not None else None
        version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, Mapping) else None
        if params is None or not isinstance(version, str):
            return None
        headers = request_headers(method, params, version)
        name = params.get("name")
        paths = self._tool_paths.get(name) if method == "tools/call" and isinstance(name, str) else None
        if paths:
            arguments = params.get("arguments")
            try:
                headers.update(param_headers(paths, arguments if isinstance(arguments, Mapping) else None))
            except InvalidToolHeaders as exc:
                raise TransportError(f"cannot send tools/call: {exc}") from None
        return headers
