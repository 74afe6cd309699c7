"""The elicitation handler: forms checked field by field, links opened only after consent.

A form is shown with its defaults and re-shown with the problems of an
invalid answer until it is valid (or the person gives up); a URL is shown
with its domain and warnings and opened in the system browser only after
consent, never fetched by the host; when no browser can be started (the
opener returns False) a warning says so, and a UI with a ``link_not_opened(view)``
method (the terminal's) is told, to show the URL to copy; an opener that returns
None opens nothing itself (the web inbox: the person's page opens the link), and
the log says so. At most ``max_waiting`` forms and links
of one server wait for a person at once; one more is refused at once with
-32600 saying so (an automatic policy asks nobody and is not counted).
While the person is asked, the task's ``statusMessage`` says so.
"""

from __future__ import annotations

import functools
import webbrowser
from collections.abc import Callable

import anyio

from host_receiver import telemetry
from host_receiver.people.approval import (
    DEFAULT_MAX_WAITING,
    ElicitationUI,
    FormView,
    LinkDone,
    UrlView,
    asks_person,
    too_many_waiting,
    url_warnings,
)
from host_receiver.protocol.elicitation_rules import parse_form_schema
from host_receiver.protocol.types import (
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
)
from host_receiver.receiver.work import ElicitationWork, WorkContext
from host_receiver.sanitize import safe_logger

logger = safe_logger("host_receiver.handlers")

#: Seconds between statusMessage updates while a model generates.


#: A person's answer to a form or a URL, as the outcome of their span.
_ANSWERED = {"accept": "approved", "decline": "declined", "cancel": "cancelled"}


#: Opens a URL: False when nothing could be, None when it is not the host's to open (the person's page).
Opener = Callable[[str], bool | None]


def open_in_browser(url: str) -> bool:
    """Open ``url`` in the system browser; False when none could be started."""
    return webbrowser.open(url, new=2)


class ElicitationService:
    """An elicitation handler: forms checked field by field, URLs opened only after consent."""

    def __init__(
        self,
        ui: ElicitationUI,
        *,
        opener: Opener = open_in_browser,
        max_attempts: int = 5,
        max_waiting: int | None = DEFAULT_MAX_WAITING,
    ) -> None:
        self.ui = ui
        self.opener = opener
        self.max_attempts = max_attempts
        self.max_waiting = max_waiting
        self._waiting: dict[str, int] = {}

    def accept(self, params: ElicitRequestParams, server: str) -> ElicitationWork:
        """The work for ``params``: the receiver has checked the mode, the schema and the URL."""
        return functools.partial(self.__call__, params)

    async def __call__(self, params: ElicitRequestParams, context: WorkContext) -> ElicitResult:
        server = context.requestor_name
        if self.max_waiting is None or not asks_person(self.ui):
            return await self._ask(params, context)
        waiting = self._waiting.get(server, 0)
        if waiting >= self.max_waiting:
            raise too_many_waiting(server, "forms and links", self.max_waiting)
        self._waiting[server] = waiting + 1
        try:
            return await self._ask(params, context)
        finally:
            self._waiting[server] -= 1
            if not self._waiting[server]:
                del self._waiting[server]

    async def _ask(self, params: ElicitRequestParams, context: WorkContext) -> ElicitResult:
        if isinstance(params, ElicitRequestFormParams):
            return await self._form(params, context)
        view = UrlView(
            server=context.requestor_name,
            task_id=context.task_id,
            message=params.message,
            url=params.url,
            elicitation_id=params.elicitation_id,
            warnings=url_warnings(params.url, params.message),
        )
        await context.set_status_message("Waiting for the user to consent to opening a URL")
        with telemetry.current().person("url_consent", asks_person(self.ui)) as wait:
            answer = await self.ui.consent_url(view)
            wait.chose(_ANSWERED.get(answer, answer))
        if answer == "accept":
            opened = await anyio.to_thread.run_sync(self.opener, params.url)
            if opened is False:
                logger.warning(
                    "no browser could be opened for the link %s asked to open (on %s): nothing was opened",
                    context.requestor_name,
                    view.domain,
                )
                shown = getattr(self.ui, "link_not_opened", None)
                if shown is not None:
                    await shown(view)
            elif opened is None:
                logger.info(
                    "the person accepted the link %s asked to open; the host opens nothing (their page does)",
                    context.requestor_name,
                )
            else:
                logger.info("opened the link %s asked to open in the browser", context.requestor_name)
        return ElicitResult(action=answer)

    async def link_done(self, params: ElicitRequestURLParams, server: str) -> LinkDone | None:
        """Ask the person to say when they are done at a link a request of ``server`` needs (opened
        after consent); None at once when the UI has no ``link_done`` hook (or is automatic)."""
        ask = getattr(self.ui, "link_done", None)
        if ask is None or not asks_person(self.ui):
            return None
        view = UrlView(
            server=server,
            task_id=None,
            message=params.message,
            url=params.url,
            elicitation_id=params.elicitation_id,
            warnings=url_warnings(params.url, params.message),
        )
        said: LinkDone = await ask(view)
        return said

    async def _form(self, params: ElicitRequestFormParams, context: WorkContext) -> ElicitResult:
        schema = parse_form_schema(params.requested_schema)
        values = schema.defaults()
        problems: dict[str, str] = {}
        await context.set_status_message("Waiting for the user to fill in a form")
        for _ in range(self.max_attempts):
            view = FormView(
                server=context.requestor_name,
                task_id=context.task_id,
                message=params.message,
                schema=schema,
                values=values,
                problems=problems,
            )
            with telemetry.current().person("form", asks_person(self.ui)) as wait:
                answer = await self.ui.fill_form(view)
                wait.chose(_ANSWERED.get(answer.action, answer.action))
            if answer.action != "accept":
                return ElicitResult(action=answer.action)
            content = dict(answer.content or {})
            problems = schema.problems(content)
            if not problems:
                return ElicitResult(action="accept", content=content)
            values = {**values, **content}
        return ElicitResult(action="cancel")
