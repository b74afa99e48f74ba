"""The parser's test states (SENTENCES §16) and the shorthand its tables are written in."""

from __future__ import annotations

from typing import Any

from sim.language.parser import parse
from sim.rules.intents import Intent
from sim.rules.offers import Offer
from sim.rules.world import STANDARD_TOWN

# The states of SENTENCES §16: six aliases, everyone in one room, no offers, turn 0, seat 0.
ALIASES = ("Sprocket", "Gizmo", "Ratchet", "Widget", "Bolt", "Piston")
STATE_ROOM = {"M": 0, "R": 2, "S": 3, "G": 8}  # Market Square, Tanner's Row, Smithy, Guildhall
GIZMO_OFFER = Offer("trade", 1, 0, 4, 1, 12, 0)  # Gizmo -> Sprocket, posted on turn 0


def run(sentence: str, state: str = "M", *, seat: int = 0, offers: tuple[Offer, ...] = (),
        turn: int = 0) -> Intent:
    """Parse ``sentence`` in one of the states M/R/S/G of §16 (speaker seat 0 by default)."""
    return parse(STANDARD_TOWN, ALIASES, seat, STATE_ROOM[state], offers, turn, sentence)


def check(it: Intent, expect: dict[str, Any]) -> None:
    """Assert exactly the listed fields of ``it``."""
    got = {k: getattr(it, k) for k in expect}
    assert got == expect, f"{it!r}"


def E(kind: str | None = None, **fields: Any) -> dict[str, Any]:  # noqa: N802 - table shorthand
    """An expectation: the kind (if given) plus the listed slots."""
    return ({"kind": kind} if kind is not None else {}) | fields
