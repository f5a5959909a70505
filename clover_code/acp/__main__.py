"""``python -m clover_code.acp``: the ACP agent without the top-level command."""

import sys

from clover_code.acp.main import main

sys.exit(main(sys.argv[1:]))
