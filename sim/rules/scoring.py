"""Scoring and the 11-key results object (RULES §13, the scoring page).

score = (wealth + 3 x commission points - 40) / 40: a seat that only waits scores exactly 0.0.
"""

from __future__ import annotations

from .commissions import points_of, quest_points
from .state import GameState
from .world import POINT_VALUE, SCORE_SCALE, SEATS

RESULT_KEYS = ("names", "scores", "coin", "wealth", "questPoints", "delivered", "robberies",
               "robbed", "turns", "maxTurns", "reason")


def wealth_of(coin: int, items, values) -> int:
    """Coin plus the fixed base value of every good carried (§13)."""
    total = coin
    for g in range(len(items)):
        total += values[g] * items[g]
    return total


def score_points(coin: int, items, values, counts, delivered) -> int:
    """wealth + 3 x commission points: the integer part of a score, kept by the batched engine.

    The batched kernels call this same function on array rows.
    """
    return wealth_of(coin, items, values) + POINT_VALUE * points_of(counts, delivered)


def score_of(points: int, start_coin: int) -> float:
    """The score of §13 from :func:`score_points`: 0.0 for a seat that only waits."""
    return (points - start_coin) / SCORE_SCALE


def wealth(st: GameState, seat: int) -> int:
    """:func:`wealth_of` a seat of the scalar state."""
    return wealth_of(st.coin[seat], st.items[seat], st.world.values)


def score(st: GameState, seat: int) -> float:
    """The seat's score now (§13)."""
    return score_of(score_points(st.coin[seat], st.items[seat], st.world.values,
                                 st.quest_count[seat], st.delivered[seat]), st.world.start_coin)


def results(st: GameState, names: list[str]) -> dict:
    """The platform-facing results, computed from the current state."""
    return {
        "names": list(names),
        "scores": [score(st, s) for s in range(SEATS)],
        "coin": list(st.coin),
        "wealth": [wealth(st, s) for s in range(SEATS)],
        "questPoints": [quest_points(st, s) for s in range(SEATS)],
        "delivered": [sum(st.delivered[s]) for s in range(SEATS)],
        "robberies": list(st.robberies),
        "robbed": list(st.robbed),
        "turns": st.turns_played,
        "maxTurns": st.turns,
        "reason": st.reason if st.done else "",
    }
