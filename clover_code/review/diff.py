"""What a review looks at: a unified diff, chosen from the repository or given.

- the changes since a base (default: the merge base with the default branch),
  committed or not, new untracked files included;
- the staged changes; one commit; whole files (as if each were new); or a
  unified diff read from a file (a pull request's, say).

Every git command runs through ``git.safe`` (no hooks, filters, external diff
or textconv programs). The default branch is ``origin/HEAD``; when a checkout
lacks it (``actions/checkout`` makes none) a front end may say how to find it
(``default_branch``), else ``main`` or ``master`` when one exists.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from clover_code.errors import UsageError
from clover_code.fs.binary import BINARY_SAMPLE, looks_binary
from clover_code.git.safe import last_line, run_git

__all__ = [
    "MAX_DIFF_CHARS",
    "DiffTarget",
    "ReviewDiff",
    "commentable_lines",
    "diff_files",
    "new_file_diff",
    "select_diff",
]

MAX_DIFF_CHARS = 120_000
"""Most characters of diff the model is given; past it each file's part is cut."""
MAX_FILE_BYTES = 400_000
"""A whole or untracked file larger than this is named, not shown."""
MAX_UNTRACKED = 200
"""Most untracked files shown as new; more are named only."""

_DIFF_FLAGS = ("--no-color", "--no-relative", "--src-prefix=a/", "--dst-prefix=b/")
"""Against the user's diff settings (noprefix, color, relative): the text is parsed."""
_HUNK = re.compile(r"^@@ -\d+(?:,(?P<old>\d+))? \+(?P<start>\d+)(?:,(?P<count>\d+))? @@")


@dataclass(frozen=True, slots=True)
class DiffTarget:
    """What to review; all unset: the changes since the default branch's merge base."""

    base: str | None = None
    """A branch, tag or commit: the changes since its merge base with HEAD."""
    staged: bool = False
    commit: str | None = None
    files: tuple[str, ...] = ()
    """Whole files, reviewed as they are."""
    patch: str | None = None
    """A unified diff given as text (``--diff FILE``, a pull request's)."""
    patch_source: str = "the given diff"


@dataclass(frozen=True, slots=True)
class ReviewDiff:
    """The diff a review reads."""

    text: str
    what: str
    """What it is, for the prompt and the output: "the changes since main (merge base ...)"."""
    files: tuple[str, ...]
    """The paths it changes (their new names)."""
    cut: bool = False
    """Parts of it were cut to fit ``MAX_DIFF_CHARS``."""

    @property
    def empty(self) -> bool:
        """Whether there is nothing to review."""
        return not self.text.strip()


def select_diff(
    root: Path,
    target: DiffTarget,
    *,
    default_branch: Callable[[], str | None] | None = None,
) -> ReviewDiff:
    """The diff ``target`` names in the repository at ``root``; ``UsageError`` when it
    cannot be had (not a repository, an unknown base or commit, a file outside)."""
    if target.patch is not None:
        return _fitted(target.patch, target.patch_source)
    if target.files:
        return _whole_files(root, target.files)
    _need_repository(root)
    if target.staged:
        text = _git(root, "diff", *_DIFF_FLAGS, "--cached")
        return _fitted(text, "the staged changes")
    if target.commit is not None:
        return _commit(root, target.commit)
    return _since_base(root, target.base, default_branch)


def _git(root: Path, *args: str, input: str | None = None) -> str:
    done = run_git(*args, cwd=root, check=False, input=input)
    if done.returncode != 0:
        raise UsageError(f"git {args[0]} failed in {root}: {last_line(done.stderr)}.")
    return done.stdout


def _need_repository(root: Path) -> None:
    done = run_git("rev-parse", "--verify", "--quiet", "HEAD^{commit}", cwd=root, check=False)
    if done.returncode != 0:
        raise UsageError(
            f"{root} is not a git repository with a commit; review whole files with "
            "--files PATH..., or a diff with --diff FILE."
        )


