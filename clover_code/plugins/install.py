"""Installing a plugin: fetch it, show what it would run, and keep it only on a yes.

``stage`` fetches the source into a new folder of the plugins folder (a
staging folder the user has not said yes to; nothing reads it):

- a folder is copied (without its ``.git``);
- a git URL (``https://``, ``ssh://``, ``git@host:path``, ``file://``, or
  ``git+`` before any of them) is cloned with the hardened host git
  (``clover_code.git.safe``: no hooks, filters or other programs the
  repository configures), shallow, and its ``.git`` dropped;
- anything else is a Python package (a name, a wheel, a source archive):
  ``python -m pip install --target`` puts it, and what it depends on, in the
  staging folder, so clover-code's own environment is never changed (a
  plugin's dependency cannot break clover-code, and removing the plugin is
  deleting its folder), its files stay in clover-code's data folder where no
  sandbox can write them, and its code is never imported: the folder that
  holds its ``plugin.toml`` is the one its ``clover_code.plugins`` entry point
  names, read from the package's metadata.

``Staged.install`` then moves it to ``plugins/NAME`` and records it with the
fingerprint of its files; ``Staged.discard`` deletes what was fetched.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from clover_code.errors import PluginError
from clover_code.git.safe import last_line, run_git
from clover_code.plugins.manifest import Plugin, read_plugin
from clover_code.plugins.store import InstalledPlugin, PluginStore, SourceKind, tree_digest

__all__ = ["ENTRY_POINT_GROUP", "Staged", "source_kind", "stage"]

ENTRY_POINT_GROUP = "clover_code.plugins"
"""The entry point a package names its plugin's folder with (a module path)."""
_GIT_PREFIXES = ("git+", "https://", "http://", "ssh://", "git://", "file://")
_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")
_ARCHIVES = (".whl", ".tar.gz", ".zip")
_REQUIREMENT = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9_,.-]+\])?([=<>!~]=?[\w.*+!-]+)?$"
)
"""A package name, with extras and one version clause at most."""
PIP_TIMEOUT = 900.0
GIT_TIMEOUT = 600.0


def source_kind(source: str, cwd: Path) -> SourceKind:
    """Whether ``source`` is a folder, a git URL or a package."""
    lowered = source.lower()
    if lowered.startswith(_GIT_PREFIXES) or _SCP_LIKE.match(source):
        archive = lowered.startswith(("https://", "http://")) and lowered.endswith(_ARCHIVES)
        return "package" if archive else "git"
    path = cwd / source
    if path.is_dir():
        return "folder"
    if path.is_file():
        if lowered.endswith(_ARCHIVES):
            return "package"
        raise PluginError(
            f"{source} is a file, not a plugin folder, a wheel or a source archive "
            "(.whl, .tar.gz, .zip)."
        )
    if not _REQUIREMENT.match(source):
        raise PluginError(
            f"{source} is neither a folder, a git URL nor a Python package name; give the "
            "path of a plugin's folder, a git URL, or a package."
        )
    return "package"


@dataclass(slots=True)
class Staged:
    """A plugin fetched into a staging folder, waiting for the user's yes."""

    store: PluginStore
    staging: Path
    plugin: Plugin
    """As read from the staging folder."""
    rel: str
    """Its folder inside the staging folder ("" for the staging folder itself)."""
    source: str
    kind: SourceKind
    digest: str

    @property
    def name(self) -> str:
        """The plugin's name (its namespace)."""
        return self.plugin.name

    def preview(self) -> Plugin:
        """The plugin as it will be once installed (its commands name that folder)."""
        return Plugin(self.store.root / self.name / self.rel, self.plugin.manifest)

    def install(self) -> InstalledPlugin:
        """Move it into place and record it (enabled)."""
        target = self.store.root / self.name
        installed = self.store.read()
        if self.name in installed:
            raise _already(installed[self.name])
        if target.exists():  # left by an install or removal that did not finish
            shutil.rmtree(target)
        os.rename(self.staging, target)
        folder = target / self.rel
        if tree_digest(folder) != self.digest:
            shutil.rmtree(target, ignore_errors=True)
            raise PluginError(f"the files of plugin {self.name} changed while it was installed.")
        entry = InstalledPlugin(
            name=self.name,
            source=self.source,
            kind=self.kind,
            path=(Path(self.name) / self.rel).as_posix(),
            digest=self.digest,
            version=self.plugin.manifest.version,
        )
        self.store.write({**installed, self.name: entry})
        return entry

    def discard(self) -> None:
        """Delete what was fetched (nothing, once installed)."""
        shutil.rmtree(self.staging, ignore_errors=True)


