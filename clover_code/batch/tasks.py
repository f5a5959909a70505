"""The task file of ``clover-code batch``: one JSON object a line.

Fields: ``id`` (or SWE-bench's ``instance_id``), ``repo`` (a local path, a git
URL, or SWE-bench's ``owner/name`` for a GitHub repository), optional
``base_commit``, ``problem_statement`` (or ``task``), optional ``setup`` and
``test_command`` (shell commands run in the task's workspace). Other fields
(SWE-bench carries many) are ignored, so an instance file is accepted as is.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from clover_code.errors import UsageError

_GITHUB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")
_SAFE_ID = re.compile(r"[^A-Za-z0-9_.-]")


class BatchTask(BaseModel):
    """One task of a batch."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    repo: str
    task: str
    base_commit: str | None = None
    setup: str | None = None
    test_command: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            if "id" not in data and "instance_id" in data:
                data["id"] = data["instance_id"]
            if "task" not in data and "problem_statement" in data:
                data["task"] = data["problem_statement"]
        return data

    @property
    def slug(self) -> str:
        """The id made safe as a file and directory name."""
        return _SAFE_ID.sub("_", self.id)[:120] or "task"

    def source(self, base: Path) -> str:
        """Where to clone from: a path (relative to the task file), a URL, or GitHub."""
        path = Path(self.repo).expanduser()
        if not path.is_absolute():
            path = base / path
        if path.exists():
            return str(path.resolve())
        if _GITHUB_NAME.match(self.repo):
            return f"https://github.com/{self.repo}.git"
        return self.repo


def read_tasks(path: Path) -> list[BatchTask]:
    """All tasks of a JSONL file; ``UsageError`` naming the line of the first bad one."""
    try:
        lines = path.read_text("utf-8").splitlines()
    except FileNotFoundError:
        raise UsageError(f"task file {path} does not exist.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"task file {path} cannot be read ({exc}).") from None
    tasks: list[BatchTask] = []
    seen: dict[str, tuple[int, str]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            task = BatchTask.model_validate(json.loads(line))
        except (json.JSONDecodeError, ValidationError) as exc:
            what = "is not JSON" if isinstance(exc, json.JSONDecodeError) else _missing(exc)
            raise UsageError(f"{path} line {number} {what}.") from None
        bad = bad_id(task.id)
        if bad is not None:
            raise UsageError(f"{path} line {number} has the id {task.id!r}, which {bad}.")
        # Case-folded: on macOS and Windows ``A`` and ``a`` are one folder.
        key = task.slug.casefold()
        if key in seen:
            first, other = seen[key]
            what = "repeats the id" if other == task.id else "has the id"
            raise UsageError(
                f"{path} line {number} {what} {task.id!r}, which names the same workspace, "
                f"log and transcript as the id {other!r} on line {first}; ids must differ "
                "in their letters, digits, '.', '-' or '_'."
            )
        seen[key] = (number, task.id)
        tasks.append(task)
    if not tasks:
        raise UsageError(f"task file {path} holds no tasks.")
    return tasks


def bad_id(task_id: str) -> str | None:
    """Why ``task_id`` cannot name a task's files (it names folders that are deleted
    and remade), or None when it can."""
    if not task_id.strip():
        return "is empty; give every task an id"
    if task_id.strip() in (".", ".."):
        return "names a folder above the task's own; use letters, digits, '.', '-' or '_'"
    if "/" in task_id or "\\" in task_id:
        return "holds a path separator; use letters, digits, '.', '-' or '_'"
    if any(unicodedata.category(c) == "Cc" for c in task_id):
        return "holds a control character; use letters, digits, '.', '-' or '_'"
    return None


def _missing(exc: ValidationError) -> str:
    fields = sorted({str(e["loc"][0]) for e in exc.errors() if e["loc"]})
    names = {"id": "id or instance_id", "task": "problem_statement or task", "repo": "repo"}
    listed = ", ".join(names.get(f, f) for f in fields) or "its fields"
    return f"lacks or has a bad {listed}"
