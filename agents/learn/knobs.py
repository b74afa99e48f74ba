"""A numeric option's kind and accepted range, written once so that a flag of ``guild train``, a
key of its config file and code building the options are checked alike and refused in the
same words."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Knob:
    """A whole number (``kind=int``) or a finite number (``kind=float``) from ``low`` to ``high``
    (no upper bound when None); ``open_low`` excludes ``low`` itself (a learning rate of 0 learns
    nothing)."""

    kind: type
    low: float
    high: float | None = None
    open_low: bool = False

    def span(self) -> str:
        """The accepted values in words, as error lines and ``--help`` show them."""
        if self.kind is int:
            if self.high is None:
                return f"a whole number of at least {self.low:,}"
            return f"a whole number from {self.low:,} to {self.high:,}"
        if self.high is None:
            return f"a number {'>' if self.open_low else '>='} {self.low:g}"
        return f"a number in {'(' if self.open_low else '['}{self.low:g}, {self.high:g}]"

    def check(self, value: Any) -> int | float:
        """``value`` as the knob's kind, or ValueError ("must be <span>; got <value>"); -0.0 is
        0.0 (a summary or a resume message would show it as ``-0``)."""
        if self.accepts(value):
            return self.kind(value) + 0
        raise ValueError(f"must be {self.span()}; got {value!r:.40}")

    def accepts(self, value: Any) -> bool:
        """Of the kind (a bool is not a number), finite and in range (compared exactly: a seed
        near 2**63 must not round into range; a number must be a float, which a whole number
        of 400 digits, as TOML writes it, is not)."""
        if isinstance(value, bool) or not isinstance(value, int if self.kind is int
                                                     else (int, float)):
            return False
        if self.kind is float:
            try:
                value = float(value)
            except OverflowError:
                return False
            if not math.isfinite(value):
                return False
        above = value > self.low if self.open_low else value >= self.low
        return above and (self.high is None or value <= self.high)

    def parse(self, text: str) -> int | float:
        """A flag's text as a checked value (ValueError as :meth:`check`, showing the text)."""
        try:
            value = self.kind(text)
        except (ValueError, OverflowError):
            value = None
        if not self.accepts(value):
            raise ValueError(f"must be {self.span()}; got {text!r:.40}")
        return self.kind(value) + 0
