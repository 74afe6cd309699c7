"""The ``host-receiver`` command (placeholder until the CLI lands)."""


def main() -> None:
    raise SystemExit("host-receiver: CLI not built yet")
