"""What the installed SGLang can decode: its diffusion-LLM architecture table.

Stock SGLang starts a dLLM only for the architectures listed in
``sglang.srt.dllm.config`` (a ``DLLM_PARAMS`` table of block size and mask id
per architecture, inside ``DllmConfig.from_server_args``); any other fails at
start with "Unknown diffusion LLM". ``dllm_architectures`` reads that table
from the installed source without running it, so the sglang engine can say,
before minutes of start-up, that it cannot run a checkpoint and what to do.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

__all__ = ["DLLM_CONFIG_MODULE", "checkpoint_architectures", "dllm_architectures", "unsupported"]

DLLM_CONFIG_MODULE = "sglang.srt.dllm.config"


def dllm_architectures(module: str = DLLM_CONFIG_MODULE) -> frozenset[str] | None:
    """The architectures in the installed SGLang's dLLM table; None when it cannot be read."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    try:
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    names: set[str] = set()
    found = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = any(isinstance(t, ast.Name) and t.id == "DLLM_PARAMS" for t in targets)
            if named and isinstance(node.value, ast.Dict):
                found = True
                names.update(
                    k.value
                    for k in node.value.keys
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)
                )
        # Builds without the table compare the architecture in an if/elif chain.
        elif isinstance(node, ast.Compare) and _is_arch(node.left):
            for right in node.comparators:
                if isinstance(right, ast.Constant) and isinstance(right.value, str):
                    found = True
                    names.add(right.value)
    return frozenset(names) if found else None


def _is_arch(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("arch", "architecture")


def checkpoint_architectures(model_path: str) -> list[str]:
    """The ``architectures`` of the checkpoint's config.json (empty when unreadable)."""
    try:
        config = json.loads((Path(model_path).expanduser() / "config.json").read_text("utf-8"))
    except (OSError, ValueError):
        return []
    value = config.get("architectures") if isinstance(config, dict) else None
    return [a for a in value if isinstance(a, str)] if isinstance(value, list) else []


def unsupported(model_path: str, table: frozenset[str] | None, version: str) -> str | None:
    """The one sentence saying SGLang cannot run this checkpoint, or None when it can (or
    when that cannot be told)."""
    archs = checkpoint_architectures(model_path)
    if table is None or not archs or archs[0] in table:
        return None
    return unsupported_sentence(archs[0], table, version)


def unsupported_sentence(arch: str, table: frozenset[str] | None, version: str) -> str:
    """SGLang cannot run ``arch``: what it lists, and the two ways that work."""
    listed = (
        f"its diffusion-LLM table lists only {', '.join(sorted(table))}"
        if table
        else ("it has no diffusion-LLM entry for it")
    )
    return (
        f"the installed SGLang {version} cannot run {arch} ({listed}); this model needs its "
        "own SGLang build (the vendor's), and a server started with that build works with "
        "--base-url http://HOST:PORT/v1, or use --engine hf"
    )
