"""Asking again when a trusted script changed during a session.

At session start the bytes of every trusted workspace script are kept
(``ScriptRetrust.snapshot``). When a hook's check finds one changed
(``host_programs.Refused.changed``), a front end that can ask (the app) is
shown the change as a diff through the ordinary approval path (an
``ApprovalRequested`` with ``diff``); trusting it updates the session's
trusted digests and, on disk, the trust record of every project file that
names the script (its fingerprint includes the script's bytes). The new
content is checked again before it runs, so bytes changed after the diff was
shown still do not run. Front ends that cannot ask (headless, ACP) get no
``ScriptRetrust`` and keep refusing.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from clover_code.agent.extensions.host_programs import HostPrograms
from clover_code.agent.permissions.approval import ApprovalRequest, Approver
from clover_code.config import trust
from clover_code.errors import ConfigError
from clover_code.fs.named_files import fingerprint

__all__ = ["ScriptRetrust", "snapshot_bytes"]

MAX_DIFF_BYTES = 200_000
"""Larger scripts are shown as a sentence, not a diff."""


def snapshot_bytes(root: Path, scripts: Mapping[str, str]) -> dict[str, bytes]:
    """The bytes of each trusted script now, where they still match the trusted digest."""
    kept: dict[str, bytes] = {}
    for rel, sha in scripts.items():
        try:
            data = (root / rel).read_bytes()
        except OSError:
            continue
        if trust.digest(data) == sha:
            kept[rel] = data
    return kept


def script_diff(rel: str, before: bytes | None, after: bytes) -> str:
    """A unified diff of ``rel`` from the trusted bytes to the bytes now."""
    if before is None:
        return f"(the content {rel} had when you trusted it is not known this session)\n"
    if len(before) > MAX_DIFF_BYTES or len(after) > MAX_DIFF_BYTES:
        return f"({rel} is too large to show as a diff; review it in an editor)\n"
    old = before.decode("utf-8", errors="replace").splitlines(keepends=True)
    new = after.decode("utf-8", errors="replace").splitlines(keepends=True)
    lines = difflib.unified_diff(old, new, f"a/{rel} (trusted)", f"b/{rel} (now)")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass(slots=True)
class ScriptRetrust:
    """Asks the user about a changed trusted script, and records the answer."""

    root: Path
    report: trust.TrustReport
    store: trust.TrustStore
    approver: Approver
    programs: HostPrograms
    snapshot: dict[str, bytes]

    async def ask(self, rel: str) -> bool:
        """Whether the user trusts the content ``rel`` has now (then it is recorded)."""
        try:
            now = (self.root / rel).read_bytes()
        except OSError:
            return False
        answer = await self.approver.request(
            ApprovalRequest(
                call_id=f"hook-script:{rel}",
                name="hook_script",
                kind="execute",
                summary=(
                    f"{rel} changed since you trusted this project; trust its new content "
                    "and run it?"
                ),
                arguments={"path": rel},
                prefix=None,
                diff=script_diff(rel, self.snapshot.get(rel), now),
            )
        )
        if not answer.allowed:
            return False
        sha = trust.digest(now)  # the bytes shown are the bytes trusted
        try:
            self._record(rel, sha)
        except ConfigError:
            return False
        self.programs.trusted[rel] = sha
        self.snapshot[rel] = now
        return True

    def _record(self, rel: str, sha: str) -> None:
        """The trust record of each trusted file naming ``rel``, with its new digest."""
        updated: list[trust.ProjectFile] = []
        for f in self.report.files:
            scripts = dict(f.scripts)
            if not f.trusted or rel not in scripts:
                continue
            try:
                raw = f.path.read_bytes()
            except OSError:
                continue
            if not f.same_content(trust.digest(raw)):
                continue  # the file itself changed: its own trust question applies
            scripts[rel] = sha
            content = trust.digest(raw + b"\0scripts\0" + fingerprint(scripts))
            updated.append(replace(f, digest=content, scripts=tuple(sorted(scripts.items()))))
        if updated:
            self.store.trust(self.root, updated)
