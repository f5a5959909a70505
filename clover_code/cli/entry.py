"""The ``clover-code`` command's first module: it readies the process before the command's
modules load, then runs ``cli.main``.

Importing ``cli.main`` already loads the settings and the protocol's models, so
what must hold while they load is set here, where nothing heavy is imported yet:

- The collector is off (``cli.main.start_up_loaded`` freezes what loading made and
  turns it back on): loading makes objects by the hundred thousand and frees few,
  and the collector's passes over them found nothing.
- pydantic's plugins are not looked for. On the first model it builds, pydantic
  reads the entry points of every installed distribution to find plugins that
  observe each validation (a scan of all their metadata at every start). The
  command's models are its own, and no third-party code is to see what they
  validate: the settings with their keys, the prompts, the model's answers.
"""

from __future__ import annotations

import gc


def ignore_pydantic_plugins() -> None:
    """Tell pydantic its plugins were looked for and none found (its documented switch,
    ``PYDANTIC_DISABLE_PLUGINS``, is an environment variable every child process would
    inherit; the command's children are the user's programs)."""
    from pydantic.plugin import _loader

    if getattr(_loader, "_plugins", False) is None:
        _loader._plugins = {}


def main() -> None:
    """Console-script entry point (``clover-code``, ``python -m clover_code``)."""
    gc.disable()
    ignore_pydantic_plugins()
    from clover_code.cli.main import main as run_command

    run_command()
