"""Sending to the server for the agreed era: every request the connection sends, and its notifications.

:class:`EraSending` holds :meth:`~EraSending.request`, the one place requests
are sent: a CLIENT span whose context travels in ``_meta``; on a modern
connection the envelope in ``_meta`` (protocol version, client info, this
request's capabilities) and, on HTTP, the mirrored headers. A -32022 answer
is an :class:`UnsupportedProtocolVersion` naming both sides' versions (once
more first when the server lists the version it refused), a -32021 a
:class:`MissingCapability`; ``input_required`` to a method other than
:data:`ROUND_METHODS` is a :class:`BadResult`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from host_receiver.client._core import ConnectionCore
from host_receiver.client._negotiation import lists_refused_version, missing_capability, version_refused
from host_receiver.errors import BadResult, RpcError
from host_receiver.protocol.modern import MISSING_CAPABILITY, UNSUPPORTED_VERSION, envelope
from host_receiver.protocol.types import RequestId, dump
from host_receiver.protocol.versions import Era
from host_receiver.sanitize import safe_logger
from host_receiver.session import ProgressCallback

__all__ = ["ROUND_METHODS", "EraSending"]

logger = safe_logger("host_receiver.client.connection")

#: Requests that may be answered with ``input_required`` (basic-patterns-mrtr.mdx).
ROUND_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})


class EraSending(ConnectionCore):
    """The connection's part that sends: requests as the agreed era wants them, and notifications."""

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """Send any request once and return its raw result (see :meth:`Session.request`).

        On a modern connection the envelope is added to ``_meta``. An
        ``input_required`` or task result comes back as it is: :meth:`call_tool`
        and its kin follow them; ``input_required`` to any other method is a
        :class:`BadResult`. A -32022 (the server no longer takes the agreed
        version: there is no other modern version to switch to) is an
        :class:`UnsupportedProtocolVersion`, a -32021 a :class:`MissingCapability`.
        The request is a CLIENT span (:mod:`host_receiver.telemetry`) whose context
        travels in ``_meta``.
        """
        with self._telemetry.client_call(method, params, self._facts()) as call:
            result = await self._sent(method, call.params, timeout, on_progress)
            call.result(result)
        return result

    async def _sent(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        on_progress: ProgressCallback | None,
        sent_as: Callable[[RequestId], None] | None = None,
        peer_ends: bool = False,
    ) -> dict[str, Any]:
        if self.era is Era.LEGACY:
            return await self._session.request(method, params, timeout=timeout, on_progress=on_progress)
        stamped = self._stamped(params)
        headers = self._mirror.headers(method, stamped) if self._mirror is not None else None
        version, again = self.protocol_version, False
        while True:
            try:
                result = await self._session.request(
                    method,
                    stamped,
                    timeout=timeout,
                    on_progress=on_progress,
                    headers=headers,
                    sent_as=sent_as,
                    peer_ends=peer_ends,
                )
                break
            except RpcError as exc:
                if exc.code == UNSUPPORTED_VERSION:
                    if not again and lists_refused_version(version, exc):
                        logger.info(
                            "%s refused %s in %s, which it lists: once more", self.name, method, version
                        )
                        again = True
                        continue
                    raise version_refused(self.name, method, version, exc, again=again) from None
                if exc.code == MISSING_CAPABILITY:
                    raise missing_capability(self.name, method, exc) from None
                raise
        if method not in ROUND_METHODS and result.get("resultType") == "input_required":
            raise BadResult(
                f"{self.name} answered {method} with input_required, which only "
                f"{', '.join(sorted(ROUND_METHODS))} may be answered with"
            )
        return result

    def _stamped(self, params: dict[str, Any] | None) -> dict[str, Any]:
        """``params`` with the modern envelope in ``_meta`` (the caller's other keys kept)."""
        version = self.protocol_version
        stamped = dict(params or {})
        meta = stamped.get("_meta")
        stamped["_meta"] = {
            **(meta if isinstance(meta, dict) else {}),
            **envelope(version, dump(self._options.client_info), self.capabilities_for(version)),
        }
        return stamped

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send any notification."""
        await self._session.notify(method, params)

    def notify_soon(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification without waiting; never raises (see :meth:`Session.notify_soon`)."""
        self._session.notify_soon(method, params)

    async def ping(self, *, timeout: float | None = None) -> None:
        """Check that the server answers (legacy connections: 2026-07-28 has no ping)."""
        await self._session.ping(timeout=timeout)
