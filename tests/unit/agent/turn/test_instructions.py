from __future__ import annotations

from pathlib import Path

from clover_code.agent.turn.instructions import system_prompt


def test_repo_instructions_are_in_the_system_prompt(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Always run `make check` before finishing.\n")
    (tmp_path / "CLOVER.md").write_text("Use tabs in Makefiles.\n")
    prompt = system_prompt(tmp_path, is_git=True, shell="docker", tools=["read_file", "shell"])
    assert "You are clover-code" in prompt
    assert "Instructions from AGENTS.md" in prompt and "make check" in prompt
    assert "Instructions from CLOVER.md" in prompt and "tabs in Makefiles" in prompt
    assert "Shell commands run in: docker" in prompt


def test_without_shell_the_prompt_says_so(tmp_path: Path) -> None:
    prompt = system_prompt(tmp_path, is_git=False, shell=None, tools=["read_file"])
    assert "No shell" in prompt and "Git repository: no" in prompt
    assert "Instructions from" not in prompt
