"""Reaching a person where they are: durations, notifications of waiting items, their channels.

Holds the durations people write (``10m``, ``never``: :mod:`._duration`).
Imports only the base (errors, sanitize) and ``_net``; the web inbox and the
CLI import it (docs/notify.md).
"""

from host_receiver.notify._duration import Duration, parse_duration, parse_timeout

__all__ = ["Duration", "parse_duration", "parse_timeout"]
