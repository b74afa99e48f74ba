"""Replay JSON bytes: the standard library's exact output, from orjson when it is installed.

Encoding a replay with ``json`` is a large part of a league episode's work; orjson (the
``fast`` extra) does it far faster. The two differ in places, so orjson's bytes are used only
when they cannot differ from ``STDLIB.encode`` (compact separators, ``ensure_ascii``,
``allow_nan``), and ``json`` encodes the payload otherwise:

- orjson writes non-ASCII as UTF-8 and U+007F raw (``json`` escapes both): the output must be
  ASCII without ``\\x7f``;
- it writes NaN and infinities as ``null`` (``json``: ``NaN``, ``Infinity``): no ``null`` at
  all (a ``None`` in the payload takes the slow path too; a replay has none);
- floats: both write the shortest round-trip digits, the same text wherever ``json`` writes no
  exponent (``1e-4 <= |x| < 1e16``, checked over millions of floats); below that orjson writes
  ``0.00001`` or ``1e-7`` (``json``: ``1e-05``, ``1e-07``): no ``e-``, ``e+`` or ``0.0000``;
- it refuses ints beyond 64 bits, non-``str`` keys, and (with the options below) subclasses,
  dataclasses and dates, which ``json`` writes its own way or refuses: any orjson error.

A string that merely contains one of those markers costs the slow path, never a difference.
The one case left: an ``Enum`` or ``UUID`` value, which ``json`` refuses, orjson writes; the
engine's payload holds only plain values (tests/test_replay_json.py checks every golden
replay, and random payloads against ``STDLIB``).
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # the plain install: the standard library alone
    orjson = None  # type: ignore[assignment]

# ``json.dumps(payload, separators=(",", ":"))``, the same bytes, without building an encoder
# per replay or checking a fresh event log for cycles.
STDLIB = json.JSONEncoder(separators=(",", ":"), check_circular=False)

# Looked for with ``bytes in`` (a skipping search), which is cheaper than a regular expression
# (``re`` steps byte by byte).
_MAY_DIFFER = (b"null", b"e-", b"0.0000")


def _refuse(value: Any) -> Any:
    raise TypeError(type(value).__name__)  # json writes it its own way (or refuses it too)


if orjson is not None:
    _OPTIONS = (orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS
                | orjson.OPT_PASSTHROUGH_DATETIME)


def encode(payload: Any) -> bytes:
    """``STDLIB.encode(payload)`` as ASCII bytes, the same bytes with or without orjson."""
    if orjson is not None:
        try:
            out = orjson.dumps(payload, default=_refuse, option=_OPTIONS)
        except orjson.JSONEncodeError:
            pass
        else:
            if (out.isascii() and b"\x7f" not in out and (b"+" not in out or b"e+" not in out)
                    and not any(marker in out for marker in _MAY_DIFFER)):
                return out
    return STDLIB.encode(payload).encode("ascii")
