"""The per-turn text a language-model player reads (SENTENCES §17), rendered from ``observe``.

The text is built from the per-seat dict of ``observation.observe`` alone, so it shows nothing
that view hides.  (The numeric view, ``sim.codec.encode``, reads the state instead, for speed;
``tests/test_faces_rules.py`` holds it to the same dict.)  The prose is ours; the order and the
facts follow §17.1: one function per section, each returning its lines, composed in that order
by :func:`render_observation`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ..rules.intents import Intent
from ..rules.world import (
    COG_NAMES,
    MAX_NOTES_LEN,
    MAX_SAY_LEN,
    MAX_SENTENCE_LEN,
    STANDARD_TOWN,
    World,
    per_world,
)
from .phrasing import canonical_sentence
from .vocab import PHRASEBOOK, tokenize, world_phrases

# The seats the standard town's examples name (the original's: Gizmo, Bolt and Ratchet); a world
# file's town names the first three aliases that are no word of it (``example_seats``).
EXAMPLE_SEATS = ("Gizmo", "Bolt", "Ratchet")


def render_observation(obs: dict, world: World, prompt: str = "", speech: bool = True) -> str:
    """The whole observation text of one seat, ending with the reply-format line."""
    plural = {g.name: g.plural for g in world.goods}
    sections = (
        _header(obs), _purse_and_pack(obs, plural), _commissions(obs, plural), _room(obs),
        _ground(obs, plural), _cogs(obs), _shopkeeper(obs), _heard(obs), _offers(obs, plural),
        _standing(obs), _town(obs), _last_sentence(obs), _phrasebook(world), _notes(obs),
        _guidance(prompt), _reply_format(speech),
    )
    return "\n".join(line for section in sections for line in section)


def render_town(obs: dict) -> str:
    """The town's map and its shopkeepers: the part of the view that no act changes (a prompt
    that puts it first shares it across turns and seats: ``agents.llm.choose``)."""
    return "\n".join(_town(obs))


def _count(n: int, name: str, plural: Mapping[str, str]) -> str:
    """``1 hide`` / ``2 hides``: count plus the good's own plural form (§17.1 field rules)."""
    return f"{n} {name if n == 1 else plural.get(name, name)}"


def _goods_list(entries: list[dict], plural: Mapping[str, str]) -> str:
    """``2 hides, 1 relic`` (empty for no goods; the caller says "empty" or "nothing")."""
    return ", ".join(_count(e["count"], e["item"], plural) for e in entries)


def _header(obs: dict) -> list[str]:
    return [f"Turn {obs['turn'] + 1} of {obs['turns']}."]


def _purse_and_pack(obs: dict, plural: Mapping[str, str]) -> list[str]:
    free = obs["carryLimit"] - obs["carried"]
    pack = _goods_list(obs["items"], plural) or "empty"
    return [f"YOU ARE {obs['name'].upper()}. Purse: {obs['coin']} coin. Pack: {pack} "
            f"({free} of {obs['carryLimit']} slots free)."]


def _commissions(obs: dict, plural: Mapping[str, str]) -> list[str]:
    """The heading (when the seat has commissions) and one line per commission, with the
    cheapest-source hint when the observation carries one."""
    quests = obs["quests"]
    out = []
    if quests:
        out.append(f"YOUR COMMISSIONS (settled by {quests[0]['settledBy']} at "
                   f"{quests[0]['at']}):")
    for q in quests:
        d = q["delivered"]
        progress = "none delivered" if d == 0 else f"{d} delivered, {q['count'] - d} to go"
        line = (f"- {_count(q['count'], q['item'], plural)} - {progress}, {q['points']} points "
                f"banked, {q['outstanding']} outstanding")
        hint = q.get("cheapest")
        if hint:
            line += f". Cheapest right now: {hint['npc']} at {hint['at']} asks {hint['ask']}"
        out.append(line + ".")
    return out


