"""Doctor checks of this machine: Python and the extras, the sandbox, the GPU stack."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from pathlib import Path

from clover_code.doctor.report import Check, State

__all__ = ["gpu_checks", "python_checks", "sandbox_checks"]


_EXTRAS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("web", "clover-code web (the app in a browser)", "textual-serve", ("textual_serve",)),
    ("local", "--engine hf and clover-code serve", "torch", ("torch", "transformers", "uvicorn")),
    ("sglang", "--engine sglang (a local GPU)", "sglang", ("sglang",)),
    ("otel", "OpenTelemetry export", "opentelemetry-sdk", ("opentelemetry.sdk",)),
    ("ray", "batch --executor ray", "ray", ("ray",)),
)
"""Each extra: what needs it, the distribution whose version is shown, its modules."""


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def python_checks() -> list[Check]:
    """The interpreter and which optional extras are installed."""
    version = ".".join(str(n) for n in sys.version_info[:3])
    checks = [
        Check(
            "python",
            "python",
            "ok" if sys.version_info >= (3, 11) else "fail",
            f"Python {version} at {sys.executable}",
            "" if sys.version_info >= (3, 11) else "install Python 3.11 or newer",
        )
    ]
    for extra, used_for, top, modules in _EXTRAS:
        missing = [m for m in modules if not _installed(m)]
        if missing:
            checks.append(
                Check(
                    "python",
                    f"extra {extra}",
                    "info",
                    f"not installed (needed for {used_for})",
                    f"pip install 'clover-code[{extra}]'",
                )
            )
        else:
            try:
                got = importlib.metadata.version(top)
            except importlib.metadata.PackageNotFoundError:
                got = "?"
            checks.append(Check("python", f"extra {extra}", "ok", f"installed ({top} {got})"))
    return checks


def sandbox_checks(root: Path) -> list[Check]:
    """Docker (daemon and image), bubblewrap (and user namespaces), what auto picks."""
    from clover_code.errors import ToolError
    from clover_code.tools.sandbox.bwrap_identity import bwrap_problem
    from clover_code.tools.sandbox.docker_setup import docker_client
    from clover_code.tools.sandbox.image import image_present, image_tag
    from clover_code.tools.sandbox.policy import sandbox_user
    from clover_code.tools.sandbox.select import GET_A_SANDBOX

    checks: list[Check] = []
    client = None
    try:
        client = docker_client(timeout=5.0)
        version = client.version().get("Version", "?")
        checks.append(Check("sandbox", "docker", "ok", f"the daemon answers (engine {version})"))
    except ToolError as exc:
        checks.append(
            Check(
                "sandbox",
                "docker",
                "info",
                f"no daemon answers ({exc})",
                "start Docker (sudo systemctl start docker), or use bubblewrap",
            )
        )
    tag = image_tag()
    if client is not None:
        if image_present(client, tag):
            checks.append(Check("sandbox", "image", "ok", f"{tag} is built"))
        else:
            checks.append(
                Check(
                    "sandbox",
                    "image",
                    "warn",
                    f"{tag} is not built yet (the first Docker run builds it)",
                    "clover-code sandbox build",
                )
            )
    problem = bwrap_problem(user=sandbox_user(root))
    if problem is None:
        checks.append(Check("sandbox", "bubblewrap", "ok", "works (user namespaces available)"))
    else:
        checks.append(
            Check(
                "sandbox",
                "bubblewrap",
                "info",
                f"cannot sandbox here: {problem}",
                "install bubblewrap (see below) and allow unprivileged user namespaces "
                "(sudo sysctl kernel.unprivileged_userns_clone=1 on older kernels)",
            )
        )
    if client is None and problem is not None:
        checks.append(
            Check(
                "sandbox",
                "shell tool",
                "fail",
                "no sandbox can run here, so the shell tool is off (or runs on the host "
                "only with --sandbox none)",
                GET_A_SANDBOX,
            )
        )
    else:
        kind = "bubblewrap" if problem is None else "Docker"
        checks.append(Check("sandbox", "shell tool", "ok", f"commands run in {kind}"))
    return checks


def gpu_checks(engine: str, model_path: Path | None) -> list[Check]:
    """The local engines' stack: torch and CUDA, SGLang, the checkpoint folder."""
    wanted = engine in ("hf", "sglang")
    bad: State = "fail" if wanted else "info"
    checks: list[Check] = []
    if not _installed("torch"):
        checks.append(
            Check(
                "gpu",
                "torch",
                bad,
                "not installed (local engines need it)",
                "pip install torch==2.13.0 && pip install 'clover-code[local]'",
            )
        )
    else:
        import torch

        if torch.cuda.is_available():
            name = torch.cuda.get_device_name(0)
            detail = f"torch {torch.__version__}, CUDA {torch.version.cuda}: {name}"
            checks.append(Check("gpu", "torch", "ok", detail))
        else:
            checks.append(
                Check(
                    "gpu",
                    "torch",
                    "fail" if engine == "sglang" else "info",
                    f"torch {torch.__version__}, no CUDA GPU (--engine hf runs on CPU, slowly)",
                )
            )
    if engine == "sglang" or _installed("sglang"):
        state: State = "ok" if _installed("sglang") else bad
        detail = "installed" if state == "ok" else "not installed"
        fix = "" if state == "ok" else "pip install 'clover-code[sglang]'"
        checks.append(Check("gpu", "sglang", state, detail, fix))
    if model_path is not None:
        present = (model_path / "config.json").is_file()
        checks.append(
            Check(
                "gpu",
                "model_path",
                "ok" if present else "fail",
                f"{model_path}" + ("" if present else " has no config.json"),
                "" if present else "point --model-path at a Hugging Face checkpoint folder",
            )
        )
    elif wanted:
        checks.append(
            Check(
                "gpu",
                "model_path",
                "fail",
                f"--engine {engine} needs a checkpoint folder",
                "--model-path DIR",
            )
        )
    return checks
