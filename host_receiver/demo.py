"""Deprecated: the demo moved to :mod:`host_receiver.cli.demo` (kept for one release)."""

import warnings

from host_receiver.cli.demo import add_demo_command, demo_command, find_server_script, mcp_version

__all__ = ["add_demo_command", "demo_command", "find_server_script", "mcp_version"]

warnings.warn(
    "host_receiver.demo moved to host_receiver.cli.demo; the old path goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
