"""``python -m clover_code`` is the ``clover-code`` command."""

from clover_code.cli.entry import main

main()
