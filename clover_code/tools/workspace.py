"""The directory the file tools act in, and the rules that keep them inside it.

``Workspace.resolve`` turns a path the model gave into a real path inside the
workspace or raises ``WorkspaceError``. Confinement works on real paths
(``os.path.realpath``), so symbolic links are judged by where they point:

- relative paths are taken from the workspace root; ``..`` is allowed as long
  as the result stays inside;
- absolute paths are accepted only when they lie inside the root;
- a link (or a linked parent directory) that leads outside is refused, and so
  is a dangling link whose target would lie outside;
- anything inside git internals (a ``.git`` component, compared without
  regard to case, in the path as given or as resolved) is refused, because
  the file tools must not corrupt the repository or the checkpoint store;
- writing inside one of clover-code's own directories (``protected``: its
  config, trust records, sessions and checkpoints) is refused, whichever
  workspace holds them, except below an ``exempt`` folder (the worktrees
  clover-code makes, which are workspaces themselves).

The returned path is the resolved one: writing through a link inside the
workspace updates its target and keeps the link.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from clover_code.errors import WorkspaceError
from clover_code.fs.ignore import IgnoreRules, WalkEntry, walk_tree

__all__ = ["Workspace"]

GIT_DIR = ".git"


_NAME_MAX = 255
"""Longest file name (one path component) in bytes on Linux and macOS file systems."""


def _has_git_component(parts: tuple[str, ...]) -> bool:
    return any(part.casefold() == GIT_DIR for part in parts)


class Workspace:
    """The root directory the file tools are confined to.

    ``root`` is the real (symlink-free) absolute path of the directory;
    ``protected`` folders are never written (below an ``exempt`` one they are).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        protected: Iterable[Path] = (),
        exempt: Iterable[Path] = (),
    ) -> None:
        real = Path(os.path.realpath(root))
        if not real.is_dir():
            raise WorkspaceError(f"workspace {root} is not a directory; start clover-code in one")
        self.root = real
        self.protected = tuple(Path(os.path.realpath(p)) for p in protected)
        self.exempt = tuple(Path(os.path.realpath(p)) for p in exempt)

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def contains(self, path: Path) -> bool:
        """Whether an already-resolved absolute path is the root or lies below it."""
        return path == self.root or path.is_relative_to(self.root)

    def resolve(self, path: str, *, write: bool = False) -> Path:
        """The real path inside the workspace that ``path`` names.

        With ``write`` the path must also be something a file can be written
        to: not the root and not an existing directory. Raises
        ``WorkspaceError`` with one sentence saying why a path is refused.
        """
        if not path or not path.strip():
            raise WorkspaceError("the path is empty; give a path relative to the workspace root")
        if "\x00" in path:
            raise WorkspaceError(f"path {path!r} contains a NUL character; give a plain path")
        given = Path(path)
        if any(len(part.encode("utf-8", "replace")) > _NAME_MAX for part in given.parts):
            raise WorkspaceError(
                f"path '{path[:80]}…' has a name longer than {_NAME_MAX} bytes, which file "
                "systems do not allow; use shorter names"
            )
        joined = given if given.is_absolute() else self.root / given
        lexical = Path(os.path.normpath(joined))
        if self.contains(lexical) and _has_git_component(lexical.relative_to(self.root).parts):
            raise self._git_error(path)
        real = Path(os.path.realpath(joined))
        if not self.contains(real):
            if not self.contains(lexical):
                raise WorkspaceError(
                    f"path '{path}' is outside the workspace {self.root}; "
                    "file tools only act inside it"
                )
            raise WorkspaceError(
                f"path '{path}' leads through a symbolic link to {real}, outside the "
                f"workspace {self.root}; file tools only act inside it"
            )
        if _has_git_component(real.relative_to(self.root).parts):
            raise self._git_error(path)
        if real.is_symlink():
            # realpath stops at a link it cannot follow: a loop.
            raise WorkspaceError(
                f"path '{path}' is a symbolic link loop; remove or fix the link first"
            )
        if write:
            self._refuse_protected(path, real)
            if real == self.root:
                raise WorkspaceError(
                    "the workspace root is a directory, not a file; name a file to write"
                )
            if real.is_dir():
                raise WorkspaceError(
                    f"path '{path}' is a directory; name a file inside it to write"
                )
        return real

    def _refuse_protected(self, path: str, real: Path) -> None:
        if any(real.is_relative_to(folder) for folder in self.exempt):
            return
        for folder in self.protected:
            if real.is_relative_to(folder):
                raise WorkspaceError(
                    f"path '{path}' is inside {folder}, one of clover-code's own directories "
                    "(settings, trust records, sessions, checkpoints), which the agent never "
                    "writes; the user edits those files"
                )

    def _git_error(self, path: str) -> WorkspaceError:
        return WorkspaceError(
            f"path '{path}' is inside git internals (.git), which file tools never touch; "
            "use git commands through the shell tool instead"
        )

    def relative(self, p: Path) -> str:
        """``p`` relative to the root in POSIX form, for display; ``.`` for the root.

        A path outside the root is returned absolute.
        """
        absolute = p if p.is_absolute() else self.root / p
        try:
            rel = absolute.relative_to(self.root)
        except ValueError:
            return absolute.as_posix()
        text = rel.as_posix()
        return text if text else "."

    def ignore_rules(self) -> IgnoreRules:
        """Fresh ignore rules for this workspace (ignore files are re-read lazily)."""
        return IgnoreRules(self.root)

    def walk(
        self,
        start: Path | None = None,
        *,
        max_depth: int | None = None,
        rules: IgnoreRules | None = None,
        respect_ignore: bool = True,
    ) -> Iterator[WalkEntry]:
        """Entries below ``start`` (default: the root), depth first, names sorted.

        Ignored entries are skipped and ignored directories are not entered;
        ``.git`` is always skipped; symbolic links are listed but never
        followed. If ``start`` itself is ignored (the caller named it
        explicitly), ignore rules are not applied below it.
        """
        begin = self.root if start is None else start
        active: IgnoreRules | None = None
        if respect_ignore:
            active = rules if rules is not None else self.ignore_rules()
            if active.is_ignored_path(begin):
                active = None
        yield from walk_tree(self.root, begin, rules=active, max_depth=max_depth)