def stage(source: str, store: PluginStore, cwd: Path) -> Staged:
    """Fetch ``source`` into a new staging folder and read its plugin; ``PluginError``
    says what went wrong (nothing is left behind then)."""
    kind = source_kind(source, cwd)
    try:
        store.root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".install-", dir=store.root))
    except OSError as exc:
        raise PluginError(f"cannot create a folder in {store.root} ({exc.strerror}).") from None
    try:
        if kind == "folder":
            _copy(cwd / source, staging)
            rel = ""
        elif kind == "git":
            _clone(source.removeprefix("git+"), staging, store.root)
            rel = ""
        else:
            local = cwd / source
            _pip(str(local) if local.is_file() else source, staging)
            rel = _entry_point_folder(source, staging)
        plugin = read_plugin(staging / rel)
        digest = tree_digest(staging / rel)
        installed = store.read()
        if plugin.name in installed:
            raise _already(installed[plugin.name])
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Staged(store, staging, plugin, rel, source, kind, digest)


def _already(entry: InstalledPlugin) -> PluginError:
    return PluginError(
        f"a plugin named {entry.name} is already installed (from {entry.source}); remove it "
        f"first with: clover-code plugin remove {entry.name}"
    )


def _copy(folder: Path, staging: Path) -> None:
    try:
        skip = shutil.ignore_patterns(".git")
        shutil.copytree(folder, staging, symlinks=True, ignore=skip, dirs_exist_ok=True)
    except (OSError, shutil.Error) as exc:
        raise PluginError(f"cannot copy {folder} ({exc}).") from None


def _clone(url: str, staging: Path, cwd: Path) -> None:
    try:
        done = run_git(
            "clone", "-q", "--depth", "1", "--", url, str(staging),
            cwd=cwd, check=False, timeout=GIT_TIMEOUT,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise PluginError(f"cloning {url} took more than {GIT_TIMEOUT:g} s; stopped.") from None
    if done.returncode != 0:
        raise PluginError(f"cannot clone {url}: {last_line(done.stderr)}.")
    shutil.rmtree(staging / ".git", ignore_errors=True)


def _pip(spec: str, staging: Path) -> None:
    argv = [
        sys.executable, "-m", "pip", "install", "--no-input", "--disable-pip-version-check",
        "--no-compile", "--target", str(staging), spec,
    ]  # fmt: skip
    env = {**os.environ, "PIP_ROOT_USER_ACTION": "ignore"}
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, errors="replace", env=env, timeout=PIP_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        raise PluginError(f"pip took more than {PIP_TIMEOUT:g} s to install {spec}.") from None
    except OSError as exc:
        raise PluginError(f"pip could not start ({exc.strerror}).") from None
    if done.returncode != 0:
        raise PluginError(f"pip could not install {spec}: {last_line(done.stderr)}.")


def _entry_point_folder(spec: str, staging: Path) -> str:
    """The folder (relative to ``staging``) the requested package's entry point names."""
    found: list[tuple[str, str]] = []
    for dist in metadata.distributions(path=[str(staging)]):
        if dist.read_text("REQUESTED") is None:
            continue  # a dependency, not what was asked for
        for entry in dist.entry_points:
            if entry.group == ENTRY_POINT_GROUP:
                found.append((entry.name, entry.value.split(":", 1)[0].strip()))
    if not found:
        raise PluginError(
            f"the package {spec} has no '{ENTRY_POINT_GROUP}' entry point, so it is not a "
            "clover-code plugin."
        )
    if len(found) > 1:
        names = ", ".join(name for name, _ in found)
        raise PluginError(
            f"the package {spec} names {len(found)} plugins ({names}); it may name one."
        )
    module = found[0][1]
    rel = Path(*module.split("."))
    if not module or any(not part.isidentifier() for part in rel.parts):
        raise PluginError(f"the package {spec} names '{module}', which is not a module path.")
    if not (staging / rel).is_dir():
        raise PluginError(
            f"the package {spec} names the module {module}, which is not a package folder "
            "(a plugin's entry point names the package that holds its plugin.toml)."
        )
    return rel.as_posix()
