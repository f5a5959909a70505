"""Which files of the user's machine bubblewrap hides because they may hold a credential.

- ``CREDENTIAL_PLACES``: fixed places under the home (``~/.ssh``, ``~/.aws``...);
- ``own_places``: clover-code's own config, data, state and cache directories
  (every session transcript, every project's checkpoints, trust records);
- ``looks_like_credential``: a name that says key, token, secret, credential
  or password, whatever its extension, except a source file (``token.py``,
  ``secret.sh``) inside a project tree (a directory with ``.git``);
- ``credential_places``: all of these found at or below a directory, searched
  to ``SEARCH_DEPTH`` levels.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

__all__ = [
    "CREDENTIAL_PLACES",
    "SEARCH_DEPTH",
    "credential_places",
    "looks_like_credential",
    "own_places",
    "under",
    "within",
]

APP_NAME = "clover-code"

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


_WORD = re.compile(
    r"(?:^|[^a-z])(?:api[_-]?keys?|keys?|creds|private)(?:[^a-z]|$)|"
    r"(?:tokens?|secrets?|credentials?|passwords?|passwd|passphrases?)(?:[^a-z]|$)",
    re.IGNORECASE,
)
"""Short words only as whole words (``monkey`` is not a key); long ones also at the end
of a word (``mytoken.txt``, ``dbpassword``), never at its start (``tokenizer``)."""
_KEY_FILE = re.compile(
    r"^id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?$|\.(?:pem|key|p12|pfx|jks|keystore|kdbx|ppk|gpg|asc)$",
    re.IGNORECASE,
)
_SOURCE = re.compile(
    r"\.(?:py|pyi|js|mjs|cjs|jsx|ts|tsx|go|rs|java|kt|kts|scala|swift|c|h|cc|cpp|cxx|hpp|hh|"
    r"cs|m|mm|rb|php|pl|pm|lua|sh|bash|zsh|fish|ps1|ex|exs|erl|hs|ml|clj|dart|zig|nim|r|jl)$",
    re.IGNORECASE,
)
"""Source files by extension: in a project tree, ``token.py`` is code, not a credential."""


def looks_like_credential(name: str, *, in_project: bool = False) -> bool:
    """Whether a file or directory's name suggests it holds a credential.

    The name decides whatever its extension (``passwords.txt``, ``secret.md``);
    only a source file inside a project tree (``in_project``: some directory
    above it has ``.git``) is exempt, since ``token.py`` there is code.
    """
    if _KEY_FILE.search(name):
        return True
    if not _WORD.search(name):
        return False
    return not (in_project and _SOURCE.search(name))


def own_places(home: str, env: Mapping[str, str]) -> list[str]:
    """clover-code's own directories for the user whose home is ``home``: config, data,
    state and cache (by the XDG variables when set, else their defaults)."""
    bases = {
        "XDG_CONFIG_HOME": ".config",
        "XDG_DATA_HOME": ".local/share",
        "XDG_STATE_HOME": ".local/state",
        "XDG_CACHE_HOME": ".cache",
    }
    places: list[str] = []
    for var, default in bases.items():
        base = env.get(var, "")
        for root in (base if os.path.isabs(base) else "", os.path.join(home, default)):
            if root:
                places.append(os.path.join(root, APP_NAME))
    return list(dict.fromkeys(places))


def credential_places(top: str, workspace: str, fixed: Iterable[str] = ()) -> list[str]:
    """Host paths to hide at or below ``top``: the ``fixed`` places, and credential-like names.

    Symbolic links are followed to what they name, which is what gets hidden
    (when it is under ``top``; a fixed place is hidden wherever it leads);
    names found inside the workspace are left to it, unless the workspace is
    ``top`` itself. Nothing that contains the workspace is hidden.
    """
    found: list[str] = []

    def add(path: str, is_fixed: bool) -> None:
        real = os.path.realpath(path)
        if not os.path.exists(real) or real in ("/", top) or real in found:
            return
        if under(workspace, real):
            return  # hiding it would hide the workspace too (~/secret-project/app)
        in_workspace = workspace != top and under(real, workspace)
        if not is_fixed and (not under(real, top) or in_workspace):
            return
        found.append(real)

    for place in fixed:
        add(place if os.path.isabs(place) else os.path.join(top, place), True)
    budget = _SEARCH_BUDGET
    level = [(top, os.path.lexists(os.path.join(top, ".git")))]
    for _depth in range(SEARCH_DEPTH):
        deeper: list[tuple[str, bool]] = []
        for folder, in_project in level:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            budget -= len(entries)
            for entry in entries:
                if looks_like_credential(entry.name, in_project=in_project):
                    add(entry.path, False)
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir and entry.name not in _SKIP_DIRS and entry.path not in found:
                    project = in_project or os.path.lexists(os.path.join(entry.path, ".git"))
                    deeper.append((entry.path, project))
            if budget <= 0:
                break
        if budget <= 0:
            break
        level = deeper
    return [p for p in found if not within(p, [q for q in found if q != p])]


def under(path: str, parent: str) -> bool:
    """Whether ``path`` is ``parent`` or below it (both real, absolute paths)."""
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def within(path: str, parents: Iterable[str]) -> bool:
    """Whether ``path`` is at or below one of ``parents``."""
    return any(under(path, parent) for parent in parents)
