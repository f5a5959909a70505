"""Where installed plugins live, and the record of them.

Plugins are the user's: each is installed under ``plugins/`` of clover-code's
user data folder (e.g. ``~/.local/share/clover-code/plugins/lint-kit``), which
is never a workspace and never holds one, so neither the agent's tools nor a
sandboxed command can write a plugin's files. ``installed.json`` beside them
records each plugin: where it came from, where its folder is, whether it is
enabled, and the fingerprint of its files when the user said yes to it
(``tree_digest``); a plugin whose files changed since is not used.
"""

# Annotations are objects here, not text (no ``from __future__ import annotations``):
# pydantic reads every field's, and text would be compiled and evaluated at each start.

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from clover_code.config.settings import user_data_dir
from clover_code.errors import PluginError, ToolError
from clover_code.fs.atomic import atomic_write

__all__ = [
    "MAX_BYTES",
    "MAX_FILES",
    "InstalledPlugin",
    "PluginStore",
    "plugins_dir",
    "tree_digest",
]

MAX_FILES = 5_000
"""Most files a plugin's folder may hold."""
MAX_BYTES = 100 * 2**20
"""Most bytes a plugin's folder may hold (100 MiB)."""
_SKIPPED_DIRS = frozenset({"__pycache__", ".git"})
"""Folders left out of the fingerprint: Python writes caches beside modules it runs."""

SourceKind = Literal["folder", "git", "package"]


def plugins_dir() -> Path:
    """The folder installed plugins live in."""
    return user_data_dir() / "plugins"


class InstalledPlugin(BaseModel):
    """One plugin as ``installed.json`` records it."""

    # Built when first used: a session without plugins reads no record.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    name: str
    source: str
    """What was installed: a folder, a git URL, or a package (name or wheel)."""
    kind: SourceKind
    path: str
    """Its folder, relative to the plugins folder."""
    digest: str
    """``tree_digest`` of its folder when it was installed."""
    version: str = ""
    enabled: bool = True


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    version: Literal[1] = 1
    plugins: dict[str, InstalledPlugin] = {}


class PluginStore:
    """The installed plugins: their folders and ``installed.json``."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else plugins_dir()
        self.record = self.root / "installed.json"

    def read(self) -> dict[str, InstalledPlugin]:
        """Every installed plugin by name (none when nothing was installed)."""
        try:
            text = self.record.read_text("utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8 text"
            raise PluginError(
                f"the plugin record {self.record} cannot be read ({reason})."
            ) from None
        try:
            return dict(_Record.model_validate_json(text).plugins)
        except ValidationError:
            raise PluginError(
                f"the plugin record {self.record} is damaged; remove it and install your "
                "plugins again."
            ) from None

    def write(self, plugins: dict[str, InstalledPlugin]) -> None:
        """Replace the record with ``plugins`` (atomically)."""
        text = _Record(plugins=dict(sorted(plugins.items()))).model_dump_json(indent=1)
        try:
            atomic_write(self.record, text.encode() + b"\n")
        except ToolError as exc:
            raise PluginError(f"the plugin record cannot be written ({exc}).") from None

    def get(self, name: str) -> InstalledPlugin:
        """The installed plugin ``name``; ``PluginError`` names the installed ones if none."""
        plugins = self.read()
        if name not in plugins:
            known = ", ".join(sorted(plugins)) or "none"
            raise PluginError(f"no plugin named '{name}' is installed (installed: {known}).")
        return plugins[name]

    def folder(self, plugin: InstalledPlugin) -> Path:
        """Where ``plugin``'s files are."""
        return self.root / plugin.path


def tree_digest(folder: Path) -> str:
    """The fingerprint of a plugin's files: every path, its executable bit and its
    bytes (``__pycache__`` folders left out). ``PluginError`` for a symbolic link, or a
    folder past ``MAX_FILES`` or ``MAX_BYTES``."""
    digest = hashlib.sha256()
    size = 0
    for count, path in enumerate(_files(folder), start=1):
        info = path.lstat()
        size += info.st_size
        if count > MAX_FILES or size > MAX_BYTES:
            raise PluginError(
                f"{folder} holds more than {MAX_FILES} files or {MAX_BYTES // 2**20} MiB, "
                "more than a plugin may."
            )
        rel = path.relative_to(folder).as_posix()
        executable = bool(info.st_mode & stat.S_IXUSR)
        digest.update(f"{rel}\0{int(executable)}\0{info.st_size}\0".encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _files(folder: Path) -> Iterator[Path]:
    """The regular files under ``folder``, in a fixed order."""
    for current, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        here = Path(current)
        for name in [*dirs, *names]:
            if (here / name).is_symlink():
                raise PluginError(
                    f"{here / name} is a symbolic link; a plugin's files must be plain files "
                    "and folders."
                )
        for name in sorted(names):
            path = here / name
            if not path.is_file():
                raise PluginError(f"{path} is not a regular file; a plugin may hold only files.")
            yield path
