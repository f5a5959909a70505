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
  validate: the settings with their keys, the prompts, the model's answers. The
  loader pydantic would import for that is not imported at all (it imports
  ``importlib.metadata``: about 12 million instructions, 0.7% of a one-step run).
"""

from __future__ import annotations

import gc
import sys
import types


def ignore_pydantic_plugins() -> None:
    """Tell pydantic there are no plugins, before its first model looks for them.

    Its loader module imports ``importlib.metadata`` (0.7% of a one-step run) only to scan every
    installed distribution's entry points; the command stands one in its place whose
    ``get_plugins`` finds none. Where the loader is already imported (a program that
    embeds the command), its cache is set to "looked, none found" instead. (pydantic's
    documented switch, ``PYDANTIC_DISABLE_PLUGINS``, is an environment variable every
    child process would inherit; the command's children are the user's programs.)"""
    loaded = sys.modules.get(_PLUGIN_LOADER)
    if loaded is not None:
        if getattr(loaded, "_plugins", False) is None:
            loaded._plugins = {}  # type: ignore[attr-defined]
        return
    none_found = types.ModuleType(_PLUGIN_LOADER, "pydantic's plugins: none, by clover-code.")
    none_found.get_plugins = _no_plugins  # type: ignore[attr-defined]
    sys.modules[_PLUGIN_LOADER] = none_found


_PLUGIN_LOADER = "pydantic.plugin._loader"


def _no_plugins() -> tuple[()]:
    return ()


def main() -> None:
    """Console-script entry point (``clover-code``, ``python -m clover_code``)."""
    gc.disable()
    ignore_pydantic_plugins()
    from clover_code.cli.main import main as run_command

    run_command()
