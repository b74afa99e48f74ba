"""Live offers between seats (RULES §5, §9.6-9.8)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Offer:
    """A posted trade or hire offer.

    ``sender`` gives ``qty`` units of ``item`` (trade) or pays the fee (hire); the acceptor
    ``to`` pays ``coin`` (trade) or receives it (hire).  It can be accepted only on turn
    ``posted_turn + 1`` and is gone at the open of ``posted_turn + 2``.
    """

    kind: str  # "trade" or "hire"
    sender: int
    to: int
    item: int
    qty: int
    coin: int
    posted_turn: int

    def to_json(self) -> dict:
        return {"kind": self.kind, "from": self.sender, "to": self.to, "item": self.item,
                "qty": self.qty, "coin": self.coin, "postedTurn": self.posted_turn}
