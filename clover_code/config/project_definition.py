"""The project's own sandbox image definition: where it is, what it says, its hash.

A project names its image, most specific first, in:

1. ``.devcontainer/devcontainer.json`` (or ``.devcontainer.json``): JSON with
   comments and trailing commas. ``image`` names an image; or
   ``build.dockerfile`` (relative to the JSON file) with ``build.context``
   (default: the JSON file's directory), ``build.args`` and ``build.target``.
   ``onCreateCommand``, ``updateContentCommand`` and ``postCreateCommand``
   (a string for ``sh -c``, a list for an argv, or an object of either) run
   once when the image is built; ``containerEnv`` becomes image variables.
2. ``.clover/sandbox/Dockerfile``, built with its directory as the context.

Either Dockerfile can start ``FROM ${CLOVER_BASE}``: that build argument
names clover-code's built-in image.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clover_code.errors import ToolError
from clover_code.protocol.json_text import loads_bounded

__all__ = [
    "DEVCONTAINER_FILES",
    "PROJECT_DOCKERFILE",
    "ImageDefinition",
    "definition_digest",
    "definition_file",
    "find_definition",
    "parse_jsonc",
    "setup_commands",
]

DEVCONTAINER_FILES = (".devcontainer/devcontainer.json", ".devcontainer.json")
PROJECT_DOCKERFILE = ".clover/sandbox/Dockerfile"
_LIFECYCLE = ("onCreateCommand", "updateContentCommand", "postCreateCommand")
"""The devcontainer commands run at build time, in the order the spec runs them."""

_HASH_FILES = 2_000
"""Files of the build context hashed at most (those the Dockerfile copies)."""


@dataclass(frozen=True, slots=True)
class ImageDefinition:
    """What the project's definition file says about its image."""

    source: Path
    """The file that defines the image (shown to the user; its trust is asked for)."""
    image: str | None = None
    """An image to use as is (devcontainer ``image``)."""
    dockerfile: Path | None = None
    context: Path | None = None
    args: dict[str, str] = field(default_factory=dict)
    target: str | None = None
    commands: tuple[str, ...] = ()
    """Shell commands run once at build time (the devcontainer lifecycle commands)."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables set in the image (devcontainer ``containerEnv``)."""


def definition_file(root: Path) -> Path | None:
    """The file that defines the project's image under ``root``, or None (nothing read)."""
    for name in (*DEVCONTAINER_FILES, PROJECT_DOCKERFILE):
        if (root / name).is_file():
            return root / name
    return None


IMAGE_TRUST_NOTE = "a sandbox image definition (runs programs when the image is built)"
"""What the trust notice and question say an image definition would loosen."""


def trust_fingerprint(root: Path) -> tuple[str, Path, bytes] | None:
    """The project's image definition as trust judges it, or None when it has none:
    its path relative to ``root``, the file, and bytes that change whenever what
    the build would run changes (the definition, its Dockerfile, the files it copies)."""
    path = definition_file(root)
    if path is None:
        return None
    try:
        fingerprint = definition_digest(root, find_definition(root), (), "")
    except (ToolError, OSError):
        # Unreadable or malformed: it cannot be built anyway; judge the bytes there are.
        try:
            fingerprint = "unparsed:" + hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            fingerprint = "unreadable"
    return path.relative_to(root).as_posix(), path, fingerprint.encode()


def find_definition(root: Path) -> ImageDefinition | None:
    """The project's image definition under ``root``, or None when it has none.

    Raises ``ToolError`` naming the file when it cannot be read or makes no sense.
    """
    path = definition_file(root)
    if path is None:
        return None
    if path.name.endswith(".json"):
        return _devcontainer(path)
    return ImageDefinition(source=path, dockerfile=path, context=path.parent)


