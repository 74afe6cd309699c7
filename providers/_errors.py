"""The exceptions of the providers package.

Rule: the ``str()`` of every exception here is safe to show to a user, to put
in a task's ``statusMessage`` and to log. It never contains an API key (text
that came from a backend is passed through :mod:`providers._redact` first) and
it says what failed and, where possible, what to do about it.
"""

from __future__ import annotations

__all__ = ["ConfigError", "HostReceiverError", "NoSuitableModel", "ProviderError", "UnsupportedRequest"]


class HostReceiverError(Exception):
    """The base of every exception of host-receiver, its ``providers`` and ``host_receiver`` packages.

    It lives here, in the bottom layer, so that both packages can derive from it.
    """


class ProviderError(HostReceiverError):
    """A sampling or configuration failure with a safe, useful message.

    ``status`` is the backend's HTTP status when there was one.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class NoSuitableModel(ProviderError):
    """No configured model may serve this request (allow-list, capabilities, context)."""


class UnsupportedRequest(ProviderError):
    """The request cannot be served as sent (suggested JSON-RPC mapping: -32602)."""


class ConfigError(ProviderError):
    """The configuration file, the credentials or the command-line choice is unusable."""
