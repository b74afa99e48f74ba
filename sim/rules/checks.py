"""Per-intent checks and defaults for intents built by hand (SENTENCES §12, RULES §8 step 8).

A structured intent skips the parser but not its checks: a ``buy`` naming no keeper gets the
room's keeper, a ``hire`` with no fee offers 1 coin, an ``accept`` naming nobody takes the one
live offer, and an intent missing its target becomes ``none`` with the parser's reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .errors import IntentError
from .intents import Intent
from .offers import Offer
from .world import SEATS, World


def validate_ids(it: Intent, world: World, where: str) -> None:
    """Refuse ids beyond the town's tables (a caller mistake, not an outcome)."""
    for name, value, n in (("to_room", it.to_room, world.n_rooms),
                           ("item", it.item, world.n_goods),
                           ("npc", it.npc, world.n_keepers), ("other", it.other, SEATS)):
        if value >= n:
            raise IntentError(f"{where}.{name} must be -1 or below {n}; got {value}")


def check_structured(it: Intent, world: World, seat: int, room: int,
                     offers: Sequence[Offer], turn: int) -> Intent:
    """Apply the parser's per-intent checks to a hand-built intent."""
    kind = it.kind

    def fail(reason: str) -> Intent:
        return _with(it, kind="none", reason=reason)

    if kind == "move" and it.to_room < 0:
        return fail("no_target")
    if kind in ("take", "drop") and it.item < 0:
        return fail("no_target")
    if kind in ("buy", "sell", "quest"):
        if kind != "quest" and it.item < 0:
            return fail("no_target")
        if it.npc < 0:
            npc = world.keeper_in_room[room]
            if npc < 0:
                return fail("no_npc_here" if kind == "quest" else "no_target")
            it = _with(it, npc=npc)
    if kind == "give":
        if it.other == seat:
            it = _with(it, other=-1)
        if it.npc < 0 and it.other < 0:
            return fail("no_target")
        if it.item < 0 and it.coin <= 0:
            return fail("no_target")
    if kind in ("trade", "hire", "rob"):
        if it.other < 0:
            return fail("no_such_cog")
        if it.other == seat:
            return fail("self_target")
        if kind == "trade" and it.item < 0:
            return fail("no_target")
        if kind == "hire" and it.coin <= 0:
            it = _with(it, coin=1)
    if kind == "accept":
        if it.other == seat:
            it = _with(it, other=-1)
        if it.other < 0:
            live = [o for o in offers if o.to == seat and o.posted_turn == turn - 1]
            if len(live) != 1:
                return fail("no_such_offer")
            it = _with(it, other=live[0].sender)
    return it


def _with(it: Intent, **changes) -> Intent:
    return replace(it, **changes)
