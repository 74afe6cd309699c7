"""The tasks a server runs for the host: following them to their end, and keeping them across restarts.

``_polls`` (one ``tasks/get``, its pace, the ttl, ``tasks/cancel``), ``_news``
(status notifications, and which are news), ``_modern`` (the tasks
extension), ``_legacy`` (2025-11-25 task-augmented calls), ``_handle``
(``TaskHandle``) and ``_calls`` (the connection's part that follows them,
and keeps them in the task store). (The tasks the host runs for a server
are :mod:`host_receiver.receiver.tasks`.) ``store`` keeps them in an SQLite
file, ``shared`` in the shared store (under a lease, their input answered
from its inbox). May import the client's input rounds, kept calls
(``shared``: their lease renewal and inbox answers) and options, the
session, protocol, the store and the base; nothing of the
connection or host above it (``_calls`` declares what it uses of the
connection for the type checker only).
"""
