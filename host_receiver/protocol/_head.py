"""A bounded look at the head of a frame that cannot be parsed: was it a request, and its id.

Rules:

- Only the first :data:`HEAD_LIMIT` bytes are read, whatever the frame's size,
  and nothing is built from them but the answer.
- The head is read as the start of a JSON object: its top-level members in
  order, each value skipped without being decoded (nested objects, arrays and
  strings are walked over; what a member holds does not matter), until the
  head ends or stops being JSON.
- A top-level ``"method"`` member makes it a request; ``"result"`` or
  ``"error"`` without one makes it a response; otherwise it is unknown.
- The id is that of a top-level ``"id"`` member whose value is complete in the
  head and is a string or an integer the codec keeps as one (64 bits, or
  up to 2**64 - 1); otherwise there is none.

Fixed caps (docs/limits.md): ``HEAD_LIMIT``.
"""

from __future__ import annotations

import re
from contextlib import suppress
from typing import Literal, TypeAlias

import orjson

__all__ = ["HEAD_LIMIT", "Kind", "peek"]

#: How many bytes of a frame's head are looked at.
HEAD_LIMIT = 4096

Kind: TypeAlias = Literal["request", "response", "unknown"]

_SPACE = re.compile(r"[ \t\n\r]*")
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)(?![0-9.eE])")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"')


class _End(Exception):
    """The head ended, or stopped being JSON."""


def peek(head: bytes | str) -> tuple[Kind, str | int | None]:
    """What the head of a frame says: its kind and its id (rules above)."""
    text = head[:HEAD_LIMIT].decode("utf-8", "ignore") if isinstance(head, bytes) else head[:HEAD_LIMIT]
    members: dict[str, str | int | None] = {}
    with suppress(_End):  # the head ends, or stops being JSON: what was read is the answer
        _read_members(text, members)
    method = "method" in members
    if method:
        kind: Kind = "request"
    elif "result" in members or "error" in members:
        kind = "response"
    else:
        kind = "unknown"
    return kind, members.get("id")


def _read_members(text: str, members: dict[str, str | int | None]) -> None:
    at = _skip_space(text, 0)
    if not text.startswith("{", at):
        raise _End
    at += 1
    while True:
        at = _skip_space(text, at)
        if text.startswith("}", at) or not text.startswith('"', at):
            raise _End
        key, at = _string(text, at)
        members.setdefault(key, None)
        at = _skip_space(text, at)
        if not text.startswith(":", at):
            raise _End
        at = _skip_space(text, at + 1)
        if key == "id":
            if text.startswith('"', at):
                members["id"], at = _string(text, at)
            elif (number := _INTEGER.match(text, at)) is not None and number.end() < len(text):
                integer = int(number.group()) if len(number.group()) < 21 else None
                members["id"] = integer if integer is not None and -(2**63) <= integer < 2**64 else None
                at = number.end()
            else:
                at = _skip_value(text, at)
        else:
            at = _skip_value(text, at)
        at = _skip_space(text, at)
        if not text.startswith(",", at):
            raise _End
        at += 1


def _skip_space(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return match.end() if match is not None else at


def _string(text: str, at: int) -> tuple[str, int]:
    """The JSON string starting at ``at`` (its opening quote) and where it ends."""
    match = _STRING.match(text, at)
    if match is None:  # unterminated or invalid: the head ends inside it
        raise _End
    try:
        value = orjson.loads(match.group())
    except ValueError:  # an invalid escape
        raise _End from None
    return str(value), match.end()


def _skip_value(text: str, at: int) -> int:
    """Where the JSON value starting at ``at`` ends (not decoded, only walked over)."""
    if at >= len(text):
        raise _End
    if text[at] == '"':
        return _string(text, at)[1]
    if text[at] not in "{[":
        end = at
        while end < len(text) and text[end] not in ",}] \t\n\r":
            end += 1
        if end == len(text) or end == at:
            raise _End
        return end
    depth = 0
    index = at
    while index < len(text):
        char = text[index]
        if char == '"':
            index = _string(text, index)[1]
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    raise _End
