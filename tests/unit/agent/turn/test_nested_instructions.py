"""Nested AGENTS.md: added once when the agent works under a sub-directory, kept
through compaction; the user's own AGENTS.md applies to every repository."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from clover_code import protocol as p
from clover_code.agent.session import Session
from clover_code.agent.turn.nested import NestedInstructions, touched_paths
from clover_code.config.settings import Settings
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.unit.agent.turn.test_agent_loop import of_type, open_session
from tests.unit.agent.turn.test_context import SMALL, big_reads


def layout(repo: Path) -> None:
    (repo / "AGENTS.md").write_text("ROOT-RULE\n")
    (repo / "pkg" / "sub").mkdir(parents=True)
    (repo / "pkg" / "AGENTS.md").write_text("PKG-RULE: use tabs\n")
    (repo / "pkg" / "sub" / "AGENTS.md").write_text("SUB-RULE: no prints\n")
    (repo / "pkg" / "sub" / "mod.py").write_text("x = 1\n")
    (repo / "pkg" / "other.py").write_text("y = 2\n")
    (repo / "elsewhere").mkdir()
    (repo / "elsewhere" / "AGENTS.md").write_text("ELSEWHERE-RULE\n")


def test_each_file_between_root_and_target_once(tmp_path: Path) -> None:
    layout(tmp_path)
    nested = NestedInstructions(tmp_path)
    found = nested.discover(["pkg/sub/mod.py"])
    assert [rel for rel, _ in found] == ["pkg/AGENTS.md", "pkg/sub/AGENTS.md"]
    assert nested.discover(["pkg/other.py", "pkg/sub/mod.py"]) == []
    assert nested.discover(["AGENTS.md", "../outside.py", "/etc/passwd"]) == []
    assert nested.discover(["pkg/" + "n" * 300 + "/x.py", "pkg/\x00"]) == []
    os.symlink(tmp_path / "elsewhere", tmp_path / "pkg" / "link")
    # judged by where the link leads
    assert [rel for rel, _ in nested.discover(["pkg/link/x.py"])] == ["elsewhere/AGENTS.md"]


def test_patch_paths_are_found() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: a/b.py\n*** Move to: c/d.py\n@@\n-x\n+y\n*** End Patch"
    )
    assert touched_paths("apply_patch", {"patch": patch}) == ["a/b.py", "c/d.py"]
    diff = "--- a/e/f.py\n+++ b/e/f.py\n@@ -1 +1 @@\n-x\n+y\n"
    assert touched_paths("apply_patch", {"patch": diff}) == ["e/f.py"]
    assert touched_paths("shell", {"command": "cat pkg/x"}) == []


async def test_added_once_and_kept_through_compaction(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    layout(repo)
    (repo / "big.py").write_text("".join(f"value_{i} = {i}  # filler line\n" for i in range(120)))
    events: list[p.Event] = []
    script = [
        tool_response(("read_file", {"path": "pkg/sub/mod.py"})),
        tool_response(("read_file", {"path": "pkg/sub/mod.py"})),
        *big_reads(10),
        text_response("Done."),
    ]
    backend = ScriptedBackend(script, summary="## Goal\nread")
    session = await open_session(make_settings(**SMALL), backend, repo, events)
    finished = await session.run_turn("read things")
    await session.close()
    assert finished.status == "completed", of_type(events, p.ErrorEvent)
    second = backend.requests[1].messages
    assert "PKG-RULE: use tabs" in second[-1]["content"] and "SUB-RULE" in second[-1]["content"]
    third = backend.requests[2].messages
    assert "SUB-RULE" not in third[-1]["content"]  # once
    assert of_type(events, p.Compacted)
    last = backend.requests[-1].messages
    text = "\n".join(str(m.get("content")) for m in last[1:])
    assert text.count("SUB-RULE: no prints") == 1 and "PKG-RULE" in text
    assert "ELSEWHERE-RULE" not in text
    notes = [e.text for e in of_type(events, p.Notice) if "instructions of" in e.text]
    assert notes == ["added the instructions of pkg/AGENTS.md, pkg/sub/AGENTS.md."]


async def test_user_agents_md_applies_everywhere(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "clover-code"
    config.mkdir(parents=True)
    (config / "AGENTS.md").write_text("USER-RULE: answer in French\n")
    backend = ScriptedBackend([text_response("Bonjour.")])
    session: Session = await open_session(make_settings(), backend, repo, [])
    await session.run_turn("hi")
    await session.close()
    assert "USER-RULE: answer in French" in backend.requests[0].messages[0]["content"]
