"""Text from a server or a backend, made safe for a person or a log to see: the one sanitiser.

Rules:

* :func:`safe_text` is for everything a person or a log sees that a server
  (or an LLM backend) wrote: log records, audit lines, the terminal's screens
  and prompts, approval views, error messages the CLI prints. Printable
  characters pass; every other one (C0 and C1 controls, so ESC and BEL and
  with them every escape sequence, DEL, bidi and other format characters
  such as U+202E, line and paragraph separators, lone surrogates) is shown
  escaped as Python writes it (``\\x1b``, ``\\u202e``), never raw. Tab passes;
  newline passes only in ``multiline`` text (a message body), otherwise it is
  ``\\n`` too, so one log record stays one line. A value longer than
  ``limit`` is cut, and the cut says how long the value was.
* A piece of server text a person judges (a message, a system prompt, a
  URL) is shown whole up to :data:`SHOWN_LIMIT` characters, the same in the
  terminal and the web inbox; a longer one is cut saying how long it was.
* :func:`bounded` only cuts (no escaping): for what goes back to a server,
  which JSON escapes anyway (an id quoted in an error's ``data``).
* URLs are shown without user info, query or fragment (:func:`safe_url`).
* Logs: every logger of both packages is made by :func:`safe_logger`, which
  attaches :class:`SafeRecords`; the filter cuts each argument of a record to
  :data:`ARG_LIMIT` characters, then makes the formatted message (at most
  :data:`MESSAGE_LIMIT`) and the traceback text safe. The CLI attaches the
  same filter to its handler, so third-party records are made safe too. A
  record is made safe once; the work is done only for records that are
  emitted, never for a level that is off.
* Ids quoted in logs and errors are cut to :data:`ID_LIMIT` (:func:`safe_id`).

Fixed caps (docs/limits.md): ``TEXT_LIMIT``, ``SHOWN_LIMIT``, ``ARG_LIMIT``,
``MESSAGE_LIMIT``, ``ID_LIMIT``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "ARG_LIMIT",
    "ID_LIMIT",
    "MESSAGE_LIMIT",
    "SHOWN_LIMIT",
    "TEXT_LIMIT",
    "SafeRecords",
    "bounded",
    "safe_id",
    "safe_logger",
    "safe_text",
    "safe_url",
]

#: The default cut of :func:`safe_text`.
TEXT_LIMIT = 2_000
#: The longest piece of server text a person is shown whole (terminal and web inbox alike).
SHOWN_LIMIT = 20_000
#: The cut of each argument of a log record.
ARG_LIMIT = 4_096
#: The cut of a whole log message.
MESSAGE_LIMIT = 8_192
#: The cut of an id (a request id, a task id) quoted in a log or an error.
ID_LIMIT = 64

#: One character outside printable ASCII and tab (and newline, in multiline text): a
#: candidate for escaping (the slow path, taken only for text ``str.isprintable`` refuses).
_ONE_LINE = re.compile(r"[^\t -~]")
_MULTILINE = re.compile(r"[^\t\n -~]")


def bounded(text: str, limit: int = ID_LIMIT) -> str:
    """``text`` cut to about ``limit`` characters; the cut says how long it was (no escaping)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text):,} characters]"


def safe_text(value: object, limit: int | None = TEXT_LIMIT, *, multiline: bool = False) -> str:
    """``value`` as text that shows nothing raw but printable characters (rules above)."""
    text = value if type(value) is str else str(value)
    length = len(text)
    if limit is not None and length > limit:
        text = text[:limit]
    if not text.isprintable():
        if multiline and "\r\n" in text:
            text = text.replace("\r\n", "\n")
        text = (_MULTILINE if multiline else _ONE_LINE).sub(_escape, text)
    if limit is not None and length > limit:
        return f"{text}… [{length:,} characters]"
    return text


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return char if char.isprintable() else repr(char)[1:-1]


def safe_id(value: object) -> str:
    """An id (string or integer) for a log line or an error message: escaped, at most ``ID_LIMIT``."""
    return safe_text(value if type(value) is str else repr(value), ID_LIMIT)


class SafeRecords(logging.Filter):
    """Makes every record it sees safe to show (rules in the module docstring); never drops one."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "host_receiver_safe", False):
            return True
        args = record.args
        if isinstance(args, tuple):
            record.args = tuple(_bounded_arg(arg) for arg in args)
        elif isinstance(args, Mapping):
            record.args = {key: _bounded_arg(arg) for key, arg in args.items()}
        try:
            message = record.getMessage()
        except Exception:  # a record that cannot be formatted: keep its parts, safely
            message = f"{record.msg!r} % {record.args!r}"
        record.msg = safe_text(message, MESSAGE_LIMIT)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = safe_text(record.exc_text, None, multiline=True)
        record.host_receiver_safe = True
        return True


def _bounded_arg(arg: Any) -> Any:
    if type(arg) is str and len(arg) > ARG_LIMIT:
        return bounded(arg, ARG_LIMIT)
    if type(arg) is bytes and len(arg) > ARG_LIMIT:
        return arg[:ARG_LIMIT] + b"..."
    return arg


_FILTER = SafeRecords()


def safe_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` with :class:`SafeRecords` attached (once)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, SafeRecords) for f in logger.filters):
        logger.addFilter(_FILTER)
    return logger


def safe_url(url: str) -> str:
    """``url`` without credentials, query string or fragment; ``(an invalid URL)`` if it does not parse.

    Not escaped: text from a server still goes through :func:`safe_text` (or
    ``host_receiver.auth``'s quoting, which does both).
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        if parts.port is not None:  # raises ValueError for a port out of range
            host = f"{host}:{parts.port}"
    except ValueError:
        return "(an invalid URL)"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
