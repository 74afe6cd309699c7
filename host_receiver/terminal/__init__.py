"""Deprecated: the terminal host moved to :mod:`host_receiver.cli.terminal` (kept for one release)."""

import warnings

from host_receiver.cli.terminal import *  # noqa: F403
from host_receiver.cli.terminal import __all__ as __all__

warnings.warn(
    "host_receiver.terminal moved to host_receiver.cli.terminal; the old path goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
