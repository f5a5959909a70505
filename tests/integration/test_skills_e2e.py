"""Skills end to end: real skill folders, the real `clover-code` command, a scripted model.

A project skill (with a script) and a user skill (with a reference file, in
the user config dir outside the workspace): the system prompt lists names and
descriptions only, the skill tool loads a body, read_file reads the loaded
user skill's file and nothing else outside the workspace, the project skill's
script runs through the shell tool, and a malformed SKILL.md is skipped with
a note naming it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.agent.extensions.skills import load_skills, skills_listing
from clover_code.outcome.result import TaskResult, parse_stream_line
from tests.integration.sse_server import ScriptedServer
from tests.integration.test_headless_e2e import run_clover, sglang

pytestmark = pytest.mark.integration


def skill(folder: Path, front: str, body: str) -> None:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\n{front}\n---\n{body}")


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    deploy = repo / ".clover" / "skills" / "deploy"
    skill(deploy, "name: deploy\ndescription: Ship the service to staging.", "DEPLOY-BODY\n")
    (deploy / "run.py").write_text("print('DEPLOYED-' + 'OK')\n")
    skill(repo / ".agents" / "skills" / "broken", "name: [unclosed", "body\n")
    skill(repo / ".agents" / "skills" / "nodesc", "name: nodesc", "body\n")
    home = tmp_path / "home"
    config = home / "config" / "clover-code"
    style = config / "skills" / "style"
    skill(style, "name: style\ndescription: House style for Python code.", "STYLE-BODY\n")
    (style / "reference.md").write_text("STYLE-REFERENCE: four spaces\n")
    (config / "secret.txt").write_text("TOP-SECRET\n")
    return repo, home


def test_load_and_list(setup: tuple[Path, Path]) -> None:
    repo, home = setup
    skills, notes = load_skills(repo, home / "config" / "clover-code")
    assert [(s.name, s.source) for s in skills] == [("deploy", "project"), ("style", "user")]
    assert len(notes) == 2
    assert any("broken/SKILL.md" in n and "not valid YAML" in n for n in notes)
    assert any("nodesc/SKILL.md" in n and "no description" in n for n in notes)
    assert "style (user," in skills_listing(skills)


async def test_skills_are_listed_loaded_read_and_run(
    scripted_server: ScriptedServer, setup: tuple[Path, Path], headless_argv: tuple[str, ...]
) -> None:
    repo, home = setup
    config = (home / "config" / "clover-code").resolve()
    reference = str(config / "skills" / "style" / "reference.md")
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("read_file", {"path": reference})),
        sglang(lambda s: s.tool_call("skill", {"name": "style"})),
        sglang(lambda s: s.tool_call("read_file", {"path": reference})),
        sglang(lambda s: s.tool_call("read_file", {"path": str(config / "secret.txt")})),
        sglang(lambda s: s.tool_call("skill", {"name": "deploy"})),
        sglang(
            lambda s: s.tool_call(
                "shell", {"command": f"{sys.executable} .clover/skills/deploy/run.py"}
            )
        ),
        sglang(lambda s: s.content("Deployed.")),
    )
    code, out, err = await run_clover(
        repo,
        "--task",
        "deploy it",
        *headless_argv,
        "--output-format",
        "stream-json",
        home=home,
    )
    assert code == 0, err
    *events, result = [parse_stream_line(line) for line in out.splitlines()]
    assert isinstance(result, TaskResult) and result.status == "success"
    system = scripted_server.chat_requests[0].json()["messages"][0]["content"]
    assert "- deploy: Ship the service to staging." in system
    assert "- style: House style for Python code." in system
    assert "DEPLOY-BODY" not in system and "STYLE-BODY" not in system
    finished = [e for e in events if isinstance(e, p.ToolCallFinished)]
    # a user skill's files are readable only once that skill is loaded
    assert finished[0].status == "error" and "outside the workspace" in finished[0].result
    assert "STYLE-BODY" in finished[1].result and reference in finished[1].result
    assert finished[2].status == "ok" and "STYLE-REFERENCE" in finished[2].result
    assert finished[3].status == "error" and "TOP-SECRET" not in finished[3].result
    assert "DEPLOY-BODY" in finished[4].result
    assert ".clover/skills/deploy/run.py" in finished[4].result
    assert finished[5].status == "ok" and "DEPLOYED-OK" in finished[5].result
    notes = [e.text for e in events if isinstance(e, p.Notice) and "skill file" in e.text]
    assert len(notes) == 2 and any("broken/SKILL.md" in n for n in notes)
