"""What bubblewrap shows of the user's machine: their toolchain, never their credentials.

Commands under bubblewrap see the host's root filesystem read-only, so the
system's compilers and interpreters are there already. This module adds what
lives elsewhere, so that ``python3 -m pytest`` or ``cargo test`` works as it
does in the user's own shell:

- the home directory, read-only, minus a deny list of credential places
  (``CREDENTIAL_PLACES``) and of files and directories named like a key,
  token, secret, credential or password (``looks_like_credential``, searched
  to ``SEARCH_DEPTH`` levels below the home), each hidden behind an empty
  read-only tmpfs or ``/dev/null``;
- every ``PATH`` entry outside the workspace, read-only (bind-mounted when it
  lies in a place the sandbox otherwise hides, such as /tmp or /run);
- for a PATH entry or interpreter inside a hidden place, the whole toolchain
  installation it belongs to (``~/.pyenv``, not only ``~/.pyenv/shims``),
  with the credential-like names in it hidden;
- clover-code's own directories never (``credentials.own_places``: every
  transcript and checkpoint), wherever they are;
- the project's virtualenv: ``$VIRTUAL_ENV`` (read-only when outside the
  workspace), else ``.venv`` or ``venv`` in the workspace, with its ``bin``
  first on ``PATH``;
- the toolchain variables in ``TOOLCHAIN_VARS`` (never one named like a
  credential: ``policy.looks_secret`` still applies).

Writes stay where the sandbox allows them: the workspace and a private /tmp.
When the command's user cannot read the home directory (clover-code as root
for a workspace owned by someone else), HOME stays the sandbox's private one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from clover_code.tools.sandbox.credentials import (
    CREDENTIAL_PLACES,
    SEARCH_DEPTH,
    credential_places,
    looks_like_credential,
    own_places,
    under,
    within,
)
from clover_code.tools.sandbox.policy import looks_secret

__all__ = [
    "CREDENTIAL_PLACES",
    "SEARCH_DEPTH",
    "TOOLCHAIN_VARS",
    "HostView",
    "host_view",
    "looks_like_credential",
]

TOOLCHAIN_VARS = (
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "PIPX_HOME",
    "POETRY_HOME",
    "UV_PYTHON_INSTALL_DIR",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "NVM_DIR",
    "NVM_BIN",
    "NODE_PATH",
    "VOLTA_HOME",
    "FNM_DIR",
    "GOPATH",
    "GOROOT",
    "GOBIN",
    "JAVA_HOME",
    "GRADLE_USER_HOME",
    "M2_HOME",
    "GEM_HOME",
    "GEM_PATH",
    "RBENV_ROOT",
    "SDKMAN_DIR",
    "DENO_DIR",
    "BUN_INSTALL",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
)
"""Host variables that say where the user's tools live; passed when set."""


@dataclass(slots=True)
class HostView:
    """The bubblewrap arguments and environment for one workspace's host view."""

    binds: list[str] = field(default_factory=list)
    """Read-only binds (home, PATH entries, virtualenv): before the workspace's bind."""
    hides: list[str] = field(default_factory=list)
    """What hides the credential places: after the workspace's bind."""
    remounts: list[str] = field(default_factory=list)
    """``--remount-ro`` for the hiding tmpfs mounts: last."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables set over ``policy.sandbox_env``: PATH, HOME, VIRTUAL_ENV, toolchain ones."""
    home: str | None = None
    """The home directory shown read-only, or None when the command's user cannot read it."""
    hidden: list[str] = field(default_factory=list)
    """The credential places hidden (host paths), for ``clover-code sandbox status``."""


def host_view(
    root: Path,
    user: tuple[int, int],
    *,
    concealed: tuple[str, ...] = (),
    host_env: Mapping[str, str] | None = None,
) -> HostView:
    """The host view for commands in the workspace ``root`` that run as ``user``.

    ``concealed`` are the directories the sandbox covers with a tmpfs (/home,
    /root, /run, /tmp...): what the view shows from there must be bound in.
    """
    env = os.environ if host_env is None else host_env
    view = HostView()
    workspace = str(root)
    home = _home(env.get("HOME", ""), user)
    own = own_places(os.path.realpath(env.get("HOME", "") or "/"), env)
    if home is not None:
        view.home = home
        view.env["HOME"] = home
        view.binds += ["--ro-bind", home, home]
        denied = credential_places(home, workspace, (*CREDENTIAL_PLACES, *own))
    else:
        denied = [os.path.realpath(p) for p in own if os.path.exists(p)]
        denied = [p for p in denied if not under(workspace, p)]
    shown = [home] if home else []

    def show(path: str) -> None:
        real = os.path.realpath(path)
        if not os.path.isdir(real) or under(real, workspace) or within(real, shown):
            return
        real = _toolchain_root(real, env, concealed) or real
        if not _user_may_enter(real, user):
            return  # bubblewrap, running as the user, could not bind it
        if within(real, denied) or not within(real, list(concealed)):
            return  # denied, or already visible through the read-only root
        view.binds += ["--ro-bind", real, real]
        shown.append(real)
        denied.extend(p for p in credential_places(real, workspace) if p not in denied)

    path = [p for p in env.get("PATH", "").split(os.pathsep) if os.path.isabs(p)]
    venv = _virtualenv(root, env)
    if venv is not None:
        show(venv)
        base = _venv_base(venv)
        if base is not None:
            show(base)
        view.env["VIRTUAL_ENV"] = venv
        path = [os.path.join(venv, "bin"), *(p for p in path if p != os.path.join(venv, "bin"))]
    for entry in path:
        show(entry)
    if path:
        view.env["PATH"] = os.pathsep.join(dict.fromkeys(path))
    for name in TOOLCHAIN_VARS:
        if name in env and name not in view.env and not looks_secret(name):
            view.env[name] = env[name]
    view.env.setdefault("XDG_CACHE_HOME", "/tmp/.cache")  # caches go to the private /tmp
    for place in denied:
        if os.path.isdir(place):
            view.hides += ["--tmpfs", place]
            view.remounts += ["--remount-ro", place]
        else:
            view.hides += ["--ro-bind", "/dev/null", place]
    view.hidden = denied
    return view


