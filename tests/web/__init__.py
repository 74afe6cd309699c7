"""Tests of the web inbox (host_receiver.web): its hooks and API, the CLI flags, a real browser."""
