"""Prices that move with stock (RULES §7).

A shop asks its good's base value at the reference stock of 6, one coin more for each unit it
is short and one less for each unit over, clamped to [max(2, base // 2), 3 * base]; it bids two
thirds of its ask.  Multi-unit deals walk this table one unit at a time (see ``resolve``).
"""

from __future__ import annotations

REF_STOCK = 6
PRICE_STEP = 1
STOCK_CAP = 12


def ask_at(base: int, stock: int) -> int:
    """What a shop holding ``stock`` units charges for one more.

    >>> [ask_at(6, s) for s in (0, 6, 8, 12)]
    [12, 6, 4, 3]
    """
    return max(max(2, base // 2), min(base + PRICE_STEP * (REF_STOCK - stock), base * 3))


def bid_at(base: int, stock: int) -> int:
    """What a shop holding ``stock`` units pays for one more.

    >>> [bid_at(8, s) for s in (6, 7)]
    [5, 4]
    """
    return max(1, ask_at(base, stock) * 2 // 3)
