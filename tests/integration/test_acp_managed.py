"""``clover-code acp`` under managed settings: the editor is offered only the approval
modes the administrator allows, and a switch above them is refused and changes nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from acp import RequestError, spawn_agent_process

from tests.integration.sse_server import ScriptedServer
from tests.integration.test_acp import EDITOR_CAPS, EDITOR_INFO
from tests.integration.test_acp_harness import EditorClient, agent_env

pytestmark = pytest.mark.integration


async def test_the_editor_cannot_switch_above_the_administrators_ceiling(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    managed = tmp_path / "managed.toml"
    managed.write_text('[limits]\nmax_approval = "auto-edit"\n')
    env = {**agent_env(tmp_path), "CLOVER_MANAGED_SETTINGS": str(managed)}
    args = ("--base-url", scripted_server.base_url, "--sandbox", "none")
    client = EditorClient(permission_answers=[])
    async with spawn_agent_process(
        client, sys.executable, "-m", "clover_code.acp", *args, env=env, cwd=repo
    ) as (conn, _proc):
        await conn.initialize(
            protocol_version=1, client_capabilities=EDITOR_CAPS, client_info=EDITOR_INFO
        )
        new = await conn.new_session(cwd=str(repo), mcp_servers=[])
        assert new.modes is not None
        offered = [m.id for m in new.modes.available_modes]
        assert offered == ["read-only", "plan", "ask", "auto-edit"]
        with pytest.raises(RequestError) as refused:
            await conn.set_session_mode(session_id=new.session_id, mode_id="full-auto")
        assert refused.value.args[0] == (
            'approval mode full-auto is refused because max_approval = "auto-edit" is set by '
            f"your administrator in {managed}; it stays ask."
        )
        await conn.set_session_mode(session_id=new.session_id, mode_id="auto-edit")
