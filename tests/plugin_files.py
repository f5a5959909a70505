"""Plugins for tests: a real folder with every kind of part, and ways to ship it.

``make_plugin`` writes a ``plugin.toml`` naming a command, a skill, an agent
definition, a PreToolUse hook (a script that refuses shell commands naming
``forbidden``), an MCP server (the echo server the MCP tests use) and a
status-line command. ``git_repository`` commits a folder to a repository
reachable as a ``file://`` URL; ``build_wheel`` builds a real wheel of a
package whose ``clover_code.plugins`` entry point names it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ECHO_SERVER = Path(__file__).parent / "integration" / "mcp_echo_server.py"

HOOK = """\
#!{python}
import json, sys
call = json.load(sys.stdin)
if "forbidden" in json.dumps(call.get("tool_input", {{}})):
    print("the lint-kit hook refuses forbidden commands", file=sys.stderr)
    sys.exit(2)
"""


def make_plugin(
    where: Path,
    name: str = "lint-kit",
    *,
    mcp: bool = True,
    statusline: bool = True,
    hooks: bool = True,
) -> Path:
    """A plugin folder ``where/name`` bundling one of each part; returns the folder."""
    folder = where / name
    (folder / "commands").mkdir(parents=True)
    (folder / "commands" / "fix.md").write_text(
        "---\ndescription: Fix the lint errors\n---\nFix the lint errors in $ARGUMENTS.\n"
    )
    (folder / "skills" / "style").mkdir(parents=True)
    (folder / "skills" / "style" / "SKILL.md").write_text(
        "---\nname: style\ndescription: The house style for Python\n---\n"
        "Use four spaces and type hints.\n"
    )
    (folder / "agents").mkdir()
    (folder / "agents" / "linter.md").write_text(
        "---\nname: linter\ndescription: Reads code and lists lint errors\n"
        "tools: read_file, grep\n---\nYou find lint errors.\n"
    )
    (folder / "bin").mkdir()
    hook = folder / "bin" / "check"
    hook.write_text(HOOK.format(python=sys.executable))
    hook.chmod(0o755)
    status = folder / "bin" / "status"
    status.write_text("#!/bin/sh\necho lint-kit ok\n")
    status.chmod(0o755)
    manifest = [
        f'name = "{name}"',
        'version = "1.2.0"',
        'description = "Lint commands, a style skill and a command check"',
        'commands = "commands"',
        'skills = "skills"',
        'agents = "agents"',
    ]
    if statusline:
        manifest.append('statusline_command = "${CLOVER_PLUGIN_ROOT}/bin/status"')
    if hooks:
        manifest += ["", "[[hooks.PreToolUse]]", 'matcher = "shell"', 'command = "./bin/check"']
    if mcp:
        manifest += [
            "",
            "[mcp_servers.echo]",
            f'command = "{sys.executable}"',
            f'args = ["{ECHO_SERVER}"]',
        ]
    (folder / "plugin.toml").write_text("\n".join(manifest) + "\n")
    return folder


def _git(*args: str, cwd: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def git_repository(folder: Path) -> str:
    """Commit ``folder`` as a git repository; its ``file://`` URL."""
    _git("init", "-q", cwd=folder)
    _git("add", "-A", cwd=folder)
    _git("commit", "-q", "-m", "plugin", cwd=folder)
    return folder.as_uri()


def build_wheel(where: Path, name: str = "lint-kit") -> Path:
    """A real wheel of the package ``lint_kit_plugin``, whose entry point names the
    package folder holding the plugin; returns the wheel's path."""
    project = where / "lint-kit-package"
    package = project / "src" / "lint_kit_plugin"
    package.parent.mkdir(parents=True)
    plugin = make_plugin(package.parent, "lint_kit_plugin", mcp=False)
    toml = (
        (plugin / "plugin.toml").read_text().replace('name = "lint_kit_plugin"', f'name = "{name}"')
    )
    (plugin / "plugin.toml").write_text(toml)
    (package / "__init__.py").write_text("")
    (project / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [build-system]
            requires = ["setuptools>=68"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "lint-kit-plugin"
            version = "1.2.0"

            [project.entry-points."clover_code.plugins"]
            lint-kit = "lint_kit_plugin"

            [tool.setuptools.package-data]
            lint_kit_plugin = ["plugin.toml", "commands/*", "skills/*/*", "agents/*", "bin/*"]
            """
        )
    )
    dist = where / "dist"
    subprocess.run(
        [
            sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
            "--no-index", "-w", str(dist), str(project),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (wheel,) = dist.glob("*.whl")
    return wheel
