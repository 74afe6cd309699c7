"""Continuable calls: a 2026-07-28 call whose input round waits is kept in the shared store.

Rules (docs/fleet.md, "Continuable calls"):

- With ``ConnectionOptions.call_store`` (a :class:`CallKeeping`), each round
  of ``tools/call``, ``prompts/get`` or ``resources/read`` that asks for input
  is kept (:meth:`~host_receiver.store.Store.save_call`) before it is
  fulfilled: the server's identity and how to reach it
  (:func:`~host_receiver.client.remote_tasks.store.server_address`: a
  command line, its directory and the *names* of its environment variables,
  or a URL without user info; never a header, a token or an environment
  value), the method, the tool, prompt or resource and its arguments, the
  round's input requests, ``requestState`` as received, the rounds used.
- The process that keeps a call holds its lease (``call``, the call's id):
  taken by one conditional update, renewed every ``lease`` seconds while
  the call runs, ``3 * lease`` seconds long, so a killed process's lease runs
  out after three periods and another process may take it. A call whose
  lease another process holds is refused with :class:`CallLeased`.
- A round asked while the store is unreachable is not kept (a warning says
  so): it is fulfilled all the same, and the hooks refuse or decline what needs
  a person with the reason (the call is not failed by the store's absence).
- The record ends ``finished`` when the call has its result, ``failed``
  when an input request failed, the rounds ran out or the server answered
  with an error; it stays ``waiting`` (its lease given up) when the process
  stopped or the connection was lost, so that ``calls resume`` continues it.
- A record is data others may have written (docs/security.md, "What the shared
  store may choose"): the server's identity is computed from what the record
  would run (:func:`kept_identity`), never taken from the identity it says,
  and a resumed stdio server is given none of the resuming process's
  environment variables the record names: only what the resumer gives.
- Resuming answers each kept input request with the answer of its inbox item
  (:func:`stored_response`, :func:`inbox_answers`), or through this process's
  own hooks when the item is not answered or its answer is not one to send as it is.
- The same lease (:func:`renew_lease`) and inbox answers serve the tasks-extension
  tasks kept in the shared store (:mod:`host_receiver.client.remote_tasks.shared`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import anyio

from host_receiver.client.remote_tasks.store import server_identity
from host_receiver.errors import (
    CallLeased,
    InputRequestFailed,
    RpcError,
    StoreError,
    StoreUnreachable,
    user_rejected,
)
from host_receiver.protocol.modern import InputRound
from host_receiver.sanitize import safe_id, safe_logger
from host_receiver.store import LEASE_PERIODS, CallKeeping, ContinuableCall, InboxItem, Store

__all__ = ["LEASE_KIND", "KeptCall", "inbox_answers", "kept_identity", "renew_lease", "stored_response"]

logger = safe_logger("host_receiver.client.calls")

#: The kind of a continuable call's lease in the store's ``leases`` table.
LEASE_KIND = "call"


def kept_identity(address: object) -> str:
    """The identity of the server a kept call's ``address`` reaches, computed from what would run:
    its command line and directory (without the file hash) or its URL, never the identity the
    record says; :class:`ValueError` when the address is not one host-receiver writes."""
    if isinstance(address, dict):
        url, command, cwd, env = (address.get(key) for key in ("url", "command", "cwd", "env"))
        if isinstance(url, str):
            return server_identity({"url": url})
        texts = isinstance(command, list) and command and all(isinstance(part, str) for part in command)
        names = env is None or (isinstance(env, list) and all(isinstance(name, str) for name in env))
        if texts and isinstance(cwd, str) and names:
            return server_identity({"command": command, "cwd": cwd})
    raise ValueError("its address is neither a URL nor a command line, directory and names")


class KeptCall:
    """One call's record in the store and its lease, while its rounds run (:class:`RoundKeeper`)."""

    def __init__(self, keeping: CallKeeping, record: ContinuableCall) -> None:
        self.keeping = keeping
        self.record = record
        self.call_id = record.id
        self._held = False
        self._kept = False
        self._renewing = False
        self._taken = anyio.Event()

    @classmethod
    def new(
        cls,
        keeping: CallKeeping,
        *,
        identity: str,
        address: dict[str, Any],
        method: str,
        params: dict[str, Any],
    ) -> KeptCall:
        """A call not kept yet: it is kept when its first round asks for input."""
        target = params.get("uri") if method == "resources/read" else params.get("name")
        record = ContinuableCall(
            id=uuid.uuid4().hex[:12],
            server_identity=identity,
            address=address,
            method=method,
            target=str(target),
            arguments=params.get("arguments"),
            input_requests={},
            request_state=None,
            rounds_used=0,
            deadline=None,
            created=time.time(),
        )
        return cls(keeping, record)

    @classmethod
    def resumed(cls, keeping: CallKeeping, record: ContinuableCall) -> KeptCall:
        """A call read from the store, to be continued."""
        kept = cls(keeping, record)
        kept._kept = True
        return kept

    async def claim(self) -> None:
        """Take the call's lease, or :class:`CallLeased` when another process holds it."""
        keeping = self.keeping
        seconds = LEASE_PERIODS * keeping.lease
        if not await keeping.store.claim(LEASE_KIND, self.call_id, keeping.owner, seconds):
            found = await keeping.store.call(self.call_id)
            raise CallLeased(self.call_id, None if found is None else found.lease_expires)
        self._held = True
        self._taken.set()

    @asynccontextmanager
    async def renewing(self) -> AsyncIterator[None]:
        """For the block, the lease renewed every ``lease`` seconds from when it is taken (the
        whole call: its rounds and the sends between them). The block's error is raised as it is."""
        if self._renewing:  # already renewed by an enclosing block
            yield
            return
        self._renewing = True
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._renew)
                try:
                    yield
                finally:
                    group.cancel_scope.cancel()
        except BaseExceptionGroup as failures:  # the block's own error (the renewal only logs)
            if len(failures.exceptions) == 1:
                raise failures.exceptions[0] from None
            raise
        finally:
            self._renewing = False

    @asynccontextmanager
    async def waiting(self, rounds_used: int, asked: InputRound) -> AsyncIterator[None]:
        """Keep the round ``asked`` (the call's ``rounds_used``-th), its lease taken first. With the
        store unreachable the round is not kept (a warning says so) and is fulfilled all the same:
        what needs a person is then refused or declined by the hooks, saying why."""
        self.record = replace(
            self.record,
            input_requests={key: {"method": m, "params": p} for key, (m, p) in asked.requests.items()},
            request_state=asked.request_state,
            rounds_used=rounds_used,
            status="waiting",
        )
        try:
            if not self._held:
                await self.claim()
            await self.keeping.store.save_call(self.record)
        except StoreUnreachable as exc:
            logger.warning(
                "call %s: round %d is not kept, so it cannot be resumed from there: %s",
                safe_id(self.call_id),
                rounds_used,
                exc,
            )
        else:
            self._kept = True
        yield

    async def end(self, status: str | None) -> None:
        """The call ended (``finished``, ``failed``) or stopped (None: it stays ``waiting``); the
        lease is given up. Nothing is written for a call that was never kept."""
        with anyio.CancelScope(shield=True):
            try:
                if self._kept and status is not None:
                    await self.keeping.store.set_call_status(self.call_id, status)
                if self._held:
                    await self.keeping.store.release(LEASE_KIND, self.call_id, self.keeping.owner)
            except StoreError as exc:
                logger.warning("could not record the end of call %s: %s", safe_id(self.call_id), exc)
            self._held = False

    async def _renew(self) -> None:
        await self._taken.wait()
        await renew_lease(
            self.keeping, LEASE_KIND, self.call_id, lambda: self._held, f"call {safe_id(self.call_id)}"
        )