_ROOT_VARS = (
    "PYENV_ROOT",
    "RBENV_ROOT",
    "NODENV_ROOT",
    "GOENV_ROOT",
    "NVM_DIR",
    "VOLTA_HOME",
    "FNM_DIR",
    "SDKMAN_DIR",
    "BUN_INSTALL",
    "RUSTUP_HOME",
    "CARGO_HOME",
)
"""Variables naming a toolchain's whole installation, which its PATH entries need."""


def _toolchain_root(entry: str, env: Mapping[str, str], concealed: tuple[str, ...]) -> str | None:
    """The whole installation a PATH entry (or interpreter) inside a hidden place belongs
    to, when it has one: pyenv's shims run ``$PYENV_ROOT/libexec/pyenv``, and its
    interpreters live in ``$PYENV_ROOT/versions``, so binding the entry alone breaks it.

    That is the directory a variable of ``_ROOT_VARS`` names, else the outermost
    directory above the entry that carries its own ``libexec/<name>`` (``~/.pyenv``,
    ``~/.rbenv``, ``~/.nodenv``). Never a hidden place itself (``/root``, ``/home``).
    """
    hidden = [os.path.realpath(c) for c in concealed]
    for name in _ROOT_VARS:
        value = env.get(name, "")
        if os.path.isabs(value):
            real = os.path.realpath(value)
            if under(entry, real) and real not in hidden and os.path.isdir(real):
                return real
    found = None
    current = os.path.dirname(entry)
    while current not in ("/", *hidden) and within(current, hidden):
        tool = os.path.basename(current).lstrip(".")
        if tool and os.path.isfile(os.path.join(current, "libexec", tool)):
            found = current
        current = os.path.dirname(current)
    return found


def _home(home: str, user: tuple[int, int]) -> str | None:
    """The real home directory when ``user`` may read it."""
    if not home or not os.path.isabs(home):
        return None
    real = os.path.realpath(home)
    if real == "/" or not os.path.isdir(real) or not _user_may_enter(real, user):
        return None
    return real


def _user_may_enter(path: str, user: tuple[int, int]) -> bool:
    """Whether ``user`` may list ``path`` and pass through every directory above it,
    by the permission bits (root may, without capabilities, only as the owner)."""
    uid, gid = user
    current = path
    need = 0o5  # read and search on the directory itself, search above it
    while True:
        try:
            st = os.stat(current)
        except OSError:
            return False
        if st.st_uid == uid:
            bits = (st.st_mode >> 6) & 0o7
        elif st.st_gid == gid:
            bits = (st.st_mode >> 3) & 0o7
        else:
            bits = st.st_mode & 0o7
        if bits & need != need:
            return False
        if current == "/":
            return True
        current, need = os.path.dirname(current), 0o1


def _virtualenv(root: Path, env: Mapping[str, str]) -> str | None:
    """``$VIRTUAL_ENV`` when it is a virtualenv, else the workspace's ``.venv`` or ``venv``."""
    candidates = [env.get("VIRTUAL_ENV", "")]
    candidates += [str(root / ".venv"), str(root / "venv")]
    for candidate in candidates:
        if (
            candidate
            and os.path.isabs(candidate)
            and os.path.isfile(os.path.join(candidate, "pyvenv.cfg"))
        ):
            return os.path.realpath(candidate)
    return None


def _venv_base(venv: str) -> str | None:
    """The installation the virtualenv's interpreter comes from (``home`` in pyvenv.cfg's
    parent), which must be visible too for the venv's python to start."""
    try:
        text = Path(venv, "pyvenv.cfg").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and os.path.isabs(value.strip()):
            return os.path.dirname(os.path.realpath(value.strip()))
    return None
