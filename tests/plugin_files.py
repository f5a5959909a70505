"""Plugins for tests: a real folder with every kind of part, and ways to ship it.

``make_plugin`` writes a ``plugin.toml`` naming a command, a skill, an agent
definition, a PreToolUse hook (a script that refuses shell commands naming
``forbidden``), an MCP server (the echo server the MCP tests use) and a
status-line command. ``git_repository`` commits a folder to a repository
reachable as a ``file://`` URL; ``build_wheel`` writes a real wheel of a
package whose ``clover_code.plugins`` entry point names it (by hand: the
build backends this machine has differ between environments).
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
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
    """A real wheel (the zip layout pip installs, with its RECORD of hashes) of the
    package ``lint_kit_plugin``, whose ``clover_code.plugins`` entry point names the
    package's folder, which holds the plugin; returns the wheel's path."""
    package = make_plugin(where / "src", "lint_kit_plugin", mcp=False)
    toml = (package / "plugin.toml").read_text()
    (package / "plugin.toml").write_text(toml.replace('"lint_kit_plugin"', f'"{name}"', 1))
    (package / "__init__.py").write_text("")
    info = "lint_kit_plugin-1.2.0.dist-info"
    files: dict[str, tuple[bytes, int]] = {
        path.relative_to(package.parent).as_posix(): (path.read_bytes(), path.stat().st_mode)
        for path in sorted(package.rglob("*"))
        if path.is_file()
    }
    files[f"{info}/METADATA"] = (
        b"Metadata-Version: 2.1\nName: lint-kit-plugin\nVersion: 1.2.0\n",
        0o644,
    )
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        0o644,
    )
    entry = f"[clover_code.plugins]\n{name} = lint_kit_plugin\n"
    files[f"{info}/entry_points.txt"] = (entry.encode(), 0o644)
    record = [
        f"{path},sha256={_urlsafe_digest(data)},{len(data)}" for path, (data, _) in files.items()
    ]
    files[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]).encode() + b"\n", 0o644)
    wheel = where / "lint_kit_plugin-1.2.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, (data, mode) in files.items():
            entry_info = zipfile.ZipInfo(path)
            entry_info.external_attr = (mode & 0o777 | 0o100000) << 16
            archive.writestr(entry_info, data)
    return wheel


def _urlsafe_digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