def _devcontainer(path: Path) -> ImageDefinition:
    try:
        data = parse_jsonc(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ToolError(f"cannot read {path} ({exc}); fix it or remove it.") from None
    if not isinstance(data, dict):
        raise ToolError(f"{path} is not a JSON object; fix it or remove it.")
    raw_build = data.get("build")
    build: dict[str, Any] = raw_build if isinstance(raw_build, dict) else {}
    dockerfile = build.get("dockerfile", data.get("dockerFile"))
    context = build.get("context", data.get("context", "."))
    commands: list[str] = []
    for key in _LIFECYCLE:
        commands += _command_forms(data.get(key), path, key)
    env = data.get("containerEnv") or {}
    if not isinstance(env, dict):
        raise ToolError(f"{path}: containerEnv must be an object of strings; fix it.")
    args = build.get("args") or {}
    if not isinstance(args, dict):
        raise ToolError(f"{path}: build.args must be an object of strings; fix it.")
    common: dict[str, Any] = {
        "source": path,
        "commands": tuple(commands),
        "env": {str(k): str(v) for k, v in env.items()},
    }
    if isinstance(dockerfile, str) and dockerfile:
        return ImageDefinition(
            dockerfile=(path.parent / dockerfile).resolve(),
            context=(path.parent / str(context)).resolve(),
            args={str(k): str(v) for k, v in args.items()},
            target=str(build["target"]) if build.get("target") else None,
            **common,
        )
    image = data.get("image")
    if isinstance(image, str) and image:
        return ImageDefinition(image=image, **common)
    raise ToolError(
        f"{path} names neither an image nor build.dockerfile; add one "
        '(e.g. "build": {"dockerfile": "Dockerfile"}) or remove the file.'
    )


def _command_forms(value: Any, path: Path, key: str) -> list[str]:
    """A lifecycle command as shell lines: a string as is, a list as an argv,
    an object as each of its values."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [shlex.join(value)] if value else []
    if isinstance(value, dict):
        lines: list[str] = []
        for item in value.values():
            lines += _command_forms(item, path, key)
        return lines
    raise ToolError(f"{path}: {key} must be a string, a list of strings or an object; fix it.")


def setup_commands(definition: ImageDefinition | None, setup: tuple[str, ...]) -> tuple[str, ...]:
    """The commands run once per image: the definition's, then ``sandbox_setup``."""
    own = definition.commands if definition is not None else ()
    return (*own, *(line for line in setup if line.strip()))


def parse_jsonc(text: str) -> Any:
    """Parse JSON with ``//`` and ``/* */`` comments and trailing commas (devcontainer.json)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i):
            newline = text.find("\n", i)
            i = n if newline < 0 else newline
        elif text.startswith("/*", i):
            close = text.find("*/", i + 2)
            if close < 0:
                raise ValueError("a /* comment is not closed")
            out.append(" ")
            i = close + 2
        else:
            out.append(ch)
            i += 1
    cleaned = re.sub(r",(\s*[}\]])", r"\1", "".join(out))
    return loads_bounded(cleaned)


def definition_digest(
    root: Path, definition: ImageDefinition | None, setup: tuple[str, ...], base: str
) -> str:
    """12 hex digits naming one version of the project's image.

    Covers the definition file, the Dockerfile and the context files it copies,
    the build arguments, the setup commands, the built-in image's tag and the
    workspace's path (setup steps such as ``pip install -e .`` record it).
    """
    h = hashlib.sha256()

    def part(label: str, data: bytes) -> None:
        h.update(f"{label}:{len(data)}:".encode() + data)

    part("root", str(root).encode())
    part("base", base.encode())
    part("setup", json.dumps(list(setup)).encode())
    if definition is not None:
        part("source", definition.source.read_bytes())
        part("image", (definition.image or "").encode())
        part("args", json.dumps(definition.args, sort_keys=True).encode())
        part("target", (definition.target or "").encode())
        part("env", json.dumps(definition.env, sort_keys=True).encode())
        if definition.dockerfile is not None:
            try:
                text = definition.dockerfile.read_bytes()
            except OSError as exc:
                msg = f"cannot read {definition.dockerfile} named in {definition.source} ({exc})"
                raise ToolError(msg + "; fix the path.") from None
            part("dockerfile", text)
            context = definition.context or definition.dockerfile.parent
            for rel, digest in _copied_files(text.decode("utf-8", "replace"), context):
                part(rel, digest.encode())
    return h.hexdigest()[:12]


def _copied_files(dockerfile: str, context: Path) -> list[tuple[str, str]]:
    """(path, content hash) of the context files the Dockerfile's COPY/ADD lines name."""
    files: dict[str, str] = {}
    for source in _copy_sources(dockerfile):
        pattern = str(context / source.lstrip("/"))
        for match in sorted(glob.glob(pattern)):
            for path in _walk(Path(match)):
                if len(files) >= _HASH_FILES:
                    break
                rel = os.path.relpath(path, context)
                files.setdefault(rel, _file_digest(path))
    return sorted(files.items())


def _copy_sources(dockerfile: str) -> list[str]:
    """The source arguments of COPY and ADD instructions that read the build context."""
    logical = re.sub(r"\\\r?\n", " ", dockerfile)
    sources: list[str] = []
    for line in logical.splitlines():
        words = line.strip().split(None, 1)
        if len(words) < 2 or words[0].upper() not in ("COPY", "ADD"):
            continue
        rest = words[1].strip()
        args: list[str]
        try:
            args = json.loads(rest) if rest.startswith("[") else shlex.split(rest)
        except ValueError:
            continue
        flags = [a for a in args if a.startswith("--")]
        if any(f.startswith("--from") for f in flags):
            continue  # copies from another stage or image, not from the context
        paths = [a for a in args if not a.startswith("--")]
        sources += [p for p in paths[:-1] if "://" not in p]
    return sources


def _walk(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    found: list[Path] = []
    for folder, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        found += [Path(folder, n) for n in sorted(names)]
        if len(found) >= _HASH_FILES:
            break
    return found[:_HASH_FILES]


def _file_digest(path: Path) -> str:
    try:
        st = path.stat()
        if st.st_size > 8 * 2**20:  # large files: size and time, not the contents
            return f"{st.st_size}:{st.st_mtime_ns}"
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "unreadable"
