"""The host's own work: the traces of the tasks it runs, tasks counted by state, the wait for a person.

:meth:`_Work.task` is the work of a task the host runs (:class:`TaskTrace`),
linked to the request that created it; its status changes are events on that
span. Tasks by state are counted here and observed by the meter when it
collects (``host_receiver.receiver.tasks.active`` and ``.finished``: nothing
per task reaches the SDK). :meth:`_Work.person` is the wait for a person (its
outcome, never the content; nothing when a policy decides alone).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from host_receiver.telemetry._core import _CURRENT, _api, _Core, _Span
from host_receiver.telemetry._mcp import _SERVING, ServerCall


class Person(_Span):
    """The wait for a person: ``outcome`` is what they chose, never what they wrote."""

    outcome = "cancelled"

    def chose(self, outcome: str) -> None:
        self.outcome = outcome


class _Unrecorded(Person):
    """A wait nothing records, as its own context manager: ``chose`` keeps nothing, so one
    instance serves every such wait."""

    def __init__(self) -> None:
        super().__init__(None)

    def chose(self, outcome: str) -> None:
        """Nothing records the outcome."""

    def __enter__(self) -> Person:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


_UNRECORDED = _Unrecorded()


class TaskTrace:
    """A task the host runs: the request that created it, and its work's span once it runs."""

    def __init__(self, telemetry: _Work, method: str, task_id: str, link: Any) -> None:
        self.telemetry = telemetry
        self._method = method
        self._task_id = task_id
        self._link = link
        self._span: _Span | None = None

    @contextmanager
    def running(self) -> Iterator[None]:
        """The task's work as one span (linked to its creating request), current while it runs.

        When nothing records, only the telemetry is made current: no span, attributes
        or link is built (the three nested context managers cost a task 5 to 10 µs).
        """
        telemetry = self.telemetry
        if not telemetry.recording:
            mine = _CURRENT.set(telemetry)
            try:
                yield
            finally:
                _CURRENT.reset(mine)
            return
        attributes = {"mcp.method.name": self._method, "host_receiver.task.id": self._task_id}
        link = self._link.context() if isinstance(self._link, ServerCall) else self._link
        with telemetry._span(f"task {self._method}", "INTERNAL", attributes, link=link) as span:
            self._span = span
            self.status("working")
            try:
                yield
            finally:
                self._span = None

    def status(self, status: str, message: str | None = None) -> None:
        """A status change, as an event on the work's span (when it runs)."""
        if self._span is not None:
            self._span.status(status, message)


class _Work(_Core):
    """The work part of :class:`Telemetry`: tasks (their spans, their counts) and people's waits."""

    def task(self, method: str, task_id: str) -> TaskTrace:
        """A task created now (linked to the request being answered in this context)."""
        link: Any = None
        if self._installed:  # counted even before an SDK is set: it may be set while tasks run
            self._active[method] = self._active.get(method, 0) + 1
        if self.recording:
            # The request's SERVER span, recorded once its answer is sent, is read when the work runs.
            link = _SERVING.get()
            if link is None:
                api = _api()
                assert api is not None
                link = api.trace.get_current_span().get_span_context()
        return TaskTrace(self, method, task_id, link)

    def task_finished(self, method: str, status: str) -> None:
        """A task left the live states (``status``: its final one, or ``expired``)."""
        if self._installed:
            self._active[method] -= 1
            key = (method, status)
            self._finished[key] = self._finished.get(key, 0) + 1

    def _observe_active(self, options: Any) -> list[Any]:
        """``host_receiver.receiver.tasks.active`` when the meter collects (in its own thread: copies)."""
        api = _api()
        assert api is not None
        return [api.metrics.Observation(n, {"mcp.method.name": m}) for m, n in self._active.copy().items()]

    def _observe_finished(self, options: Any) -> list[Any]:
        """``host_receiver.receiver.tasks.finished`` when the meter collects."""
        api = _api()
        assert api is not None
        return [
            api.metrics.Observation(n, {"mcp.method.name": method, "host_receiver.task.status": status})
            for (method, status), n in self._finished.copy().items()
        ]

    def person(self, step: str, asked: bool) -> AbstractContextManager[Person]:
        """The wait for a person at ``step`` (approval, review, form, url_consent); set the outcome.

        When no person is ``asked`` (a policy decides), or nothing records, nothing is
        recorded (and nothing is built: one shared :class:`_Unrecorded` serves).
        """
        if not (asked and self.recording):
            return _UNRECORDED
        return self._person(step)

    @contextmanager
    def _person(self, step: str) -> Iterator[Person]:
        attributes = {"host_receiver.person.step": step}
        with self._recorded(
            self._start(f"person {step}", "INTERNAL", attributes, None, None), Person
        ) as wait:
            try:
                yield wait
            except TimeoutError:
                wait.chose("timed_out")
                raise
            finally:
                wait.set("host_receiver.person.outcome", wait.outcome)
                if self.recording:
                    labels = {**attributes, "host_receiver.person.outcome": wait.outcome}
                    self._person_wait.record(wait.elapsed(), labels)
