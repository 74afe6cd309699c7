"""A stdio server's child process: started with a safe environment, its stderr logged, stopped whole.

The stdio transport (:mod:`host_receiver.transports.stdio`) owns the pipes
and the messages; this module owns the process. Both log to the transport's
logger, ``host_receiver.transports.stdio``.

Rules:

- Environment (a security property, docs/security.md): by default the child
  sees only :func:`safe_environment` (the variables a process needs to run:
  what the official MCP SDKs pass, plus the locale and the temporary
  directory) and then the transport's ``env``, which wins. Provider keys and
  every other secret of the host's environment do not reach a server unless
  named in ``env``. ``inherit_env=True`` passes everything (unsafe; for tests).
- The child's stderr is forwarded line by line to the logger (the
  transport's ``stderr_level``, INFO by default: MCP says stderr is not an
  error channel), made safe by it (controls escaped,
  :func:`host_receiver.sanitize.safe_logger`) and cut to 8 KiB. The level is
  read for each line, so a transport may lower it for a while (the CLI does,
  while it connects: a legacy server's complaints about the era probe are
  DEBUG). The last lines, made safe, are kept in the transport's
  ``stderr_tail`` for an error to quote.
- Shutdown (the MCP stdio lifecycle), once the transport has closed stdin:
  wait ``grace`` seconds, SIGTERM, wait again, SIGKILL. On POSIX the child
  gets its own session, so the signals reach the helpers it started
  (``npx``, ``uv run``) and a Ctrl-C meant for the host does not hit it
  first; and once the child is gone, helpers it left behind in its session
  get SIGTERM, then (after the grace, if they still hold its stderr or live)
  SIGKILL: no process of the server outlives the connection.

Fixed caps (docs/limits.md): ``_MAX_LOGGED_LINE``.
"""

from __future__ import annotations

import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence

import anyio
from anyio.abc import ByteReceiveStream, Process

from host_receiver.errors import TransportError
from host_receiver.sanitize import safe_logger, safe_text

__all__ = ["POSIX", "forward_stderr", "safe_environment", "start_process", "stop_process"]

#: The stdio transport's logger: a host configures one logger for the whole transport.
logger = safe_logger("host_receiver.transports.stdio")

POSIX = sys.platform != "win32"
_MAX_LOGGED_LINE = 8 * 1024

#: What the official SDKs pass (mcp's ``get_default_environment``, the TypeScript SDK's
#: ``getDefaultEnvironment``: HOME, LOGNAME, PATH, SHELL, TERM, USER on POSIX), plus the
#: locale and the temporary directory.
_SAFE_VARIABLES_POSIX = (
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR",
)  # fmt: skip
#: The SDKs' Windows lists together (APPDATA ... USERPROFILE, PATHEXT, PROGRAMFILES), plus
#: COMSPEC and TMP.
_SAFE_VARIABLES_WINDOWS = (
    "APPDATA", "COMSPEC", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT",
    "PROCESSOR_ARCHITECTURE", "PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP",
    "USERNAME", "USERPROFILE",
)  # fmt: skip


def safe_environment() -> dict[str, str]:
    """The part of our environment a server needs to start, and nothing secret.

    A value starting with ``()`` (an exported shell function) is left out, as
    the SDKs do.
    """
    names = _SAFE_VARIABLES_POSIX if POSIX else _SAFE_VARIABLES_WINDOWS
    return {
        name: value
        for name in names
        if (value := os.environ.get(name)) is not None and not value.startswith("()")
    }


async def start_process(
    argv: Sequence[str], environment: Mapping[str, str], cwd: str | os.PathLike[str] | None, name: str
) -> tuple[Process, int]:
    """Start ``argv`` in its own session; return it and our end of its stdin pipe (a raw fd)."""
    child_stdin, stdin = os.pipe()
    try:
        process = await anyio.open_process(
            list(argv), stdin=child_stdin, env=dict(environment), cwd=cwd, start_new_session=POSIX
        )
    except OSError as exc:
        os.close(stdin)
        raise TransportError(f"cannot start {name}: {exc}") from exc
    finally:
        os.close(child_stdin)
    logger.debug("started %s (pid %d)", name, process.pid)
    return process, stdin


async def stop_process(process: Process, name: str, grace: float, stderr_done: anyio.Event) -> None:
    """Escalate until the process and its session are gone (stdin is closed already)."""
    signalled = None
    for signum in (signal.SIGTERM, signal.SIGKILL if POSIX else signal.SIGTERM):
        with anyio.move_on_after(grace):
            await process.wait()
        if process.returncode is not None:
            break
        logger.info("%s did not exit; sending %s", name, signal.Signals(signum).name)
        _signal_group(process, signum)
        signalled = signum
    await process.wait()
    if POSIX and _group_alive(process.pid):
        logger.info("%s left processes behind; sending them SIGTERM", name)
        _signal_group(process, signal.SIGTERM)
        with anyio.move_on_after(grace):
            await stderr_done.wait()  # the helpers holding its stderr are gone
        if _group_alive(process.pid):
            logger.info("processes of %s did not exit; sending SIGKILL", name)
            _signal_group(process, signal.SIGKILL)
    with anyio.move_on_after(grace):
        await stderr_done.wait()
    code = process.returncode
    if signalled is None and code:
        logger.warning("%s exited with status %s", name, code)
    else:
        logger.debug("%s exited with status %s", name, code)


async def forward_stderr(
    stderr: ByteReceiveStream,
    name: str | Callable[[], str],
    level: Callable[[], int],
    done: anyio.Event,
    tail: deque[str],
) -> None:
    """Log the child's stderr line by line at ``level()`` under ``name`` (or ``name()``, read at
    each line: a server renamed once connected), keep the last lines in ``tail``; set ``done``
    when it closes."""
    partial = b""

    def forward(line: bytes) -> None:
        text = line[:_MAX_LOGGED_LINE].decode(errors="replace").rstrip("\r")
        tail.append(safe_text(text))
        logger.log(level(), "[%s] %s", name() if callable(name) else name, text)

    try:
        async for chunk in stderr:
            *lines, partial = (partial + chunk).split(b"\n")
            for line in lines:
                forward(line)
            if len(partial) > _MAX_LOGGED_LINE:
                forward(partial)
                partial = b""
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass
    finally:
        if partial:
            forward(partial)
        done.set()


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group (the child's session) is still there."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - a process we cannot signal: not ours
        return False
    return True


def _signal_group(process: Process, signum: int) -> None:
    try:
        if POSIX:
            os.killpg(process.pid, signum)
        else:  # pragma: no cover - Windows
            process.terminate()
    except ProcessLookupError:
        pass