def _commit_of(root: Path, name: str) -> str | None:
    if name.startswith("-"):
        return None  # never an option to git
    done = run_git("rev-parse", "--verify", "--quiet", f"{name}^{{commit}}", cwd=root, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def _default_branch(root: Path, ask: Callable[[], str | None] | None) -> str:
    done = run_git(
        "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD", cwd=root, check=False
    )
    if done.returncode == 0 and done.stdout.strip():
        return done.stdout.strip()
    named = ask() if ask is not None else None
    candidates = [f"origin/{named}", named] if named else []
    candidates += ["origin/main", "main", "origin/master", "master"] if not named else []
    for candidate in candidates:
        if _commit_of(root, candidate) is not None:
            return candidate
    if named:
        raise UsageError(
            f"the default branch is {named}, but neither origin/{named} nor {named} is in "
            f"this checkout; fetch it (actions/checkout: fetch-depth: 0) or name the base: "
            "clover-code review BASE."
        )
    raise UsageError(
        "cannot tell the default branch (no origin/HEAD, no main or master); name the base "
        "(clover-code review BASE) or run `git remote set-head origin --auto`."
    )


def _since_base(root: Path, base: str | None, ask: Callable[[], str | None] | None) -> ReviewDiff:
    name = base or _default_branch(root, ask)
    if _commit_of(root, name) is None:
        raise UsageError(f"{name} is not a branch, tag or commit in {root}; name one that is.")
    done = run_git("merge-base", name, "HEAD", cwd=root, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise UsageError(f"{name} and HEAD have no common ancestor; name another base.")
    merge_base = done.stdout.strip()
    text = _git(root, "diff", *_DIFF_FLAGS, merge_base)
    text += _untracked(root)
    return _fitted(text, f"the changes since {name} (merge base {merge_base[:12]})")


def _commit(root: Path, name: str) -> ReviewDiff:
    commit = _commit_of(root, name)
    if commit is None:
        raise UsageError(f"{name} is not a commit in {root}; give a commit's id or name.")
    parents = _git(root, "rev-list", "--parents", "-n", "1", commit).split()[1:]
    parent = parents[0] if parents else _git(root, "hash-object", "-t", "tree", "--stdin", input="")
    text = _git(root, "diff", *_DIFF_FLAGS, parent.strip(), commit)
    subject = _git(root, "log", "-1", "--format=%s", commit).strip()
    return _fitted(text, f"commit {commit[:12]} ({subject[:80]})")


def _untracked(root: Path) -> str:
    """New files git does not track yet (ignored ones left out), as new-file diffs."""
    listed = _git(root, "ls-files", "--others", "--exclude-standard", "-z")
    paths = [p for p in listed.split("\0") if p]
    parts = [_file_as_new(root, path) for path in paths[:MAX_UNTRACKED]]
    if len(paths) > MAX_UNTRACKED:
        parts.append(f"# {len(paths) - MAX_UNTRACKED} more untracked files not shown\n")
    return "".join(parts)


def _whole_files(root: Path, files: tuple[str, ...]) -> ReviewDiff:
    real_root = root.resolve()
    parts = []
    shown: list[str] = []
    for name in files:
        path = (root / name).resolve() if not Path(name).is_absolute() else Path(name).resolve()
        if not path.is_relative_to(real_root):
            raise UsageError(f"{name} is outside the workspace {root}; review files inside it.")
        if not path.is_file():
            raise UsageError(f"{name} is not a file in {root}.")
        relative = path.relative_to(real_root).as_posix()
        parts.append(_file_as_new(root, relative))
        shown.append(relative)
    what = "the whole files " + ", ".join(shown)
    return _fitted("".join(parts), what if len(what) < 200 else f"{len(shown)} whole files")


def _file_as_new(root: Path, relative: str) -> str:
    """``relative`` as a diff that adds it whole (a note instead when it cannot be shown)."""
    path = root / relative
    if path.is_symlink() or not path.is_file():
        return f"# {relative}: not a regular file, not shown\n"
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return f"# {relative}: cannot be read ({exc.strerror}), not shown\n"
    if looks_binary(data[:BINARY_SAMPLE]):
        return f"# {relative}: a binary file, not shown\n"
    if len(data) > MAX_FILE_BYTES:
        return f"# {relative}: larger than {MAX_FILE_BYTES} bytes, not shown\n"
    return new_file_diff(relative, data.decode("utf-8", errors="replace"))


def new_file_diff(path: str, text: str) -> str:
    """A unified diff that adds ``text`` as the new file ``path``."""
    lines = text.splitlines()
    head = f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
    if not lines:
        return head
    body = "".join(f"+{line}\n" for line in lines)
    end = "" if text.endswith("\n") else "\\ No newline at end of file\n"
    return f"{head}@@ -0,0 +1,{len(lines)} @@\n{body}{end}"


def _fitted(text: str, what: str) -> ReviewDiff:
    """The diff, each file's part cut when the whole is past ``MAX_DIFF_CHARS``."""
    files = tuple(diff_files(text))
    if len(text) <= MAX_DIFF_CHARS:
        return ReviewDiff(text, what, files)
    parts = _split_files(text)
    note = "\n# [the rest of this file's diff is cut: read the file to see it]\n"
    share = max(2_000, MAX_DIFF_CHARS // max(1, len(parts)) - len(note))
    kept = []
    for part in parts:
        if len(part) > share:
            part = part[:share].rsplit("\n", 1)[0] + note
        kept.append(part)
    joined = "".join(kept)
    if len(joined) > MAX_DIFF_CHARS:  # many files: the last ones are named only
        joined = joined[:MAX_DIFF_CHARS].rsplit("\n", 1)[0]
        named = ", ".join(files[:50]) + (f" and {len(files) - 50} more" if len(files) > 50 else "")
        joined += f"\n# [the diff is cut here; the change touches: {named}]\n"
    return ReviewDiff(joined, what, files, cut=True)


def _split_files(text: str) -> list[str]:
    parts = re.split(r"(?m)^(?=diff --git )", text)
    return [part for part in parts if part]


def _unquote(name: str) -> str:
    """A path as git prints it: C-quoted ("a\\tb", octal bytes) when it has odd characters."""
    if not (name.startswith('"') and name.endswith('"')):
        return name
    raw = name[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    return raw.encode("latin-1").decode("utf-8", errors="replace")


def _new_name(line: str) -> str | None:
    name = _unquote(line[4:].rstrip("\n").split("\t")[0])
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith(("a/", "b/")) else name


@dataclass(slots=True)
class _FilePart:
    name: str | None
    hunks: list[range]


def _parse(text: str) -> list[_FilePart]:
    """The files of a unified diff with their hunks' new-side line ranges.

    Lines inside a hunk are counted off its header, so a removed line that reads
    ``-- x`` (or an added ``++ x``) is never taken for a file name.
    """
    parts: list[_FilePart] = []
    old: str | None = None
    left = right = 0  # lines still to come in the current hunk, old and new side
    for line in text.splitlines():
        if (left > 0 or right > 0) and line.startswith("diff --git "):
            left = right = 0  # a hunk cut short (a diff cut to fit): the next file starts
        if left > 0 or right > 0:
            tag = line[:1]
            if tag in (" ", ""):
                left, right = left - 1, right - 1
            elif tag == "-":
                left -= 1
            elif tag == "+":
                right -= 1
            continue  # "\ No newline at end of file" counts for neither side
        if line.startswith("--- "):
            old = _new_name(line)
        elif line.startswith("+++ "):
            parts.append(_FilePart(_new_name(line) or old, []))
        elif parts and (match := _HUNK.match(line)):
            start = int(match["start"])
            count = int(match["count"]) if match["count"] is not None else 1
            left = int(match["old"]) if match["old"] is not None else 1
            right = count
            if count:
                parts[-1].hunks.append(range(start, start + count))
    return parts


def diff_files(text: str) -> list[str]:
    """The paths a unified diff changes (new names; a deleted file by its old name)."""
    found: list[str] = []
    for part in _parse(text):
        if part.name and part.name not in found:
            found.append(part.name)
    return found


def commentable_lines(text: str) -> dict[str, list[range]]:
    """For each file of a unified diff, the new-side line ranges of its hunks: the lines
    an inline comment can sit on (added lines and the context around them)."""
    ranges: dict[str, list[range]] = {}
    for part in _parse(text):
        if part.name is not None and part.hunks:
            ranges.setdefault(part.name, []).extend(part.hunks)
    return ranges
