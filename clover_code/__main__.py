"""``python -m clover_code`` is the ``clover-code`` command."""

from clover_code.cli.main import main

main()
