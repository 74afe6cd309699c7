"""``python -m providers``: the ``providers add|list|remove`` commands on their own."""

from providers.cli import main

raise SystemExit(main())
