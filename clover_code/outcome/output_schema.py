"""``--output-schema FILE``: the final answer must be a JSON value valid against a JSON Schema.

The schema is read and checked before the run (a bad file is a usage error,
exit 2). The task tells the model the schema; when its final answer does not
parse or does not validate, it is told what was wrong and answers again, at
most ``MAX_RETRIES`` times. Validation uses the ``jsonschema`` library with
the draft the schema names (the newest one when it names none).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clover_code import protocol as p
from clover_code.errors import UsageError
from clover_code.protocol.json_text import JSONLimitError, loads_bounded

if TYPE_CHECKING:
    from clover_code.agent.session import Session

MAX_RETRIES = 3
"""How many times the model is asked to fix an answer that does not validate."""

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(?P<body>.*)\n```\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """A checked JSON Schema and where it came from."""

    schema: dict[str, Any]
    path: Path

    def instructions(self) -> str:
        """What the task says about the final answer's shape."""
        text = json.dumps(self.schema, indent=2)
        return (
            "\n\nYour final answer must be only a JSON value (no other text, no code fence) "
            f"valid against this JSON Schema:\n{text}\n"
        )

    def check(self, answer: str) -> tuple[Any, str | None]:
        """``(value, None)`` when ``answer`` is valid, else ``(None, what was wrong)``."""
        text = answer.strip()
        fenced = _FENCE.match(text)
        if fenced is not None:
            text = fenced.group("body").strip()
        try:
            value = loads_bounded(text)
        except JSONLimitError as exc:
            return None, f"the answer is not usable JSON ({exc})"
        except json.JSONDecodeError as exc:
            return None, f"the answer is not JSON ({exc.msg} at line {exc.lineno} col {exc.colno})"
        import jsonschema  # only runs with --output-schema pay for loading it

        validator = jsonschema.validators.validator_for(self.schema)(self.schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is None:
            return value, None
        where = "/".join(str(part) for part in error.absolute_path) or "the top level"
        return None, f"at {where}: {error.message}"

    def retry_prompt(self, problem: str) -> str:
        """The message that asks the model to answer again."""
        return (
            f"Your final answer does not match the required JSON Schema: {problem}. "
            "Reply again with only the corrected JSON value, nothing else."
        )


def load_output_schema(path: Path) -> OutputSchema:
    """Read and check a JSON Schema file; ``UsageError`` (exit 2) when it is unusable."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise UsageError(f"output schema file {path} does not exist.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"output schema file {path} cannot be read ({exc}).") from None
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"output schema file {path} is not JSON ({exc.msg} at line {exc.lineno}); "
            "give a JSON Schema document."
        ) from None
    if not isinstance(schema, dict):
        raise UsageError(f"output schema file {path} must hold a JSON object (a JSON Schema).")
    import jsonschema
    from jsonschema.exceptions import SchemaError

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise UsageError(
            f"output schema file {path} is not a valid JSON Schema ({exc.message})."
        ) from None
    return OutputSchema(schema, path)


@dataclass(frozen=True, slots=True)
class SchemaOutcome:
    """How the answer fared against the schema after the retries."""

    finished: p.TurnFinished
    """The last turn's end."""
    value: Any = None
    """The valid JSON value (None when it never validated)."""
    problem: str | None = None
    """Why the last answer was refused (None when it validated or the turn did not complete)."""


async def answer_to_schema(
    session: Session, schema: OutputSchema, finished: p.TurnFinished
) -> SchemaOutcome:
    """Check the completed turn's answer; ask again, at most ``MAX_RETRIES`` times, until valid.

    A turn that does not complete (a limit, an error, an interruption) ends the
    loop with that turn's status, as any headless run would.
    """
    for attempt in range(MAX_RETRIES + 1):
        if finished.status != "completed":
            return SchemaOutcome(finished)
        value, problem = schema.check(finished.final_text)
        if problem is None:
            return SchemaOutcome(finished, value=value)
        if attempt == MAX_RETRIES:
            return SchemaOutcome(finished, problem=problem)
        finished = await session.run_turn(schema.retry_prompt(problem))
    raise AssertionError("unreachable: the loop returns on its last attempt")
