"""Inside Docker and bubblewrap the project's control files and the scripts a
trusted setting names are read-only, like ``.git``; the rest of the workspace
stays writable.

Each path is attacked the ways a command could: overwrite, append, remove,
rename away and replace, and (for the folders) a new file inside.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.integration.sandbox_fixtures import KINDS, Space, assert_alive, open_sandbox

pytestmark = pytest.mark.integration

FILES = {
    ".clover/config.toml": "approval = 'ask'\n",
    ".clover/hooks/check.sh": "echo check\n",
    ".mcp.json": "{}\n",
    ".agents/skills/s/SKILL.md": "skill\n",
    ".devcontainer/Dockerfile": "FROM scratch\n",
    ".claude/settings.json": "{}\n",
    "tools/policy.py": "print('policy')\n",  # named by a trusted setting
}
ATTACKS = [
    "printf pwned > {path}",
    "printf pwned >> {path}",
    "rm -f {path}",
    "mv {path} {path}.old && printf pwned > {path}",
    "python3 -c \"open('{path}', 'w').write('pwned')\"",
]
FOLDERS = [".clover", ".clover/hooks", ".agents", ".devcontainer", ".claude"]


def own(space: Space, path: Path) -> None:
    if os.getuid() == 0:
        os.chown(path, space.uid, space.gid)


@pytest.mark.parametrize("kind", KINDS)
async def test_control_files_and_named_scripts_are_read_only(
    kind: str, space: Space, request: pytest.FixtureRequest
) -> None:
    for rel, text in FILES.items():
        path = space.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (space.root / "free.txt").write_text("free\n")
    for path in [*space.root.rglob("*"), space.root]:
        own(space, path)
    box = open_sandbox(kind, space.root, request, protect=("tools/policy.py",))
    try:
        for rel in FILES:
            for attack in ATTACKS:
                await box.exec(f"cd {space.root} && {attack.format(path=rel)}", timeout=30)
                assert (space.root / rel).read_text() == FILES[rel], (rel, attack)
        for folder in FOLDERS:
            await box.exec(f"cd {space.root} && printf x > {folder}/new.toml", timeout=30)
            assert not (space.root / folder / "new.toml").exists(), folder
        result = await box.exec(f"cd {space.root} && printf ok > free.txt", timeout=30)
        assert result.exit_code == 0, result.output
        assert (space.root / "free.txt").read_text() == "ok"
        await assert_alive(box)
    finally:
        await box.close()
