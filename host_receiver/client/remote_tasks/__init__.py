"""The tasks a server runs for the host: following them to their end, and keeping them across restarts.

(The tasks the host runs for a server are :mod:`host_receiver.receiver.tasks`.) May
import the client's input rounds, the session, protocol and the base;
nothing of the connection or host above it.
"""
