"""Scoring and the 11-key results object (RULES §13, the scoring page).

score = (wealth + 3 x commission points - 40) / 40: a seat that only waits scores exactly 0.0.
"""

from __future__ import annotations

from .commissions import quest_points
from .state import GameState
from .world import POINT_VALUE, SCORE_SCALE, SEATS

RESULT_KEYS = ("names", "scores", "coin", "wealth", "questPoints", "delivered", "robberies",
               "robbed", "turns", "maxTurns", "reason")


def wealth(st: GameState, seat: int) -> int:
    """Coin plus the fixed base value of every good carried."""
    values = st.world.values
    return st.coin[seat] + sum(values[g] * n for g, n in enumerate(st.items[seat]))


def score(st: GameState, seat: int) -> float:
    return (wealth(st, seat) + POINT_VALUE * quest_points(st, seat)
            - st.world.start_coin) / SCORE_SCALE


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
