"""The audit log: one record per thing a person may later ask about.

Everything goes to the ``host_receiver.audit`` logger at INFO, one line per
event, ``key=value`` pairs after a fixed phrase, so the lines can be grepped
and parsed: a task created, finished, expired; its result retrieved; a lookup
refused (wrong owner, unknown or expired id); the plan of a sampling request
(its provider, model, why that model, and the fields its provider will not
send) and a ``maxTokens`` the host lowered (both logged when the request is
accepted, before any task exists: for a task-augmented request the ``task
created`` line of the same requestor follows).

Every line is made safe by the logger's filter (:func:`host_receiver.sanitize.safe_logger`:
controls escaped, one line per record); a task id a server sent (a refused
lookup) is also cut to a few dozen characters (:func:`host_receiver.sanitize.safe_id`).
"""

from __future__ import annotations

from host_receiver.sanitize import safe_id, safe_logger

__all__ = ["audit"]

audit = safe_logger("host_receiver.audit")


def task_created(server: str, task_id: str, method: str, ttl: int | None) -> None:
    audit.info("task created requestor=%s task=%s method=%s ttl=%s", server, task_id, method, ttl)


def task_finished(server: str, task_id: str, status: str) -> None:
    audit.info("task %s requestor=%s task=%s", status, server, task_id)


def task_expired(server: str, task_id: str, status: str) -> None:
    audit.info("task expired requestor=%s task=%s status=%s", server, task_id, status)


def result_retrieved(server: str, task_id: str, status: str) -> None:
    audit.info("task result retrieved requestor=%s task=%s status=%s", server, task_id, status)


def lookup_refused(server: str, task_id: str, reason: str) -> None:
    audit.info("task lookup refused requestor=%s task=%s reason=%s", server, safe_id(task_id), reason)


def sampling_planned(server: str, provider: str, model: str, reason: str, dropped: tuple[str, ...]) -> None:
    audit.info(
        "sampling planned requestor=%s provider=%s model=%s reason=%s not_sent=%s",
        server,
        provider,
        model,
        reason,
        ",".join(dropped) or "-",
    )


def max_tokens_clamped(server: str, model: str, requested: int, granted: int) -> None:
    audit.info(
        "sampling maxTokens clamped requestor=%s model=%s requested=%d granted=%d",
        server,
        model,
        requested,
        granted,
    )
