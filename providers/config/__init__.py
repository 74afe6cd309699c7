"""The configuration: the config file, API keys, and building the registry from them.

This room holds, all private (the public names are served by :mod:`providers`):

* ``_config``: the TOML file (provider entries, catalogue, aliases,
  allow-lists, limits), read and written atomically;
* ``_credentials``: API keys from the environment or the OS keyring;
* ``_build``: the registry for a run, from the file, ``--provider/--model``
  and the environment, each entry built into its backend.

What it may import: the contract and the registry at the top of the package
(:mod:`providers._contract`, :mod:`providers._limits`,
:mod:`providers._registry` and the like), :mod:`providers.backends` (the
echo backend and the backends' settings at import; a vendor's backend only
inside the function that builds one, since it loads the vendor's SDK), its
own modules, and host-receiver's base. Never the CLI or :mod:`providers`
itself.
"""
