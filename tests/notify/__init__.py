"""Tests of notifications (host_receiver.notify): channels, the queue, reminders, escalation, expiry."""
