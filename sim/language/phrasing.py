"""Words the game writes: outcome explanations (RULES §14) and canonical sentences.

The outcome prose is ours (the spec fixes the meaning, not the wording).  A canonical sentence
is how a structured intent is shown to people and recorded in an act's ``sentence`` field.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..rules.intents import Intent
from ..rules.world import QTY_ALL, World

# {room} is the seat's start-of-turn room name for the reasons that mention it.
OUTCOMES = {
    "ok": "understood.",
    "waited": "you waited and watched.",
    "unparsed": "the town could make nothing of it.",
    "no_verb": "it names no action the town knows; say what you do.",
    "no_target": "an action, but nothing to do it to.",
    "ambiguous_target": "it names two things at once and the town cannot tell which.",
    "no_such_exit": "there is no road from {room} to that place.",
    "no_such_item": "none of that is lying here.",
    "not_carrying": "you are not carrying that.",
    "carry_limit": "your pack is full; you can carry 8 goods.",
    "no_npc_here": "there is no such shopkeeper in {room}.",
    "not_wanted": "that shopkeeper does not deal in it.",
    "out_of_stock": "that shopkeeper has none to sell.",
    "cannot_afford": "you do not have enough coin.",
    "npc_broke": "the shopkeeper is out of coin.",
    "no_matching_commission": "no open commission of yours wanted that, and the goods are gone.",
    "no_such_cog": "there is no cog of that name in town.",
    "not_in_room": "that cog is not here in {room}.",
    "self_target": "you cannot do that to yourself.",
    "no_such_offer": "no such offer is open to you this turn.",
    "offer_expired": "the offer could not be settled: somebody could no longer pay or deliver.",
    "bound_by_contract": "you are hired to that cog and cannot rob it.",
    "robbery_failed": "the attempt failed.",
    "nothing_to_take": "there was nothing worth taking.",
    "thievery_forbidden": "the watch is everywhere; nobody robs in this town.",
    "rejected": "the action was refused, so you waited.",
}


def outcome_text(reason: str, room_name: str) -> str:
    """The plain-English explanation a seat reads next turn beside its last sentence."""
    return OUTCOMES.get(reason, reason).format(room=room_name)


def _goods(world: World, item: int, qty: int) -> str:
    if qty >= QTY_ALL:
        return f"all the {world.goods[item].plural}"
    return world.item_name(item, qty)


def canonical_sentence(it: Intent, world: World, aliases: Sequence[str]) -> str:
    """One plain sentence for a structured intent; the parser reads it back as the same act.

    A keeper slot left empty (no keeper in the room) names nobody, so the sentence fails at
    parse time exactly as the structured intent fails its checks (``sim.rules.checks``).
    """
    k = it.kind
    goods = _goods(world, it.item, it.qty) if it.item >= 0 else ""
    keeper = world.keepers[it.npc].name if it.npc >= 0 else ""
    cog = aliases[it.other] if it.other >= 0 else ""
    if k == "move":
        return f"I walk to {world.rooms[it.to_room].name}." if it.to_room >= 0 else "I walk."
    if k == "take":
        return f"I pick up {goods}."
    if k == "drop":
        return f"I drop {goods}."
    if k == "buy":
        return f"I buy {goods} from {keeper}." if keeper else f"I buy {goods}."
    if k == "sell":
        return f"I sell {goods} to {keeper}." if keeper else f"I sell {goods}."
    if k == "give":
        gift = " and ".join(p for p in (goods, f"{it.coin} coins" if it.coin > 0 else "") if p)
        target = keeper or cog
        return f"I hand {target} {gift}." if target else f"I hand over {gift}."
    if k == "trade":
        return f"I offer {cog} {goods} for {it.coin} coins."
    if k == "accept":
        return f"I accept {cog}'s offer." if cog else "I accept the offer."
    if k == "hire":
        return f"I hire {cog} for {it.coin} coins."
    if k == "rob":
        return f"I rob {cog}."
    if k == "say":
        return f'I say "{it.text}"'
    if k == "quest":
        return (f"I ask {keeper} about my commissions." if keeper
                else "I enquire about my commissions.")
    if k == "wait":
        return "I wait and watch the road."
    return ""