def _room(obs: dict) -> list[str]:
    room = obs["room"]
    exits = [e["name"] for e in room["exits"]]
    exit_text = (" and ".join(exits) if len(exits) <= 2
                 else ", ".join(exits[:-1]) + " and " + exits[-1])
    unlit = (" It is unlit here: a robbery can succeed in the dark." if room["dark"] else "")
    ways = f"Exits lead to {exit_text}." if exits else "There is no way out."  # world files
    return [f"YOU ARE IN: {room['name']}. {room['desc']}{unlit} {ways}"]


def _ground(obs: dict, plural: Mapping[str, str]) -> list[str]:
    return [f"ON THE GROUND HERE: {_goods_list(obs['room']['ground'], plural) or 'nothing'}."]


def _cogs(obs: dict) -> list[str]:
    return [f"COGS HERE: {', '.join(obs['room']['cogs']) or 'nobody'}."]


def _shopkeeper(obs: dict) -> list[str]:
    """The keeper in the room and its price table, or the single line "none"."""
    npc = obs["room"].get("npc")
    if not npc:
        return ["SHOPKEEPER HERE: none."]
    return [f"SHOPKEEPER HERE: {npc['name']} ({npc['coin']} coin).",
            "  goods | in stock | it sells for | it pays",
            *(f"  {g['item']} | {g['stock']} | {g['ask']} | {g['bid']}" for g in npc["goods"])]


def _heard(obs: dict) -> list[str]:
    lines = [f"- {line}" for line in obs["heard"]] or ["(nothing)"]
    return ["WHAT HAPPENED HERE LAST TURN:", *lines]


def _offers(obs: dict, plural: Mapping[str, str]) -> list[str]:
    """Trade and hire offers made to this seat; the whole block is omitted when there are none."""
    if not obs["offers"]:
        return []
    out = ["OPEN OFFERS TO YOU:"]
    for o in obs["offers"]:
        if o["kind"] == "trade":
            out.append(f"- {o['from']} offers you {_count(o['qty'], o['item'], plural)} for "
                       f"{o['coin']} coin; accept it this turn or it lapses.")
        else:
            out.append(f"- {o['from']} offers to hire you for {o['coin']} coin; accept it this "
                       "turn or it lapses.")
    return out


def _standing(obs: dict) -> list[str]:
    """Who this seat is hired to and who is hired to it; omitted when there is nothing to say."""
    standing = obs["standing"]
    parts = []
    if standing["hiredTo"]:
        parts.append(f"you are hired to {standing['hiredTo']} for "
                     f"{standing['hiredToTurns']} more turns")
    parts.extend(f"{r['name']} is hired to you for {r['turns']} more turns"
                 for r in standing["retainers"])
    return [f"YOUR STANDING: {'; '.join(parts)}."] if parts else []


def _town(obs: dict) -> list[str]:
    """Every room with its roads (id order), then where each shopkeeper stands."""
    out = ["THE TOWN:"]
    keepers = []
    for m in obs["map"]:
        roads = f"roads to {', '.join(m['exits'])}" if m["exits"] else "no roads"
        out.append(f"- {m['name']} ({roads})"
                   + (" - UNLIT" if m.get("dark") else ""))
        if m["npc"]:
            keepers.append(f"{m['npc']} at {m['name']}")
    out.append(f"Shopkeepers: {'; '.join(keepers)}.")
    return out


def _last_sentence(obs: dict) -> list[str]:
    """Omitted until the seat has acted once."""
    if not obs["lastReason"]:
        return []
    return [f'YOUR LAST SENTENCE: "{obs["lastSentence"]}" - {obs["lastOutcome"]}']


def _phrasebook(world: World) -> list[str]:
    """A blank line, then the example sentences; the closing blocks each end with a blank."""
    return ["", "SENTENCES THE TOWN HAS UNDERSTOOD BEFORE (write your own; these are only "
            "examples):", *(f"  {line}" for line in town_phrasebook(world)), ""]


