"""The value types of Harvester's settings and site-profile keys: how a value is read and checked.

A type reads a value two ways. ``parse(value)`` is lenient, as Scrapy's typed getters are: settings
arrive as text from ``-s``, the environment or Scrapyd (``"0"``, ``"a,b"``, a JSON object).
``parse(value, strict=True)`` takes TOML values as they are typed (a site profile's ``true`` is a
boolean, ``"true"`` is not). Either raises ``ValueError`` with the words that follow the value in
an error message ("must be true or false"). Scrapy-free.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Scrapy's getbool accepts these (scrapy.settings.BaseSettings.getbool).
_TRUE = {True, "1", "true", "True"}
_FALSE = {False, "0", "false", "False", "", None}


class ValueType:
    """Base: a value taken as it is."""

    optional = False

    def parse(self, value: Any, strict: bool = False) -> Any:
        return value

    def describe(self) -> str:
        """A few words for the settings reference."""
        return "any value"


@dataclass(frozen=True)
class Bool(ValueType):
    def parse(self, value: Any, strict: bool = False) -> bool:
        if strict:
            if not isinstance(value, bool):
                raise ValueError("must be true or false")
            return value
        if isinstance(value, (str, bool, int)) or value is None:
            if value in _TRUE:
                return True
            if value in _FALSE:
                return False
        raise ValueError("must be true or false")

    def describe(self) -> str:
        return "boolean"


@dataclass(frozen=True)
class Int(ValueType):
    minimum: int | None = None
    maximum: int | None = None
    message: str | None = None  # said instead of "must be at least N"

    def parse(self, value: Any, strict: bool = False) -> int:
        if isinstance(value, bool) or (strict and not isinstance(value, int)):
            raise ValueError(self.message or "must be an integer")
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise ValueError(self.message or "must be an integer") from None
        if self.minimum is not None and number < self.minimum:
            raise ValueError(self.message or f"must be at least {self.minimum}")
        if self.maximum is not None and number > self.maximum:
            raise ValueError(self.message or f"must be at most {self.maximum}")
        return number

    def describe(self) -> str:
        return "integer" + _range(self.minimum, self.maximum)


@dataclass(frozen=True)
class Float(ValueType):
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None  # an exclusive lower bound

    def parse(self, value: Any, strict: bool = False) -> float:
        if isinstance(value, bool) or (strict and not isinstance(value, (int, float))):
            raise ValueError("must be a number")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError("must be a number") from None
        if self.above is not None and not (number > self.above and number <= (self.maximum or number)):
            raise ValueError(f"must be above {_num(self.above)} and at most {_num(self.maximum)}")
        if self.minimum is not None and self.maximum is not None and not self.minimum <= number <= self.maximum:
            raise ValueError(f"must be between {_num(self.minimum)} and {_num(self.maximum)}")
        if self.minimum is not None and number < self.minimum:
            raise ValueError("must not be negative" if self.minimum == 0 else f"must be at least {_num(self.minimum)}")
        return number

    def describe(self) -> str:
        if self.above is not None:
            return f"number, above {_num(self.above)} and at most {_num(self.maximum)}"
        return "number" + _range(self.minimum, self.maximum)


@dataclass(frozen=True)
class Choice(ValueType):
    choices: tuple[str, ...] = ()

    def parse(self, value: Any, strict: bool = False) -> str:
        if value not in self.choices:
            raise ValueError(f"must be one of {', '.join(self.choices)}")
        return value

    def describe(self) -> str:
        return "one of " + ", ".join(f"`{c}`" for c in self.choices)


@dataclass(frozen=True)
class Text(ValueType):
    """A string, optionally one line, matching a pattern, or passing a check (CSS, regex...)."""

    one_line: bool = False
    pattern: str | None = None
    pattern_words: str = ""
    check: Callable[[str], Any] | None = None
    words: str = "string"

    def parse(self, value: Any, strict: bool = False) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError("must be a non-empty string")
        value = value.strip()
        if self.one_line and any(ch in value for ch in "\r\n\x00"):
            raise ValueError("must be one line")
        if self.pattern and not re.match(self.pattern, value):
            raise ValueError(f"must be {self.pattern_words}")
        if self.check is not None:
            self.check(value)
        return value

    def describe(self) -> str:
        return self.words


@dataclass(frozen=True)
class TextList(ValueType):
    """A list of strings; as text, comma-separated (as Scrapy's getlist reads it)."""

    check: Callable[[list[str]], Any] | None = None
    words: str = "list of strings"

    def parse(self, value: Any, strict: bool = False) -> list[str]:
        if value is None or value == "":
            items: list[str] = []
        elif isinstance(value, str):
            items = value.split(",")
        elif isinstance(value, (list, tuple)):
            items = list(value)
        else:
            raise ValueError("must be a list")
        if strict and not all(isinstance(item, str) for item in items):
            raise ValueError("must be a list of strings")
        items = [item.strip() if isinstance(item, str) else item for item in items]
        items = [item for item in items if item != ""]
        if self.check is not None:
            self.check(items)
        return items

    def describe(self) -> str:
        return self.words


@dataclass(frozen=True)
class Mapping(ValueType):
    def parse(self, value: Any, strict: bool = False) -> dict[str, Any]:
        if value is None or value == "":
            return {}
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise ValueError("must be a JSON object") from None
        if not isinstance(value, dict):
            raise ValueError("must be a JSON object")
        return dict(value)

    def describe(self) -> str:
        return "mapping (a JSON object as text)"


@dataclass(frozen=True)
class Optional(ValueType):
    """``inner``, or nothing (unset, None or an empty string)."""

    inner: ValueType = field(default_factory=ValueType)
    optional = True

    def parse(self, value: Any, strict: bool = False) -> Any:
        # A site profile sets a key or leaves it out: an empty TOML value is an error there.
        if not strict and (value is None or (isinstance(value, str) and not value.strip())):
            return None
        return self.inner.parse(value, strict)

    def describe(self) -> str:
        return f"{self.inner.describe()}, or unset"


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _range(minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f", {_num(minimum)} to {_num(maximum)}"
    if minimum is not None:
        return f", at least {_num(minimum)}"
    if maximum is not None:
        return f", at most {_num(maximum)}"
    return ""
