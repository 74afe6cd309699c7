"""What the commands show of a server's ``notifications/progress`` while a call, a read or a prompt runs.

Rules:

- ``call``, ``run --call``, ``read`` and ``prompt`` always ask for progress
  (a ``_meta.progressToken``, in either era); what the server reports is
  shown on stderr, never on stdout (which carries the result).
- On a terminal (stderr is one) it is a bar: in the terminal host's live
  activity line when there is one (:meth:`ProgressDisplay.use`), else a line
  of its own, redrawn in place and erased when the request ends, before the
  result is printed.
- Off a terminal, one line per update: ``progress 3/10: message``
  (``progress 3: message`` without a total, no ``: message`` without one).
- The server's message is shown through :func:`~host_receiver.sanitize.safe_text`
  and cut to :data:`_MESSAGE_LIMIT` characters.

Fixed caps (docs/limits.md): ``_MESSAGE_LIMIT``, ``_BAR_WIDTH``.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol, TextIO

from host_receiver.sanitize import safe_text
from host_receiver.session import ProgressCallback

__all__ = ["ProgressBoard", "ProgressDisplay", "progress_line"]

#: Longest server message shown with a progress update (characters; longer is cut, saying so).
_MESSAGE_LIMIT = 200
#: Cells of the bar.
_BAR_WIDTH = 20


class ProgressBoard(Protocol):
    """A live line that shows requests in progress (the terminal's :class:`Activity`)."""

    def show_progress(self, key: object, text: str) -> None:
        """Show ``text`` for the request ``key`` (replacing what it showed)."""

    def end_progress(self, key: object) -> None:
        """Stop showing the request ``key``."""


class ProgressDisplay:
    """Shows the progress of the requests a command sends, as the rules above say."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._board: ProgressBoard | None = None

    def use(self, board: ProgressBoard) -> None:
        """Show the bars in ``board`` (the terminal host's live line) from now on."""
        self._board = board

    @contextmanager
    def watching(self, label: str) -> Iterator[ProgressCallback]:
        """The ``on_progress`` of one request named ``label``; its bar goes when the block ends."""
        stream = self._stream if self._stream is not None else sys.stderr
        board, key = self._board, object()
        terminal = board is not None or stream.isatty()
        name = safe_text(label, 60)
        drawn = False

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            nonlocal drawn
            if not terminal:
                print(progress_line(progress, total, message), file=stream, flush=True)
                return
            text = f"{name} {_bar(progress, total, message)}"
            if board is not None:
                board.show_progress(key, text)
                return
            width = max(shutil.get_terminal_size().columns - 1, 10)
            stream.write("\r\x1b[K" + f"⏳ {text}"[:width])
            stream.flush()
            drawn = True

        try:
            yield on_progress
        finally:
            if board is not None:
                board.end_progress(key)
            elif drawn:
                stream.write("\r\x1b[K")
                stream.flush()


def progress_line(progress: float, total: float | None, message: str | None) -> str:
    """One update off a terminal: ``progress 3/10: message``."""
    count = _number(progress) + (f"/{_number(total)}" if total is not None else "")
    return f"progress {count}{_words(message)}"


def _bar(progress: float, total: float | None, message: str | None) -> str:
    """``[████░░░░] 3/10: message``; without a total, ``3: message``."""
    if total is None or total <= 0:
        return f"{_number(progress)}{_words(message)}"
    filled = round(_BAR_WIDTH * min(max(progress / total, 0.0), 1.0))
    bar = "█" * filled + "░" * (_BAR_WIDTH - filled)
    return f"[{bar}] {_number(progress)}/{_number(total)}{_words(message)}"


def _words(message: str | None) -> str:
    return f": {safe_text(message, _MESSAGE_LIMIT)}" if message else ""


def _number(value: float) -> str:
    """3 for 3.0, 2.5 as it is."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
