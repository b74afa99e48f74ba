"""Event records in their JSON form, and salience (RULES §15.1-15.3).

Events are kept as plain dicts in the JSON form of §15.2 (keys with blank defaults omitted), the
form replays, leagues and the golden episodes use.
"""

from __future__ import annotations

from .outcome import Outcome


def salience(kind: str, reason: str, npc: int, qty: int, coin: int, item: int,
             say: str) -> int:
    """How interesting an act is to a spectator, 0..100 (§15.3)."""
    ok = reason == "ok"
    if kind == "rob":
        if ok:
            return 100
        return 80 if reason in ("robbery_failed", "nothing_to_take") else 5
    if kind == "give":
        if not ok:
            return 5
        if npc >= 0:  # always a Vell delivery: coin carries points
            return 90 if coin > 4 * max(qty, 1) else 60
        return 35
    if kind == "accept":
        if not ok:
            return 5
        return 70 if item < 0 else 65
    if kind in ("buy", "sell"):
        if not ok:
            return 5
        return 45 if coin >= 20 else 25
    if kind in ("trade", "hire"):
        return 40 if ok else 5
    if kind == "say":
        return 30 if len(say) > 40 else 20
    if kind in ("take", "drop", "quest"):
        return 15 if ok else 5
    if kind == "move":
        return 10 if ok else 5
    return 5


def act_event(turn: int, a: Outcome, sentence: str, say: str, notes: str, scripted: bool) -> dict:
    """An ``act`` event in JSON form: optional keys only when they differ from the blanks."""
    ev = {"kind": "act", "turn": turn, "seat": a.seat, "order": a.order, "intent": a.kind,
          "room": a.room, "reason": a.reason,
          "salience": salience(a.kind, a.reason, a.npc, a.qty, a.coin, a.item, say),
          "scripted": scripted}
    if a.to_room >= 0:
        ev["toRoom"] = a.to_room
    if a.item >= 0:
        ev["item"] = a.item
    if a.qty != 0:
        ev["qty"] = a.qty
    if a.npc >= 0:
        ev["npc"] = a.npc
    if a.other >= 0:
        ev["other"] = a.other
    if a.coin != 0:
        ev["coin"] = a.coin
    if sentence:
        ev["sentence"] = sentence
    if say:
        ev["say"] = say
    if notes:
        ev["text"] = notes
    return ev


def turn_event(snap: dict) -> dict:
    """A ``turn`` event around a snapshot (§15.2)."""
    ev = {"kind": "turn"}
    ev.update(snap)
    return ev


def end_event(turn: int, reason: str) -> dict:
    return {"kind": "end", "turn": turn, "text": reason}
