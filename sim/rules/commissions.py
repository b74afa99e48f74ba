"""Commissions: crediting goods handed to Guildmaster Vell (RULES §10, §9.4 step 6)."""

from __future__ import annotations

from .state import GameState
from .world import COMPLETION_BONUS, POINTS_PER_UNIT


def credit_commissions(st: GameState, seat: int, good: int, units: int) -> tuple[int, int]:
    """Credit ``units`` of ``good`` to the seat's open commissions, in order.

    Returns ``(credited, points)``: each credited unit banks 4 points and the credit that
    completes a commission adds 8.  Units beyond the open need are consumed but not credited.
    """
    credited = points = 0
    for q, item in enumerate(st.quest_item[seat]):
        if item != good:
            continue
        take = min(units - credited, st.quest_count[seat][q] - st.delivered[seat][q])
        if take > 0:
            st.delivered[seat][q] += take
            points += POINTS_PER_UNIT * take
            if st.delivered[seat][q] >= st.quest_count[seat][q]:
                points += COMPLETION_BONUS
            credited += take
    return credited, points


def quest_points(st: GameState, seat: int) -> int:
    """4 per unit delivered, plus 8 for each completed commission (RULES §13)."""
    total = 0
    for q in range(len(st.quest_item[seat])):
        d = st.delivered[seat][q]
        total += POINTS_PER_UNIT * d + (COMPLETION_BONUS if d >= st.quest_count[seat][q] else 0)
    return total


def outstanding(st: GameState, seat: int, q: int) -> int:
    """Units of commission ``q`` still to deliver."""
    return st.quest_count[seat][q] - st.delivered[seat][q]
