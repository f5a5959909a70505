"""Fakes for the UI tests: scripted denoising, and an app wired to a real Session.

The session, agent loop, tools and transcript are the real ones; only the
model is scripted (``tests.fakes.ScriptedBackend``), so what the app shows is
what the core really emits.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from clover_code import protocol as p
from clover_code.agent.open import SessionOptions, open_session
from clover_code.config.load import load_settings
from clover_code.config.settings import Settings
from clover_code.engine import events as ev
from clover_code.ui.app import CloverApp
from clover_code.ui.bridge import Emit, SessionLike
from clover_code.ui.host import Reviewer
from clover_code.ui.options import AppOptions
from tests.fakes import ScriptedBackend


def draft_steps(block: int, tokens: list[str], steps: int) -> list[ev.BlockDraft]:
    """``steps`` denoising drafts of one block, each unmasking more positions."""
    drafts = []
    size = len(tokens)
    for step in range(1, steps + 1):
        filled = size * step // (steps + 1)
        order = sorted(range(size), key=lambda i: (i * 7919) % size)[:filled]
        masked = [i not in order for i in range(size)]
        confidences = [0.99 if not m else 0.0 for m in masked]
        if filled:
            confidences[order[-1]] = 0.85
        drafts.append(
            ev.BlockDraft(
                block,
                step,
                [t if not m else "" for t, m in zip(tokens, masked, strict=True)],
                masked,
                confidences,
            )
        )
    return drafts


def denoised_response(
    text: str, *, steps: int = 4, block_tokens: int = 8, pause: float = 0.0
) -> list[Any]:
    """A text answer in blocks, each preceded by its denoising drafts (``pause`` s apart)."""
    tokens = [w + " " for w in text.split(" ")]
    events: list[Any] = []
    for block, start in enumerate(range(0, len(tokens), block_tokens)):
        piece = tokens[start : start + block_tokens]
        for draft in draft_steps(block, piece, steps):
            events += [draft, pause] if pause else [draft]
        joined = "".join(piece)
        events += [ev.ContentDelta(joined), ev.BlockCommitted(block, joined, len(piece), steps)]
    events += [ev.Usage(200, len(tokens)), ev.Finished("stop")]
    return events


def make_repo(root: Path) -> Path:
    """A git repository with one committed file, ``calc.py``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "README.md").write_text("# calc\n")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
        cwd=root,
        check=True,
    )
    return root


def ui_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """Settings isolated from the user's config (host shell, sessions under tmp)."""
    values = {"sessions_dir": tmp_path / "sessions", "sandbox": "none", **overrides}
    return load_settings(values, user_config=tmp_path / "no-user-config.toml", env={})


def scripted_app(
    backend: ScriptedBackend,
    repo: Path,
    settings: Settings,
    *,
    approval: str = "ask",
    show_denoising: bool = True,
    reviewer: Reviewer | None = None,
    options: AppOptions | None = None,
) -> CloverApp:
    """The real app around a real Session whose model is ``backend`` (``reviewer``:
    what runs ``/review``; ``options``: the app's own settings)."""

    async def factory(emit: Emit, resume: Path | None) -> SessionLike:
        return await open_session(
            settings,
            repo,
            SessionOptions(
                emit=emit,
                approval_mode=approval,  # type: ignore[arg-type]
                resume=resume,
                backend=backend,
            ),
        )

    return CloverApp(
        factory,
        cwd=repo,
        sessions_dir=settings.resolved_sessions_dir(),
        show_denoising=show_denoising,
        git_status=True,
        reviewer=reviewer,
        options=options,
    )


class ReplaySession:
    """A stand-in session that emits fixed protocol events (for pixel-stable snapshots).

    ``on_open`` goes out when the session opens; each ``UserInput`` emits the
    next list of ``turns``. Every op received is kept in ``ops``.
    """

    id = "20260101-000000-abcdef"

    def __init__(self, emit: Emit, on_open: list[Any], turns: list[list[Any]]) -> None:
        self.emit = emit
        self.turns = list(turns)
        self.ops: list[Any] = []
        self.commands: list[Any] = []
        self.skills: list[Any] = []
        self.model_options: list[p.ModelOption] = []
        """What ``models()`` lists (the ``/model`` picker)."""
        for event in on_open:
            emit(event)

    async def submit(self, op: Any) -> None:
        self.ops.append(op)
        if getattr(op, "type", "") == "user_input" and self.turns:
            for event in self.turns.pop(0):
                self.emit(event)

    async def close(self) -> None:
        return None

    def skills_on_disk(self) -> list[Any]:
        return self.skills

    async def models(self) -> tuple[list[p.ModelOption], str | None]:
        return self.model_options, None


def replay_app(
    on_open: list[Any],
    turns: list[list[Any]] | None = None,
    *,
    cwd: Path = Path("/work/demo"),
    approval_modes: tuple[p.ApprovalMode, ...] = p.APPROVAL_MODES,
    options: AppOptions | None = None,
) -> CloverApp:
    """An app whose session replays events; ``app.replay`` is the session once open
    (``approval_modes``: those an administrator allows; ``options``: the app's own
    settings)."""

    async def factory(emit: Emit, resume: Path | None) -> SessionLike:
        session = ReplaySession(emit, on_open, turns or [])
        app.replay = session  # type: ignore[attr-defined]
        return session

    app = CloverApp(
        factory,
        cwd=cwd,
        sessions_dir=None,
        git_status=False,
        approval_modes=approval_modes,
        options=options,
    )
    return app


def long_markdown(chars: int) -> str:
    """Deterministic Markdown with headings, lists, code and paragraphs, about ``chars`` long."""
    parts: list[str] = []
    n = 0
    while sum(len(p) for p in parts) < chars:
        n += 1
        parts.append(f"## Part {n}\n\n")
        parts.append(f"Paragraph {n} explains the `change` and **why** it matters " * 3 + "\n\n")
        parts.append("".join(f"- item {n}.{i} with some words\n" for i in range(3)) + "\n")
        parts.append(f"```python\ndef f{n}(x):\n\n    return x + {n}\n```\n\n")
        parts.append(f"1. first step {n}\n2. second step\n\n")
    return "".join(parts)
