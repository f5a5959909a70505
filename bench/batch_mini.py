"""The batch bench's peer: mini-swe-agent's SWE-bench batch runner (``mini-extra swebench``).

It is installed into its own virtualenv in the bench's cache dir (first run
only), never into the environment clover-code runs in. Its runner loads
instances with Hugging Face ``datasets.load_dataset(--subset, split=--split)``,
which takes a local folder as well as a hub name: the bench writes the tasks
as ``DIR/test.jsonl`` in SWE-bench's instance format and passes ``--subset DIR
--split test``. Each instance names its Docker image (``image_name``, which the
runner prefers to the SWE-bench hub image), so the docker environment runs on
clover-code's own sandbox image; the repository gets into the container the way
SWE-bench images have it, at ``/testbed``, cloned there by the config's
``run.env_startup_command`` from a read-only mount of the task repositories.
With ``--sandbox none`` it uses its ``local`` environment and the startup
command clones on the host instead.

Everything else is its stock ``swebench.yaml`` (tool calls, one ``bash``
tool), with the model pointed at the scripted server through litellm's
OpenAI-compatible provider and cost tracking off (the scripted model has no
price).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from bench.batch_tasks import FIXED, Task

PACKAGE = "mini-swe-agent>=2,<3"


def mini_python(cache_dir: Path) -> tuple[Path | None, str]:
    """The venv's ``mini-extra``, installing it on first use; (None, why) if that failed."""
    venv = cache_dir / "mini-venv"
    script = venv / "bin" / "mini-extra"
    if not script.exists():
        subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
        proc = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", PACKAGE],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0 or not script.exists():
            shutil.rmtree(venv, ignore_errors=True)
            return None, f"pip install {PACKAGE} failed: {proc.stderr.strip()[-500:]}"
    return script, ""


def mini_version(script: Path) -> str:
    """The installed mini-swe-agent's version."""
    python = script.parent / "python"
    proc = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('mini-swe-agent'))"],
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip() or "?"


def workdirs(tasks: list[Task], work: Path, sandbox: str) -> dict[str, str]:
    """Where the local environment clones each task (none in Docker: there it is /testbed)."""
    if sandbox != "none":
        return {}
    return {t.id: str(work / "ws" / t.id) for t in tasks}


def _config(base_url: str, sandbox: str, tasks_root: Path) -> dict[str, object]:
    model = {
        "model_name": "openai/test-model",
        "model_kwargs": {"api_base": base_url, "api_key": "bench", "drop_params": True},
        "cost_tracking": "ignore_errors",
    }
    agent = {"step_limit": 10, "cost_limit": 0}
    if sandbox == "none":
        environment: dict[str, object] = {"environment_class": "local", "cwd": ""}
        startup = "git clone -q {{repo}} {{workdir}}"
    else:
        environment = {
            "environment_class": "docker",
            "run_args": ["--rm", "-v", f"{tasks_root}:/tasks:ro"],
            # the stock config sources the SWE-bench images' conda setup, which this image lacks
            "env": {"BASH_ENV": ""},
        }
        startup = "git clone -q /tasks/{{instance_id}} /testbed"
    return {
        "model": model,
        "agent": agent,
        "environment": environment,
        "run": {"env_startup_command": startup},
    }


def run_mini(
    script: Path,
    tasks: list[Task],
    *,
    base_url: str,
    jobs: int,
    sandbox: str,
    image: str,
    work: Path,
) -> tuple[float, int, str]:
    """Run the batch once; (wall seconds, tasks whose patch fixes the bug, log tail)."""
    shutil.rmtree(work, ignore_errors=True)
    dataset = work / "dataset"
    dataset.mkdir(parents=True)
    where = workdirs(tasks, work, sandbox)
    instances = [
        {
            "instance_id": t.id,
            "problem_statement": t.statement,
            "repo": str(t.repo),
            "image_name": image,  # the runner prefers it to the SWE-bench hub image
            "workdir": where.get(t.id, "/testbed"),
        }
        for t in tasks
    ]
    (dataset / "test.jsonl").write_text("".join(json.dumps(i) + "\n" for i in instances))
    overrides = work / "bench-overrides.yaml"  # JSON is YAML
    tasks_root = tasks[0].repo.parent
    overrides.write_text(json.dumps(_config(base_url, sandbox, tasks_root)))
    out = work / "out"
    env = dict(
        os.environ,
        MSWEA_GLOBAL_CONFIG_DIR=str(work / "config"),
        MSWEA_SILENT_STARTUP="1",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        HF_HOME=str(work / "hf"),
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
    )
    argv = [
        str(script),
        "swebench",
        "--subset",
        str(dataset),
        "--split",
        "test",
        "-o",
        str(out),
        "-w",
        str(jobs),
        "-c",
        "swebench.yaml",
        "-c",
        str(overrides),
    ]
    log = work / "mini.log"
    started = time.monotonic()
    with log.open("wb") as sink:
        subprocess.run(argv, cwd=work, env=env, stdout=sink, stderr=subprocess.STDOUT, check=False)
    wall = time.monotonic() - started
    ok = 0
    preds = out / "preds.json"
    if preds.exists():
        for pred in json.loads(preds.read_text()).values():
            ok += FIXED in (pred.get("model_patch") or "")
    return wall, ok, log.read_text(errors="replace")[-2000:]


def wait_for_containers(deadline_s: float = 120.0) -> None:
    """Wait until the runner's containers are gone: it stops them in the background
    after each task, and the next measurement should not share the machine with that."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        proc = subprocess.run(
            ["docker", "ps", "-aq", "--filter", "name=minisweagent-"],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0 or not proc.stdout.strip():
            return
        time.sleep(0.5)
