"""Command-line flags derived from the settings model: one declaration per setting.

A flag is named after its setting (``block_size`` -> ``--block-size``), takes
its type and choices from the field's annotation (a ``Literal`` gives the
choices, a ``bool`` a switch) and its help from the field's docstring, so the
app, ``clover-code acp`` and ``clover-code serve`` cannot drift apart. To add a
flag: document the field in ``Settings`` and name it in ``ENGINE_FLAGS`` (every
front end that runs a model), ``SERVE_FLAGS`` (the local server) or the front
end's own list; a ``Flag`` changes the name, help or choices where one command
needs it.

Every flag defaults to None, so an unset flag leaves the environment and the
config files to decide (``flag_values`` keeps only the flags that were given).
"""

from __future__ import annotations

import argparse
import re
import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import SecretStr

from clover_code.config.settings import Settings

__all__ = [
    "ENGINE_FLAGS",
    "SERVE_FLAGS",
    "Flag",
    "FlagSpec",
    "add_engine_arguments",
    "add_setting_flags",
    "flag_values",
    "given_settings",
    "setting_names",
]


@dataclass(frozen=True, slots=True)
class Flag:
    """One setting's flag, with what a command changes about it (None: derived)."""

    setting: str
    flag: str | None = None
    """The option string, e.g. ``--host`` for ``serve_host``."""
    help: str | None = None
    choices: Sequence[str] | None = None
    """A narrower set than the setting accepts."""
    metavar: str | None = None


FlagSpec = str | Flag

ENGINE_FLAGS: tuple[FlagSpec, ...] = (
    "engine",
    Flag("base_url", metavar="URL"),
    "model",
    Flag("api_key", help="API key (or set CLOVER_API_KEY)"),
    Flag("model_path", metavar="DIR"),
    Flag("block_size", metavar="N"),
    Flag("thinking", help="no reasoning"),
    "decoder",
    Flag("expert_mass", metavar="F"),
    Flag("remask_below", metavar="F"),
    "sandbox",
    Flag("early_tools", help="run no tool call before the whole response has arrived"),
    Flag("low_confidence", metavar="F"),
)
"""The engine and sandbox flags of every front end that runs the agent."""

SERVE_FLAGS: tuple[FlagSpec, ...] = (
    Flag("model_path", metavar="DIR"),
    Flag("engine", choices=("hf", "sglang"), help="local engine (default hf)"),
    Flag("serve_host", flag="--host", metavar="ADDRESS"),
    Flag("serve_port", flag="--port"),
    Flag("serve_drafts", flag="--drafts"),
    Flag(
        "serve_api_key",
        flag="--api-key",
        metavar="KEY",
        help="the key clients send as Authorization: Bearer (or set CLOVER_SERVE_API_KEY); "
        "default: a random key, printed at start",
    ),
    Flag("serve_max_body_mb", flag="--max-body-mb", metavar="MB"),
    Flag("serve_read_timeout", flag="--read-timeout", metavar="S"),
    "block_size",
    "threshold",
    Flag("remask_below", metavar="F"),
    Flag("remask_rounds", metavar="N"),
    "dtype",
    "device",
    "max_tokens",
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
    "decoder",
    Flag("expert_mass", metavar="F"),
    "expert_select",
    "prefill",
    Flag("max_batch", metavar="N"),
    "tp_size",
    "mem_fraction_static",
    "quantization",
)
"""The flags of ``clover-code serve``: the local engine and where to listen."""


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """The engine and sandbox flags every front end shares (settings of the same names)."""
    add_setting_flags(parser.add_argument_group("engine"), ENGINE_FLAGS)


def add_setting_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, flags: Iterable[FlagSpec]
) -> None:
    """Add one flag per setting named in ``flags``, typed and documented by the model."""
    for spec in flags:
        flag = spec if isinstance(spec, Flag) else Flag(spec)
        field = Settings.model_fields[flag.setting]
        kind = _unwrap(field.annotation)
        option = flag.flag or "--" + flag.setting.replace("_", "-")
        help_text = None if flag.help is None else _escape(flag.help)
        if kind is bool:
            # A switch sets the value its default is not: --x for off-by-default, --no-x otherwise.
            on = field.default is not True
            if not on and flag.flag is None:
                option = "--no-" + flag.setting.replace("_", "-")
            parser.add_argument(
                option, dest=flag.setting, action=_SettingFlag, nargs=0, const=on, help=help_text
            )
            continue
        extra: dict[str, Any] = {}
        choices = flag.choices
        if get_origin(kind) is Literal:
            choices = choices or tuple(str(c) for c in get_args(kind))
        elif kind in (int, float, Path):
            extra["type"] = kind
        metavar = flag.metavar or _METAVARS.get(kind)
        if metavar:
            extra["metavar"] = metavar
        parser.add_argument(
            option,
            dest=flag.setting,
            action=_SettingFlag,
            choices=choices,
            default=None,
            help=help_text,
            **extra,
        )


class _SettingFlag(argparse.Action):
    """A setting's flag: stores its value (a switch, ``nargs=0``: its ``const``). Its help
    is the first sentence of the setting's docstring, read from the source when the help
    is shown: every start would otherwise parse the settings' modules for it."""

    _help: str | None

    @property
    def help(self) -> str | None:
        if self._help is None:
            from clover_code.config.field_docs import field_docs

            doc = field_docs(Settings).get(self.dest, "")
            self._help = _escape(_help_case(_first_sentence(doc)))
        return self._help

    @help.setter
    def help(self, value: str | None) -> None:
        self._help = value

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


_METAVARS: dict[Any, str] = {int: "N", float: "X", Path: "DIR"}
"""How a flag's value is named in the help when the command does not say."""


def flag_values(args: argparse.Namespace, names: Iterable[str]) -> dict[str, Any]:
    """The settings among ``names`` that were given on the command line."""
    return {k: getattr(args, k) for k in names if getattr(args, k, None) is not None}


def setting_names(flags: Iterable[FlagSpec]) -> tuple[str, ...]:
    """The setting names of ``flags``."""
    return tuple(f.setting if isinstance(f, Flag) else f for f in flags)


def given_settings(args: argparse.Namespace, *flags: Iterable[FlagSpec]) -> dict[str, Any]:
    """The settings a command's flags gave (``flags``: the lists it added, such as
    ``ENGINE_FLAGS`` and its own), for ``load_settings``."""
    return flag_values(args, [name for group in flags for name in setting_names(group)])


def _unwrap(annotation: Any) -> Any:
    """``X | None`` -> ``X``; ``SecretStr`` is typed as text."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        annotation = args[0] if len(args) == 1 else annotation
    return str if annotation is SecretStr else annotation


def _first_sentence(doc: str) -> str:
    """The docstring's first sentence, on one line and without its full stop."""
    text = " ".join(doc.split())
    # A full stop ends the sentence unless it ends an abbreviation such as "e.g.".
    match = re.match(r"(.+?)(?<!e\.g)(?<!i\.e)\.(\s|$)", text)
    return match.group(1) if match else text.rstrip(".")


def _help_case(text: str) -> str:
    """Lower-case the first letter, as argparse's own help lines are ("URL" stays)."""
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def _escape(text: str) -> str:
    # argparse formats help with %-substitution.
    return text.replace("%", "%%")
