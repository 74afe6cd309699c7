"""Reaching a person where they are: notifications of waiting inbox items, and durations.

Holds the durations people write (``10m``, ``never``: :mod:`._duration`), what
a notification says (:class:`Notice`, its events and messages: :mod:`._events`),
where it goes (signed webhooks, any Apprise URL: :mod:`._channels`), and how it
gets there without holding up a request (:class:`Notifier` over a
:class:`NotificationQueue`, one worker per channel, retries and batching:
:mod:`._queue`). Imports only the base (errors, sanitize, _concurrency) and
``_net``; the web inbox and the CLI import it (docs/notify.md).
"""

from host_receiver.notify._channels import (
    SECRET_ENV,
    AppriseChannel,
    Channel,
    WebhookChannel,
    channel_for,
    redact,
    sign,
)
from host_receiver.notify._duration import Duration, parse_duration, parse_timeout
from host_receiver.notify._events import EVENTS, Event, Notice, message
from host_receiver.notify._queue import MemoryQueue, NotificationQueue, Notifier

__all__ = [
    "EVENTS",
    "SECRET_ENV",
    "AppriseChannel",
    "Channel",
    "Duration",
    "Event",
    "MemoryQueue",
    "Notice",
    "NotificationQueue",
    "Notifier",
    "WebhookChannel",
    "channel_for",
    "message",
    "parse_duration",
    "parse_timeout",
    "redact",
    "sign",
]
