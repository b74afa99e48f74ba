"""The result of resolving one seat's intent: the body of an ``act`` event (RULES §9, §15.1)."""

from __future__ import annotations

from .intents import Intent


class Outcome:
    """A mutable act record.

    Every resolver starts from the *blank result* of RULES §9: reason ``ok``, the parsed
    ``to_room``/``item``/``npc``/``other`` slots, ``qty`` 0 and ``coin`` 0, and overwrites only
    what its rule says.
    """

    __slots__ = ("seat", "order", "kind", "room", "to_room", "item", "qty", "npc", "other",
                 "coin", "reason")

    def __init__(self, seat: int, order: int, room: int, it: Intent) -> None:
        self.seat = seat
        self.order = order
        self.kind = it.kind
        self.room = room
        self.to_room = it.to_room
        self.item = it.item
        self.qty = 0
        self.npc = it.npc
        self.other = it.other
        self.coin = 0
        self.reason = "ok"