async def renew_lease(keeping: CallKeeping, kind: str, key: str, held: Callable[[], bool], what: str) -> None:
    """Renew ``keeping.owner``'s lease on ``(kind, key)`` every ``keeping.lease`` seconds while
    ``held()`` (each renewal for :data:`LEASE_PERIODS` periods); a store error is logged and tried
    again next period; ends when another process took the lease (logged). ``what`` names it (safe)."""
    while held():
        await anyio.sleep(keeping.lease)
        try:
            renewed = await keeping.store.renew(kind, key, keeping.owner, LEASE_PERIODS * keeping.lease)
        except StoreError as exc:  # the store is away: try again next period
            logger.warning("could not renew the lease of %s: %s", what, exc)
            continue
        if not renewed:
            logger.warning("the lease of %s was taken by another process: it continues it", what)
            return


async def inbox_answers(
    store: Store, link: str, requests: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, dict[str, Any]], dict[str, tuple[str, dict[str, Any] | None]]]:
    """The kept input ``requests`` (``{"method", "params"}`` by key) of the call or task ``link``:
    the responses their answered inbox items give (:func:`stored_response`), and the requests to ask
    again (method, params). A sampling request refused in the inbox raises :class:`InputRequestFailed`."""
    items = await store.call_items(link)
    answers: dict[str, dict[str, Any]] = {}
    again: dict[str, tuple[str, dict[str, Any] | None]] = {}
    for key, request in requests.items():
        method = str(request.get("method"))
        try:
            answer = stored_response(dict(request), items.get(key))
        except RpcError as exc:
            raise InputRequestFailed(key, method, exc) from None
        if answer is not None:
            answers[key] = answer
        else:
            again[key] = (method, request.get("params"))
    return answers, again


def stored_response(request: dict[str, Any], item: InboxItem | None) -> dict[str, Any] | None:
    """The input response an answered inbox item gives the kept input request ``request``
    (``{"method", "params"}``): an elicitation's accept (with its content for a form), decline or
    cancel as given. None when there is no such answer (ask again); a refused sampling request
    raises the refusal (:class:`~host_receiver.errors.RpcError`), as the host that asked would have."""
    if item is None or item.status != "answered" or not isinstance(item.answer, dict):
        return None
    action = item.answer.get("action")
    if request.get("method") == "elicitation/create":
        if action in ("decline", "cancel"):
            return {"action": action}
        if action != "accept":
            return None
        params = request.get("params") or {}
        if params.get("mode") == "url":
            return {"action": "accept"}
        content = item.answer.get("content")
        return {"action": "accept", "content": content} if isinstance(content, dict) else None
    if request.get("method") == "sampling/createMessage" and action in ("refuse", "never"):
        raise user_rejected(f"refused in the inbox (item {safe_id(item.id)})")
    return None  # a sampling approval: the model is asked here, through this process's hooks
