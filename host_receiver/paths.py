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
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["APP_NAME", "user_config_dir"]

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
