"""Where host-receiver keeps its files by default: its directory in the user's config directory.

Rules:

* With ``platformdirs`` installed (it comes with ``host-receiver[cli]``), the
  directory is its ``user_config_path("host-receiver", appauthor=False)``,
  imported only when a default path is asked for.
* Without it (the library alone), the same rule is written out here:
  Windows: ``%LOCALAPPDATA%\\host-receiver`` (else ``~\\AppData\\Local\\...``);
  elsewhere: ``$XDG_CONFIG_HOME/host-receiver`` when that variable is an
  absolute path (the XDG Base Directory spec ignores a relative one), else
  ``~/Library/Application Support/host-receiver`` on macOS and
  ``~/.config/host-receiver`` on Linux and other Unixes. This is what
  platformdirs 4 answers (macOS honours ``$XDG_CONFIG_HOME`` since its 2026
  releases); ``tests/providers/test_providers_config.py`` compares the two
  for all three platforms.
* A file host-receiver keeps state in (saved decisions, the task store, a
  token file) is read only when it belongs to the user and group and others
  have no access to it, as ssh treats its keys: :func:`private_file_problem`
  says what is wrong and the commands that fix it.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import shlex
import stat
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["APP_NAME", "private_file_problem", "user_config_dir"]

#: The directory name under the user's config directory.
APP_NAME = "host-receiver"


def user_config_dir() -> Path:
    """host-receiver's directory in the user's config directory (rules in the module docstring)."""
    try:
        import platformdirs
    except ModuleNotFoundError:
        return Path(written_out_config_dir(sys.platform, os.environ, str(Path.home())))
    return platformdirs.user_config_path(APP_NAME, appauthor=False)


def written_out_config_dir(platform: str, environ: Mapping[str, str], home: str) -> str:
    """The directory platformdirs would give on ``platform`` (``sys.platform``), without it."""
    if platform == "win32":
        base = environ.get("LOCALAPPDATA") or ntpath.join(home, "AppData", "Local")
        return ntpath.join(ntpath.normpath(base), APP_NAME)
    xdg = environ.get("XDG_CONFIG_HOME", "")
    if posixpath.isabs(xdg):
        return posixpath.join(xdg, APP_NAME)
    if platform == "darwin":
        return posixpath.join(home, "Library", "Application Support", APP_NAME)
    return posixpath.join(home, ".config", APP_NAME)


def private_file_problem(path: Path, what: str) -> str | None:
    """Why ``what`` at ``path`` must not be used (not the user's, or open to group or others),
    with the commands that fix it; None when it is fine or does not exist (blocking)."""
    if not hasattr(os, "getuid"):  # Windows: ACLs, not modes
        return None
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    owned = info.st_uid == os.getuid()
    if owned and not info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        return None
    quoted = shlex.quote(str(path))
    fix = f"chmod 600 {quoted}"
    if not owned:
        fix = f"sudo chown {os.getuid()} {quoted} && {fix}"
    return (
        f"refusing to use {what} {path}: it must belong to you and have mode 0600 "
        f"(it has {stat.filemode(info.st_mode)}{'' if owned else f', owner uid {info.st_uid}'}); "
        f"fix it with: {fix}"
    )
