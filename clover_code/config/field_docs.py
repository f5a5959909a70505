"""The docstrings written under the fields of a model: how settings and results are documented.

They are read from the source when something shows them (``--help``, the
reference pages, the published JSON Schemas), not when the classes are made:
pydantic's ``use_attribute_docstrings`` tokenizes each class's source as the
class is created, which cost every start some 50 ms of CPU.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
from pathlib import Path

from pydantic import BaseModel

__all__ = ["describe", "field_docs"]


@functools.cache
def _module_tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text("utf-8"))


def _own_docs(cls: type) -> dict[str, str]:
    try:
        source = inspect.getsourcefile(cls)
    except TypeError:
        return {}
    if source is None or not Path(source).is_file():
        return {}
    docs: dict[str, str] = {}
    # Documented models are defined at the top of their module.
    for node in _module_tree(Path(source)).body:
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            for stmt, after in itertools.pairwise(node.body):
                if (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)
                ):
                    docs[stmt.target.id] = inspect.cleandoc(after.value.value)
    return docs


@functools.cache
def field_docs(model: type) -> dict[str, str]:
    """Each field's docstring, cleaned as ``inspect.cleandoc`` does, over ``model``'s bases too
    (a subclass's own wins)."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if cls.__module__.partition(".")[0] == "clover_code":
            docs.update(_own_docs(cls))
    return docs


def describe(*models: type[BaseModel]) -> None:
    """Give the fields of ``models`` that have no description their docstring, so that
    their JSON Schemas carry it (nested models must be passed too)."""
    for model in models:
        docs = field_docs(model)
        changed = False
        for name, field in model.model_fields.items():
            if field.description is None and name in docs:
                field.description = docs[name]
                changed = True
        if changed:
            model.model_rebuild(force=True)
