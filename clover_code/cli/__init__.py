"""The ``clover-code`` command: the entry point and its subcommands (``main``),
``clover-code schema`` (``schema``) and ``clover-code sandbox``
(``sandbox``, ``sandbox_run``).
"""
