"""One server's view of the receiver: its requests routed, its tasks kept apart.

Rules:

- :meth:`Requestor.dispatch` answers a request now (a dict) or returns an
  awaitable for requests that must wait: plain sampling and elicitation, and
  ``tasks/result`` of an unfinished task. Errors are raised as ``RpcError``.
- ``sampling/createMessage`` and ``elicitation/create``, in this order:
  params validated (-32602 naming the field); the protocol's pre-checks
  (sampling tool rules; the elicitation modes the version and the host
  declare; the form schema or URL); the handler's ``accept`` (the host's own
  rules, such as model choice and limits). Only then, with a ``task`` member,
  a task capability for that method and a version with client-hosted tasks,
  a task is created and ``CreateTaskResult`` returned; otherwise the work
  runs inside the request and its result (or error) is the answer. A
  ``task`` the receiver does not offer is ignored, as the spec says.
- ``tasks/*`` go to :class:`~host_receiver.receiver._methods.TaskMethods`.
  ``tasks/list`` and ``tasks/cancel`` exist only while the receiver offers
  them on this connection (otherwise -32601, like any unknown method);
  ``tasks/get`` and ``tasks/result`` always answer, -32602 for a task that
  is not there.
- ``roots/list`` answers the host's roots, when it offers any.
- :meth:`Requestor.fulfil` answers a modern server's input requests through
  this same routing, never as a task.
- ``notifications/elicitation/complete`` calls the listeners of its
  ``elicitationId``; other notifications are ignored, as JSON-RPC says.
- :meth:`Requestor.link_done` asks the elicitation handler's person (when it
  has a ``link_done`` hook) to say when they are done at a link a request needs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

from pydantic import BaseModel

from host_receiver.errors import RpcError, invalid_params, method_not_found
from host_receiver.peer import Peer
from host_receiver.protocol.elicitation_rules import check_request as check_elicitation
from host_receiver.protocol.jsonrpc import Request
from host_receiver.protocol.modern import INPUT_METHODS
from host_receiver.protocol.params import parse, parse_elicitation, task_id_of
from host_receiver.protocol.sampling_rules import check_request as check_sampling
from host_receiver.protocol.types import (
    CreateMessageRequestParams,
    ElicitationCompleteParams,
    ElicitRequestURLParams,
    ListTasksParams,
    RequestParams,
    dump,
)
from host_receiver.protocol.versions import VersionRules, rules_of
from host_receiver.receiver._config import ELICITATION, ROOTS, SAMPLING
from host_receiver.receiver._methods import TaskMethods
from host_receiver.receiver._offer import Offer, RootsFunction, RootsSource
from host_receiver.receiver._runner import TaskRunner, Work
from host_receiver.sanitize import safe_logger

__all__ = ["Answer", "Requestor"]

#: A request's answer now, or an awaitable of it for requests that must wait.
Answer: TypeAlias = dict[str, Any] | Awaitable[dict[str, Any]]

logger = safe_logger("host_receiver.receiver")


class Requestor:
    """One server connection's view of the receiver: its requests, its tasks."""

    def __init__(self, offer: Offer, peer: Peer, runner: TaskRunner, methods: TaskMethods) -> None:
        self.offer = offer
        self.peer = peer
        self.key = runner.key
        self._runner = runner
        self._tasks = methods
        self._elicitation_listeners: dict[str, list[Callable[[], None]]] = {}

    @property
    def name(self) -> str:
        return self.peer.name

    @property
    def protocol_version(self) -> str:
        return self.peer.protocol_version

    # --- entry points ----------------------------------------------------------

    async def handle_request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Answer one request from the server; raise RpcError for an error response."""
        answer = self.dispatch(method, params)
        return answer if isinstance(answer, dict) else await answer

    def answer(self, request: Request) -> Answer:
        """:meth:`dispatch` for a decoded request (how a connection hands one over)."""
        return self.dispatch(request.method, request.params)

    def dispatch(self, method: str, params: dict[str, Any] | None) -> Answer:
        """The answer to one request, now, or an awaitable (rules in the module docstring)."""
        offer = self.offer
        if method == "tasks/get":
            return self._tasks.get(task_id_of(params))
        if method == SAMPLING and offer.sampling is not None:
            sampling = parse(CreateMessageRequestParams, params)
            check_sampling(sampling, tools_declared=offer.sampling_tools and self._rules().sampling_tools)
            return self._serve(method, sampling, offer.sampling.accept(sampling, self.name))
        if method == ELICITATION and offer.elicitation is not None:
            elicit = parse_elicitation(params)
            check_elicitation(
                elicit,
                modes=offer.elicitation_modes_for(self.protocol_version),
                needs_elicitation_id=self._rules().elicitation_complete,
            )
            return self._serve(method, elicit, offer.elicitation.accept(elicit, self.name))
        if method == ROOTS and offer.roots is not None:
            return self._roots(offer.roots)
        if method == "tasks/result":
            return self._tasks.result(task_id_of(params))
        if method == "tasks/list" and offer.config.tasks_list and self._offers_tasks():
            return self._tasks.list(parse(ListTasksParams, params).cursor)
        if method == "tasks/cancel" and offer.config.tasks_cancel and self._offers_tasks():
            return self._tasks.cancel(task_id_of(params))
        raise method_not_found(method)

    async def fulfil(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Answer one input request of a modern server (an MRTR round or a task's input).

        The same pipeline as a request the server pushes, never as a task:
        a ``task`` member is not part of an input request and is ignored.
        """
        if method not in INPUT_METHODS:
            raise method_not_found(method)
        if params is not None and "task" in params:
            params = {k: v for k, v in params.items() if k != "task"}
        answer = self.dispatch(method, params)
        return answer if isinstance(answer, dict) else await answer

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None:
        """Take a notification from the server (unknown ones are ignored, as JSON-RPC says)."""
        if method == "notifications/elicitation/complete":
            try:
                done = parse(ElicitationCompleteParams, params)
            except RpcError as exc:
                logger.warning("ignored malformed elicitation/complete from %s: %s", self.name, exc.message)
                return
            for listener in self._elicitation_listeners.pop(done.elicitation_id, []):
                listener()

    async def link_done(self, params: dict[str, Any]) -> str | None:
        """Ask the person whether they are done at the URL elicitation ``params`` (opened after
        their consent, for a request that needs it): ``"done"`` or ``"cancel"``; None at once when
        the elicitation handler cannot ask (no ``link_done``: wait for the server's word)."""
        ask = getattr(self.offer.elicitation, "link_done", None)
        if ask is None:
            inner = getattr(self.offer.elicitation, "inner", None)  # a wrapped handler (the web inbox's)
            ask = getattr(inner, "link_done", None)
        if ask is None:
            return None
        elicit = parse_elicitation(params)
        if not isinstance(elicit, ElicitRequestURLParams):
            raise invalid_params("link_done takes a URL-mode elicitation")
        said: str | None = await ask(elicit, self.name)
        return said

    def on_elicitation_complete(
        self, elicitation_id: str, listener: Callable[[], None]
    ) -> Callable[[], None]:
        """Call ``listener`` when the server says URL elicitation ``elicitation_id`` is done.

        Returns a function that removes the listener. Unknown and repeated ids are ignored.
        """
        listeners = self._elicitation_listeners.setdefault(elicitation_id, [])
        listeners.append(listener)

        def remove() -> None:
            if listener in listeners:
                listeners.remove(listener)
            if not listeners and self._elicitation_listeners.get(elicitation_id) is listeners:
                del self._elicitation_listeners[elicitation_id]

        return remove

    def cancel_tasks(self, message: str) -> int:
        """Cancel every live task of this server, answering its waiters (the connection is closing)."""
        return self._runner.cancel_all(message)

    def expire_due(self) -> None:
        """Delete every task whose ttl has run out by the receiver's clock (runs on its own
        schedule; call it after moving a test clock)."""
        self._runner.expiry.due()

    # --- plain and task-augmented requests --------------------------------------

    def _rules(self) -> VersionRules:
        return rules_of(self.peer.protocol_version)

    def _offers_tasks(self) -> bool:
        return self.offer.offers_tasks(self.peer.protocol_version)

    def _serve(self, method: str, params: RequestParams, work: Work) -> Answer:
        if params.task is not None and self.offer.task_capable(method, self.peer.protocol_version):
            return self._runner.create(method, params, work)
        return self._run(work, params)

    def _roots(self, roots: RootsSource) -> Answer:
        if callable(roots):
            return self._found_roots(roots)
        return {"roots": [dump(root) for root in roots]}

    async def _found_roots(self, find: RootsFunction) -> dict[str, Any]:
        return {"roots": [dump(root) for root in await find(self.name)]}

    async def _run(self, work: Work, params: RequestParams) -> dict[str, Any]:
        result: BaseModel = await work(self._runner.context(None, params))
        return dump(result)
