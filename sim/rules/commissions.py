"""Commissions: their points and crediting goods handed to Guildmaster Vell (RULES §10, §13).

The functions take a seat's commission rows (goods, counts, delivered; lists here, array rows
in the batched kernels, which call these same functions).
"""

from __future__ import annotations

from .state import GameState
from .world import COMPLETION_BONUS, POINTS_PER_UNIT


def commission_points(delivered: int, count: int) -> int:
    """4 points per unit delivered, plus 8 once the commission is complete (§10, §13).

    >>> commission_points(1, 2), commission_points(2, 2)
    (4, 16)
    """
    return POINTS_PER_UNIT * delivered + (COMPLETION_BONUS if delivered >= count else 0)


def credit(goods, counts, delivered, good: int, units: int) -> tuple[int, int]:
    """Credit ``units`` of ``good`` to the open commissions in order, updating ``delivered``.

    Returns ``(credited, points)``: the units credited and the points they bank.  Units beyond
    the open need are not credited (the caller has consumed them anyway, §9.4).
    """
    credited = points = 0
    for q in range(len(goods)):
        if goods[q] != good:
            continue
        take = min(units - credited, counts[q] - delivered[q])
        if take > 0:
            before = commission_points(delivered[q], counts[q])
            delivered[q] += take
            points += commission_points(delivered[q], counts[q]) - before
            credited += take
    return credited, points


def points_of(counts, delivered) -> int:
    """A seat's commission points: the sum over its commissions (§13)."""
    total = 0
    for q in range(len(counts)):
        total += commission_points(delivered[q], counts[q])
    return total


def credit_commissions(st: GameState, seat: int, good: int, units: int) -> tuple[int, int]:
    """:func:`credit` on a seat of the scalar state."""
    return credit(st.quest_item[seat], st.quest_count[seat], st.delivered[seat], good, units)


def quest_points(st: GameState, seat: int) -> int:
    """:func:`points_of` a seat of the scalar state."""
    return points_of(st.quest_count[seat], st.delivered[seat])


def outstanding(st: GameState, seat: int, q: int) -> int:
    """Units of commission ``q`` still to deliver."""
    return st.quest_count[seat][q] - st.delivered[seat][q]
