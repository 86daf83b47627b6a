"""Pydantic's validation errors as statectl's problem lines: ``file:line: dotted.key: message``.

Both YAML loaders (job configs and the topics file) validate with pydantic models and report
through ``problem_lines``, so a problem reads the same wherever it is found and pydantic's own
wording ("Input should be ...", links to its docs) never reaches a user.

How a model shapes its messages:

- a field's ``description``, when it has one, names what the field expects; a wrong type or an
  out-of-range value then reads ``expected <description>, found <value>``;
- a validator raises ``ValueError(message)`` for one problem at the value it checks, or
  ``problems_error([(sub_key, message), ...])`` for several, or for problems of keys below it
  (a model validator naming the field it is about, a mapping validator naming the entry).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticCustomError

from statectl.text import did_you_mean

#: The error type of ``problems_error``; its context carries the problems.
PROBLEMS = "statectl_problems"

_TYPE_NAMES = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
}
_BOUNDS = {
    "greater_than_equal": ("ge", "must be at least {}"),
    "greater_than": ("gt", "must be more than {}"),
    "less_than_equal": ("le", "must be at most {}"),
    "less_than": ("lt", "must be less than {}"),
}


class RawSource(typing.Protocol):
    """What the mapping needs of a read YAML file (``statectl.config.loader.RawConfig``)."""

    def where(self, key: str) -> str: ...

    def line(self, key: str) -> int | None: ...


def problems_error(problems: Iterable[tuple[str, str]]) -> PydanticCustomError:
    """An error for a validator to raise: ``(key, message)`` pairs, each key relative to the value
    the validator checks (``""`` for the value itself)."""
    found = [(str(key), str(message)) for key, message in problems]
    return PydanticCustomError(PROBLEMS, "{summary}", {"summary": "; ".join(m for _, m in found), "problems": found})


def shown(value: Any) -> str:
    """A value as a problem message shows it: ``'x'``, ``0``, ``nothing (null)``."""
    return "nothing (null)" if value is None else repr(value)


def unwrap(annotation: Any) -> Any:
    """The type under ``Optional[...]`` and ``Annotated[...]``: what a value must be, not how it is checked."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            inner = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(inner) != 1:
                return annotation
            annotation = inner[0]
        else:
            return annotation


def is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _walk(model: type[BaseModel], loc: Iterable[str]) -> tuple[Any, Any]:
    """(type at ``loc``, its field info or None) following fields and mapping entries; (None, None)
    where the path leaves the schema."""
    tp: Any = model
    info = None
    for part in loc:
        if is_model(tp):
            info = tp.model_fields.get(part)
            if info is None:
                return None, None
            tp = unwrap(info.annotation)
        elif typing.get_origin(tp) is dict:
            info = None
            tp = unwrap(typing.get_args(tp)[1])
        else:
            return None, None
    return tp, info


def _messages(error: dict, model: type[BaseModel], loc: tuple[str, ...], unknown: str) -> list[tuple[str, str]]:
    """(sub-key, message) of one pydantic error."""
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == PROBLEMS:
        return list(ctx["problems"])
    if kind in ("value_error", "assertion_error"):
        return [("", str(ctx.get("error", error["msg"])))]
    if kind == "extra_forbidden":
        holder, _ = _walk(model, loc[:-1])
        known = list(holder.model_fields) if is_model(holder) else []
        otherwise = f" (known {unknown}s: {', '.join(known)})" if known else ""
        return [("", f"unknown {unknown}{did_you_mean(loc[-1], known, otherwise)}")]
    tp, info = _walk(model, loc)
    description = info.description if info is not None else None
    if kind == "missing":
        return [("", "required value is missing" + (f" ({description})" if description else ""))]
    if description:
        return [("", f"expected {description}, found {shown(value)}")]
    if kind == "literal_error":
        choices = typing.get_args(tp) if typing.get_origin(tp) is Literal else ()
        expected = ", ".join(repr(c) for c in choices) if choices else ctx.get("expected", "")
        hint = did_you_mean(str(value), [str(c) for c in choices], ignore_case=True) if choices else ""
        return [("", f"expected one of {expected}, found {shown(value)}{hint}")]
    if kind in _TYPE_NAMES:
        return [("", f"expected {_TYPE_NAMES[kind]}, found {shown(value)}")]
    if kind in _BOUNDS:
        name, text = _BOUNDS[kind]
        return [("", f"{text.format(ctx.get(name))}, found {shown(value)}")]
    # A check no model here makes today: say it without pydantic's phrasing where it has the usual shape.
    message = str(error["msg"])
    if message.startswith("Input should be "):
        message = "expected " + message.removeprefix("Input should be ")
    return [("", f"{message}, found {shown(value)}")]


def problem_lines(error: ValidationError, raw: RawSource, model: type[BaseModel], unknown: str = "key") -> list[str]:
    """Every error of ``error`` (raised validating ``model``) as ``where: dotted.key: message``,
    in the order of the file's lines (then keys without a line, then ``--set`` overrides).
    ``unknown`` names an unexpected key in "unknown key (did you mean ...)"."""
    found: list[tuple[int, int, int, str]] = []
    for error_dict in error.errors(include_url=False):
        # "[key]" marks an error in a mapping's key rather than its value: both are that entry.
        loc = tuple(str(part) for part in error_dict["loc"] if part != "[key]")
        for sub, message in _messages(error_dict, model, loc, unknown):
            key = ".".join(loc + ((sub,) if sub else ())) or "(top level)"
            line = raw.line(key)
            group = 2 if line == 0 else 1 if line is None else 0
            found.append((group, line or 0, len(found), f"{raw.where(key)}: {key}: {message}"))
    return [text for *_, text in sorted(found)]
