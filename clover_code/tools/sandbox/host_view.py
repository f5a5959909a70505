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
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from clover_code.tools.sandbox.policy import looks_secret

__all__ = [
    "CREDENTIAL_PLACES",
    "SEARCH_DEPTH",
    "TOOLCHAIN_VARS",
    "HostView",
    "host_view",
    "looks_like_credential",
]

CREDENTIAL_PLACES = (
    ".ssh",
    ".aws",
    ".azure",
    ".gnupg",
    ".docker",
    ".kube",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pgpass",
    ".my.cnf",
    ".vault-token",
    ".password-store",
    ".terraform.d",
    ".gem/credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/gh",
    ".config/hub",
    ".config/gcloud",
    ".config/op",
    ".config/git/credentials",
    ".local/share/keyrings",
    ".local/share/kwalletd",
    ".mozilla",
    ".thunderbird",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".config/vivaldi",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".lesshst",
    ".viminfo",
)
"""Places under the home directory hidden from sandboxed commands, always."""

SEARCH_DEPTH = 3
"""How many levels below the home the credential-name search looks (``~/a/b/name``)."""

_SEARCH_BUDGET = 20_000
"""Directory entries the search reads at most, so a huge home cannot stall a command."""

_SKIP_DIRS = frozenset(
    {".git", "node_modules", "site-packages", "dist-packages", "__pycache__", ".cache-pip"}
)
"""Directories the search does not enter: code, not credentials."""

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

_WORD = re.compile(
    r"(?:^|[^a-z])(?:api[_-]?keys?|keys?|tokens?|secrets?|credentials?|creds|passwords?|"
    r"passwd|passphrases?|private)(?:[^a-z]|$)",
    re.IGNORECASE,
)
_KEY_FILE = re.compile(
    r"^id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?$|\.(?:pem|key|p12|pfx|jks|keystore|kdbx|ppk|gpg|asc)$",
    re.IGNORECASE,
)
_CODE = re.compile(
    r"\.(?:py|pyc|pyi|js|mjs|cjs|ts|rs|go|rb|java|class|c|h|cc|cpp|hpp|so|dylib|a|o|"
    r"md|rst|txt|html|css|1|gz)$",
    re.IGNORECASE,
)


def looks_like_credential(name: str) -> bool:
    """Whether a file or directory's name suggests it holds a credential.

    Source files (``token.py`` is part of Python's standard library) never do.
    """
    if _KEY_FILE.search(name):
        return True
    return bool(_WORD.search(name)) and not _CODE.search(name)


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
    denied: list[str] = []
    if home is not None:
        view.home = home
        view.env["HOME"] = home
        view.binds += ["--ro-bind", home, home]
        denied = _credential_places(home, workspace)
    shown = [home] if home else []

    def show(path: str) -> None:
        real = os.path.realpath(path)
        if not os.path.isdir(real) or _under(real, workspace) or _within(real, shown):
            return
        if not _user_may_enter(real, user):
            return  # bubblewrap, running as the user, could not bind it
        if _within(real, denied) or not _within(real, list(concealed)):
            return  # denied, or already visible through the read-only root
        view.binds += ["--ro-bind", real, real]
        shown.append(real)

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


def _credential_places(home: str, workspace: str) -> list[str]:
    """Host paths under ``home`` to hide: the fixed list, and credential-like names.

    Symbolic links are followed to what they name, which is what gets hidden
    (when it is under the home); names found inside the workspace are left to
    it, unless they are in the fixed list or the workspace is the home itself.
    """
    found: list[str] = []

    def add(path: str, fixed: bool) -> None:
        real = os.path.realpath(path)
        if not os.path.exists(real) or real in ("/", home) or real in found:
            return
        if _under(workspace, real):
            return  # hiding it would hide the workspace too (~/secret-project/app)
        in_project = workspace != home and _under(real, workspace)
        if not fixed and (not _under(real, home) or in_project):
            return
        found.append(real)

    for place in CREDENTIAL_PLACES:
        add(os.path.join(home, place), True)
    budget = _SEARCH_BUDGET
    level = [home]
    for _depth in range(SEARCH_DEPTH):
        deeper: list[str] = []
        for folder in level:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            budget -= len(entries)
            for entry in entries:
                if looks_like_credential(entry.name):
                    add(entry.path, False)
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir and entry.name not in _SKIP_DIRS and entry.path not in found:
                    deeper.append(entry.path)
            if budget <= 0:
                break
        if budget <= 0:
            break
        level = deeper
    return [p for p in found if not _within(p, [q for q in found if q != p])]


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


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _within(path: str, parents: list[str]) -> bool:
    return any(_under(path, parent) for parent in parents)