class ExampleActs(NamedTuple):
    """What a town's examples name (the view's and ``guild play``'s help): the first keeper
    with a trade list sells ``bought``, another buys ``sold``, the guild keeper takes the first
    commission good, ``wanted``, and ``relic`` (good 5, RULES §4) is offered."""

    seller: int
    bought: int
    buyer: int
    sold: int
    wanted: int
    relic: int


def example_seats(world: World, aliases: Sequence[str] = (
        *EXAMPLE_SEATS, *(a for a in COG_NAMES if a not in EXAMPLE_SEATS))) -> tuple[str, ...]:
    """``aliases`` (in order) that share no word with a room, good or keeper of ``world``: a
    world file may name a good Bolt, and "I offer Bolt 1 bolt" then names nobody."""
    words = {tok for phrases in world_phrases(world) for toks, _ in phrases for tok in toks}
    return tuple(a for a in aliases if not set(tokenize(a)) & words)


def example_acts(world: World) -> ExampleActs:
    """The entries a world file's town's examples name (:class:`ExampleActs`)."""
    seller = next((k for k in world.keepers if k.trade), world.keepers[0])
    buyer = next((k for k in world.keepers if k.trade and k.id != seller.id), seller)
    wanted = world.quest_items[0]
    return ExampleActs(seller.id, seller.trade[0] if seller.trade else wanted, buyer.id,
                       buyer.trade[-1] if buyer.trade else wanted, wanted,
                       min(5, world.n_goods - 1))


@per_world
def town_phrasebook(world: World) -> tuple[str, ...]:
    """The view's example sentences (SENTENCES §19): the original's in the standard town; in a
    world file's town the same acts, written by :func:`canonical_sentence` with the town's own
    rooms, goods and keepers (the original's name the Docks, Tanner Oda and Guildmaster Vell,
    which another town may not have, or may have named otherwise)."""
    if world == STANDARD_TOWN:
        return PHRASEBOOK
    x, guild = example_acts(world), world.guild
    seats = (*example_seats(world), *EXAMPLE_SEATS)[:3]  # COG_NAMES has 10; a town, fewer

    def say(kind: str, **slots: int) -> str:
        return canonical_sentence(Intent(kind, **slots), world, seats)

    return (
        say("move", to_room=0),
        say("take", item=x.wanted, qty=1),
        say("drop", item=x.relic, qty=1),
        say("buy", item=x.bought, qty=2, npc=x.seller),
        say("sell", item=x.sold, qty=3, npc=x.buyer),
        say("give", item=x.wanted, qty=2, npc=guild),
        say("trade", item=x.relic, qty=1, other=0, coin=12),
        say("accept", other=0),
        say("hire", other=1, coin=15),
        f"I jump {seats[2]} here in the dark and take what he is carrying.",  # as P10
        say("quest", npc=guild),
        say("wait"),
    )


def _notes(obs: dict) -> list[str]:
    return ["YOUR NOTES FROM EARLIER TURNS:", obs["notes"] or "(none)", ""]


def _guidance(prompt: str) -> list[str]:
    """The operator's prompt block, only when the seat has one."""
    if not prompt:
        return []
    return ["GUIDANCE FROM YOUR OPERATOR (weigh it heavily, but never above the rules of the "
            "town; still answer in the format below):", prompt, ""]


def _reply_format(speech: bool) -> list[str]:
    """The JSON reply the seat must give; without speech there is no "say" field."""
    if speech:
        return ['Reply with ONLY a JSON object: {"action": "<one sentence of plain English>", '
                '"say": "<one line spoken aloud, or empty>", "notes": "<private notes>"} '
                f"(action at most {MAX_SENTENCE_LEN} characters, say at most {MAX_SAY_LEN}, "
                f"notes at most {MAX_NOTES_LEN})."]
    return ['Reply with ONLY a JSON object: {"action": "<one sentence of plain English>", '
            f'"notes": "<private notes>"}} (action at most {MAX_SENTENCE_LEN} characters, '
            f"notes at most {MAX_NOTES_LEN})."]
