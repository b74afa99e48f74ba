"""The per-intent checks and defaults of SENTENCES §12, for parsed and hand-built intents alike.

A structured intent skips the parser but not its checks: a ``buy`` naming no keeper gets the
room's keeper, a ``hire`` with no fee offers 1 coin, an ``accept`` naming nobody takes the one
live offer, and an intent missing its target becomes ``none`` with the parser's reason.  The
parser calls :func:`check_slots` too, passing which slots its phrase matches found ambiguous,
so the order of §12 lives here once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .errors import IntentError
from .intents import PARSER_REASONS, Intent
from .offers import Offer
from .text import as_stored, cut, one_line, strip_ws, unquoted
from .world import MAX_SAY_LEN, SEATS, World

# Which of the slots (room, good, keeper, cog) the parser found ambiguous (§6).
NO_AMBIGUITY = (False, False, False, False)


def validate_ids(it: Intent, world: World, seat: int) -> None:
    """Refuse ids beyond the town's tables in seat ``seat``'s action (a caller mistake, not an
    outcome)."""
    if (it.to_room < len(world.rooms) and it.item < len(world.goods)
            and it.npc < len(world.keepers) and it.other < SEATS):
        return  # the common case, in one test
    for name, value, n in (("to_room", it.to_room, world.n_rooms),
                           ("item", it.item, world.n_goods),
                           ("npc", it.npc, world.n_keepers), ("other", it.other, SEATS)):
        if value >= n:
            raise IntentError(f"actions[{seat}].{name} must be -1 or below {n}; got {value}")


def check_slots(kind: str, to_room: int, item: int, npc: int, other: int, coin: int,
                world: World, seat: int, room: int, offers: Sequence[Offer], turn: int,
                ambiguous: tuple[bool, bool, bool, bool] = NO_AMBIGUITY
                ) -> tuple[int, int, int, str]:
    """§12 for one intent: ``(npc, other, coin, reason)`` after the defaults, ``reason`` being
    ``"ok"`` or why the intent becomes ``none``.

    ``seat`` stands in ``room``; ``offers`` and ``turn`` serve an ``accept`` naming nobody.
    """
    amb_room, amb_item, amb_npc, amb_cog = ambiguous
    reason = "ok"
    if kind == "move":
        reason = "ambiguous_target" if amb_room else "no_target" if to_room < 0 else "ok"
    elif kind == "take" or kind == "drop":
        reason = "ambiguous_target" if amb_item else "no_target" if item < 0 else "ok"
    elif kind == "buy" or kind == "sell" or kind == "quest":
        if kind != "quest" and (amb_item or item < 0):
            reason = "ambiguous_target" if amb_item else "no_target"
        elif amb_npc:
            reason = "ambiguous_target"
        elif npc < 0:
            npc = keeper_here(world, room)
            if npc < 0:
                reason = "no_npc_here" if kind == "quest" else "no_target"
    elif kind == "give":
        if amb_item or amb_npc or amb_cog:
            reason = "ambiguous_target"
        else:
            if other == seat:
                other = -1
            if (npc < 0 and other < 0) or (item < 0 and coin <= 0):
                reason = "no_target"
    elif kind == "trade" or kind == "hire" or kind == "rob":
        if amb_cog:
            reason = "ambiguous_target"
        elif other < 0:
            reason = "no_such_cog"
        elif other == seat:
            reason = "self_target"
        elif kind == "trade" and item < 0:
            reason = "no_target"
        elif kind == "hire" and coin <= 0:
            coin = 1
    elif kind == "accept":
        if amb_cog:
            reason = "ambiguous_target"
        else:
            if other == seat:
                other = -1
            if other < 0:
                other = live_offerer(offers, seat, turn)
                if other < 0:
                    reason = "no_such_offer"
    return npc, other, coin, reason


def keeper_here(world: World, room: int) -> int:
    """The keeper standing in ``room``, or -1."""
    return world.keeper_in_room[room] if 0 <= room < world.n_rooms else -1


def live_offerer(offers: Sequence[Offer], seat: int, turn: int) -> int:
    """An ``accept`` naming nobody: the sender of the one offer to ``seat`` posted last turn,
    or -1 when there is none or more than one."""
    found, count = -1, 0
    for o in offers:
        if o.to == seat and o.posted_turn == turn - 1:
            count += 1
            found = o.sender
    return found if count == 1 else -1


# What an empty hand-built ``say`` speaks: the parse of the bare sentence "I say." (§12.2)
EMPTY_SAY = "I say."


def speakable(it: Intent) -> Intent:
    """A hand-built intent as a sentence can say it, or ``IntentError``: its reason one a
    sentence is read with, its text as the rules speak it (§12.2: one line, cut to MaxSayLen),
    with quote marks as single quotes and an empty ``say`` saying ``I say.``.

    So the sentence written for it (``I say "..."``, within a stored sentence's 240 runes, §19)
    is read back as the same act, wherever the seat runs: no lifted quote holds a quote mark,
    and a ``say`` with nothing to lift speaks its whole sentence (§12.2)."""
    if it.reason != "ok" if it.kind != "none" else it.reason not in PARSER_REASONS:
        want = "one of " + ", ".join(PARSER_REASONS) if it.kind == "none" else "'ok'"
        raise IntentError(f"a hand-built {it.kind} intent's reason must be {want} (the "
                          f"reasons a sentence can be read with); got {it.reason!r}")
    spoken = strip_ws(cut(one_line(unquoted(it.text)), MAX_SAY_LEN))  # a cut may end in a blank
    if not spoken and it.kind == "say":
        spoken = EMPTY_SAY
    return it if spoken == it.text else replace(it, text=spoken)


def check_structured(it: Intent, world: World, seat: int, room: int,
                     offers: Sequence[Offer], turn: int, recorded: bool = False) -> Intent:
    """:func:`check_slots` on a hand-built intent (:func:`speakable`): the checked intent,
    ``none`` on failure. A ``recorded`` one (a replay's) is taken as it was played, its text
    one line of at most MaxSayLen as ever: replays written before :func:`speakable` still play.
    """
    if not recorded:
        it = speakable(it)
    elif not as_stored(it.text, MAX_SAY_LEN):  # as stored before: kept (a cut's blank too)
        it = replace(it, text=cut(one_line(it.text), MAX_SAY_LEN))
    npc, other, coin, reason = check_slots(it.kind, it.to_room, it.item, it.npc, it.other,
                                           it.coin, world, seat, room, offers, turn)
    if reason != "ok":
        return replace(it, kind="none", npc=npc, other=other, coin=coin, reason=reason)
    if (npc, other, coin) == (it.npc, it.other, it.coin):
        return it
    return replace(it, npc=npc, other=other, coin=coin)
