"""JSON-RPC error codes and the exception that carries one across layers.

Every layer that refuses something raises :class:`RpcError`; the session turns
it into a JSON-RPC error response, and the task layer stores it as the outcome
of a failed task so that ``tasks/result`` can return the very same error.
"""

from __future__ import annotations

from typing import Any

from providers import HostReceiverError, bounded

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: MCP: the server asked for a URL elicitation it needs before it can go on.
URL_ELICITATION_REQUIRED = -32042
#: MCP sampling: the user (or the host's policy on the user's behalf) refused.
USER_REJECTED = -1


class RpcError(HostReceiverError):
    """A JSON-RPC error: ``code``, ``message`` and optional ``data``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        """The ``error`` member of a JSON-RPC error response."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_dict(cls, error: dict[str, Any]) -> RpcError:
        """Rebuild the exception from an ``error`` member."""
        return cls(int(error["code"]), str(error["message"]), error.get("data"))

    def __repr__(self) -> str:
        return f"RpcError({self.code}, {self.message!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RpcError) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.code, self.message))


def invalid_params(message: str, data: Any = None) -> RpcError:
    """-32602 with ``message``."""
    return RpcError(INVALID_PARAMS, message, data)


def method_not_found(method: str) -> RpcError:
    """-32601 naming ``method`` (cut to a few dozen characters)."""
    return RpcError(METHOD_NOT_FOUND, f"Method not found: {bounded(method)}")


def user_rejected(message: str = "User rejected sampling request") -> RpcError:
    """-1: the user refused a sampling request or its result."""
    return RpcError(USER_REJECTED, message)
