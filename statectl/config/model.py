"""The base of every config model and the value types their fields share.

Models are strict, because YAML guesses types: ``top_n: "3"`` or ``top_n: true`` is a mistake to
report, not a value to coerce. Where a user cannot tell a number from text (a topic name ``2024``, a
Spark conf ``4``), the field types below turn numbers into text on purpose.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

from statectl.config.problems import problems_error, shown


class Section(BaseModel):
    """A mapping in a config file: unknown keys are errors, values are not coerced across types."""

    model_config = ConfigDict(extra="forbid", strict=True)


def _number_as_text(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


#: Text; a number written without quotes is its text (``5`` -> ``"5"``), true/false is not.
Text = Annotated[str, BeforeValidator(_number_as_text)]


def _scalar_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    return None


def conf_text(value: Any) -> str:
    """A value handed on as text (a Spark conf): numbers and true/false as Spark and Kafka spell them."""
    text = _scalar_text(value)
    if text is None:
        raise ValueError(f"expected a value, found {shown(value)}; to leave a config at its default, leave it out")
    return text


def topic_config_text(value: Any) -> str:
    """A Kafka topic config value: as ``conf_text``, and a list is Kafka's comma-separated list."""
    # cleanup.policy: [compact, delete] is Kafka's list syntax, compact,delete.
    if isinstance(value, list) and value and all(_scalar_text(v) is not None for v in value):
        return ",".join(_scalar_text(v) for v in value)
    return conf_text(value)


def text_mapping(
    value_text: Callable[[Any], str],
    check: Callable[[dict[str, str]], list[tuple[str, str]]] | None = None,
    null_is_empty: bool = False,
) -> Any:
    """A mapping of names to values handed on as text (Spark confs, topic configs).

    Each value becomes text with ``value_text`` (a ValueError is that entry's problem); ``check``
    then sees the entries that converted and names the ones their consumer would refuse. Both run
    in one validator so that every entry's problem is reported together: pydantic skips a later
    validator once an entry has failed.
    """

    def convert(value: Any) -> Any:
        if value is None and null_is_empty:
            return {}
        if not isinstance(value, dict):
            return value  # the declared dict type says "expected a mapping"
        out: dict[str, str] = {}
        found: list[tuple[str, str]] = []
        for key, item in value.items():
            try:
                out[str(key)] = value_text(item)
            except ValueError as exc:
                found.append((str(key), str(exc)))
        if check is not None:
            found += check(out)
        if found:
            raise problems_error(found)
        return out

    return Annotated[dict[str, str], BeforeValidator(convert)]
