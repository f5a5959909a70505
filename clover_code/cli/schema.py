"""``clover-code schema result|events``: the published JSON Schemas of headless output.

Generated from the pydantic models, so they follow the code: ``result`` is the
``TaskResult`` of ``--output-format json`` (and the last line of stream-json);
``events`` is one line of ``--output-format stream-json``: any protocol event,
or the closing result, told apart by ``type``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Annotated, Any, Union, get_args

from pydantic import Field, TypeAdapter

from clover_code import protocol as p
from clover_code.config.field_docs import describe
from clover_code.outcome.result import ResultUsage, SubagentUsage, TaskResult

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _documented() -> None:
    # The field docstrings become the schema's descriptions (nested models first).
    describe(ResultUsage, SubagentUsage, TaskResult)


def result_schema() -> dict[str, Any]:
    """JSON Schema of the headless result."""
    _documented()
    schema = TaskResult.model_json_schema()
    return {"$schema": SCHEMA_DIALECT, **schema}


def events_schema() -> dict[str, Any]:
    """JSON Schema of one stream-json line (a protocol event or the final result)."""
    _documented()
    union, *_ = get_args(p.Event)
    members = (*get_args(union), TaskResult)
    line = Annotated[Union[members], Field(discriminator="type")]  # type: ignore[valid-type]  # noqa: UP007
    schema: dict[str, Any] = TypeAdapter(line).json_schema()
    return {"$schema": SCHEMA_DIALECT, "title": "StreamJsonLine", **schema}


SCHEMAS = {"result": result_schema, "events": events_schema}


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``clover-code schema``."""
    parser = argparse.ArgumentParser(
        prog="clover-code schema",
        description="Print the JSON Schema of headless output: the --output-format json "
        "result, or one line of --output-format stream-json.",
    )
    parser.add_argument("which", choices=tuple(SCHEMAS), help="result or events")
    return parser


def main(argv: list[str]) -> int:
    """Print the chosen schema as JSON."""
    args = build_parser().parse_args(argv)
    sys.stdout.write(json.dumps(SCHEMAS[args.which](), indent=2) + "\n")
    return 0
