"""The session transcript: its bytes per conversation byte, its fsyncs per step, and
the time to resume a 1 MB session, against the transcript writer at an earlier commit.

    python bench/transcript.py [--baseline 60658a1] [--rounds 7] [--repeats 5] [--cache-dir DIR]

The peer is clover-code at ``--baseline`` (default 60658a1, the last commit
with the format-1 writer: every record fsync'd, each tool output in both its
event and its message), its files taken with ``git archive``. Each tree runs
``bench/transcript_session.py`` in a process of its own (``PYTHONPATH`` set to
that tree): the same scripted session through the session factory (a fake
model whose answers are fixed, so the figures measure the transcript, not a
model): 5 turns of 12 steps (8 file reads of about 22 KB, a command whose
long output is cut for the model, a new file, an edit, an answer), about
1 MB of conversation. Reported:

- bytes: the transcript's size over the conversation's (the messages as JSON);
- fsyncs per step: the transcript's fsyncs during the turns over the model
  requests, and the seconds they took;
- resume: the CPU time to reopen each tree's own transcript of that session
  as the factory does (lock, read, load), median over ``--rounds`` rounds of
  ``--repeats`` reopenings each, the trees alternating; and, for information,
  this tree reopening the baseline's (format 1) transcript.

Targets: bytes per conversation byte <= 0.6x the peer's; fsyncs per step
<= 0.4x the peer's, and no more than one per step plus one per step whose
calls may change something plus one per turn; resume CPU <= 0.8x the peer's.
Exit status 0 when every target is met, 1 on a miss (``bench/targets.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.targets import Targets, machine_load  # noqa: E402

SESSION = ROOT / "bench" / "transcript_session.py"


def _baseline_tree(cache: Path, commit: str) -> Path:
    """The files of ``commit`` (``git archive``: the repository is left as it is)."""
    tree = cache / f"tree-{commit}"
    if not (tree / "pyproject.toml").exists():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", commit],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def _python() -> str:
    """The interpreter without this tree's editable install (which would win over
    ``PYTHONPATH``): the one the virtualenv was made from."""
    return str(getattr(sys, "_base_executable", sys.executable))


def _run(tree: Path, *args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env["PYTHONPATH"] = str(tree)
    done = subprocess.run(
        [_python(), str(SESSION), *args], cwd=tree, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"bench/transcript_session.py {args[0]} failed in {tree}:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    if Path(result["tree"]).resolve() != tree.resolve():
        raise SystemExit(f"{tree} ran clover-code from {result['tree']}; check PYTHONPATH.")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="60658a1")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "clover-bench"
    )
    args = parser.parse_args()
    trees = {
        "this tree": ROOT,
        f"clover-code {args.baseline}": _baseline_tree(args.cache_dir, args.baseline),
    }
    print(machine_load(), flush=True)
    written: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="clover-transcript-bench-") as scratch:
        for name, tree in trees.items():
            written[name] = _run(tree, "write", str(Path(scratch) / name.replace(" ", "-")))
        cpu: dict[str, list[float]] = {name: [] for name in trees}
        old_file: list[float] = []
        peer_file = written[f"clover-code {args.baseline}"]["transcript"]
        for _ in range(args.rounds):
            for name, tree in trees.items():
                work = Path(scratch) / name.replace(" ", "-")
                timed = _run(
                    tree, "resume", written[name]["transcript"], str(work), str(args.repeats)
                )
                cpu[name].append(statistics.median(timed["cpu"]))
            work = Path(scratch) / "old-file"
            work.mkdir(exist_ok=True)
            timed = _run(ROOT, "resume", peer_file, str(work), str(args.repeats), "--copy")
            old_file.append(statistics.median(timed["cpu"]))
    ours, peer = (written[name] for name in trees)
    print("the same scripted session (5 turns, 60 steps), each tree's transcript of it")
    print(
        f"{'':28}{'transcript KB':>14}{'conv. KB':>10}{'per conv. B':>12}"
        f"{'fsyncs':>8}{'per step':>9}{'fsync ms/step':>14}{'resume CPU ms':>14}"
    )
    rows = {}
    for name in trees:
        w = written[name]
        per_byte = w["transcript_bytes"] / w["conversation_bytes"]
        per_step = w["fsyncs"] / w["steps"]
        resume = statistics.median(cpu[name]) * 1000
        rows[name] = (per_byte, per_step, resume)
        print(
            f"  {name:26}{w['transcript_bytes'] / 1024:>14.0f}"
            f"{w['conversation_bytes'] / 1024:>10.0f}"
            f"{per_byte:>12.2f}{w['fsyncs']:>8}{per_step:>9.2f}"
            f"{w['fsync_seconds'] * 1000 / w['steps']:>14.1f}{resume:>14.1f}"
        )
    print(
        f"  this tree reopening the baseline's (format 1) transcript: "
        f"{statistics.median(old_file) * 1000:.1f} ms CPU"
    )
    (our_bytes, our_syncs, our_resume), (peer_bytes, peer_syncs, peer_resume) = rows.values()
    targets = Targets()
    ratio = our_bytes / peer_bytes
    targets.check(
        "transcript bytes per conversation byte <= 0.6x the baseline's",
        met=ratio <= 0.6,
        figure=f"{ratio:.2f}x: {our_bytes:.2f} vs {peer_bytes:.2f}",
    )
    ratio = our_syncs / peer_syncs
    targets.check(
        "fsyncs per step <= 0.4x the baseline's",
        met=ratio <= 0.4,
        figure=f"{ratio:.2f}x: {our_syncs:.2f} vs {peer_syncs:.2f}",
    )
    allowed = ours["steps"] + ours["changing_steps"] + ours["turns"]
    targets.check(
        "fsyncs <= one a step, one a step with a change, one a turn",
        met=ours["fsyncs"] <= allowed,
        figure=f"{ours['fsyncs']} for {ours['steps']} steps, {ours['changing_steps']} with a "
        f"change, {ours['turns']} turns (<= {allowed}); baseline {peer['fsyncs']}",
    )
    ratio = our_resume / peer_resume
    targets.check(
        f"resume of the session ({ours['conversation_bytes'] / 2**20:.1f} MB of conversation; "
        f"transcripts {ours['transcript_bytes'] / 2**20:.1f} MB and "
        f"{peer['transcript_bytes'] / 2**20:.1f} MB) CPU <= 0.8x the baseline's",
        met=ratio <= 0.8,
        figure=f"{ratio:.2f}x: {our_resume:.1f} ms vs {peer_resume:.1f} ms, "
        f"medians of {args.rounds} rounds",
    )
    return targets.exit_status()


if __name__ == "__main__":
    sys.exit(main())
