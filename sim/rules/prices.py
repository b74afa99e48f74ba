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


def buy_walk(asks, stock: int, want: int, purse: int) -> tuple[int, int]:
    """Units bought and coin spent, buying up to ``want`` units one at a time (§9.1).

    Each unit costs the ask at the stock left before it (the ask rises as the stock falls);
    the walk stops when the purse cannot cover the next unit.  ``asks`` is the good's row of
    asks by stock, ``want`` at most ``stock``.  The batched kernels call this same function.

    >>> buy_walk([ask_at(6, s) for s in range(13)], 6, 3, 20)
    (2, 13)
    """
    units = spent = 0
    while units < want:
        price = asks[stock - units]
        if purse - spent < price:
            break
        spent += price
        units += 1
    return units, spent


def sell_walk(bids, stock: int, want: int, till: int) -> tuple[int, int]:
    """Units sold and coin earned, selling up to ``want`` units one at a time (§9.2).

    Each unit fetches the bid at the shop's stock before it; every unit sold raises the stock
    by one, up to :data:`STOCK_CAP`; the walk stops when the shop's coin (``till``) cannot pay
    the next unit.

    >>> sell_walk([bid_at(8, s) for s in range(13)], 6, 3, 100)
    (3, 13)
    """
    units = earned = 0
    while units < want:
        price = bids[min(stock + units, STOCK_CAP)]
        if till - earned < price:
            break
        earned += price
        units += 1
    return units, earned
