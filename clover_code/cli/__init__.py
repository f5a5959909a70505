"""The ``clover-code`` command: the entry point (``main``), its command line
(``parser``) and its subcommands (``subcommands``), ``clover-code schema``
(``schema``) and ``clover-code sandbox`` (``sandbox``, ``sandbox_run``).
"""
