"""What ``guild play`` tells a person: a compact turn, this turn's legal sentences, the guide,
and why a typed sentence cannot be used.

The language-model text view (``Game.observation_text``) is written for a model: the whole
town, twelve example sentences and a JSON reply format every turn.  A person needs the news and
the room.  Everything here is built from what the seat may see: ``Game.observe(seat)`` (the
dict that view is built from, so nothing hidden from the seat can show) and the environments'
legal mask (``sim.codec.action_table.legal_mask``), which reads only the seat's view too.  A
typed sentence is judged by the game's own parser and then by that mask, so ``guild play``
refuses exactly what an environment's agent could not choose.
"""

from __future__ import annotations

import difflib
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sim import Game, Intent
from sim.codec.action_table import action_table, canonical, legal_mask
from sim.language.phrasing import outcome_text
from sim.language.textview import example_acts
from sim.language.vocab import VERBS, tokenize
from sim.rules.robbery import robbery_succeeds
from sim.rules.world import (
    MAX_SENTENCE_LEN,
    POINT_VALUE,
    SCORE_SCALE,
    SEATS,
    STANDARD_TOWN,
    World,
    per_world,
)

WIDTH = 100  # the widest the text is wrapped to (a wider terminal reads long lines badly)
MIN_WIDTH = 40  # the narrowest: below it a sentence and its number no longer fit a line
MAX_HEARD = 5  # screen lines of the room's log shown in a turn; ``town`` shows it all
MAX_SUGGESTIONS = 3
SIMILAR = 0.45  # difflib ratio a suggestion of another kind of act needs
# What must not reach the terminal as it is: control characters (ESC starts the sequences that
# move the cursor, retitle the window or rewrite the screen; CR overwrites a line; C1's CSI)
# and bidirectional overrides, which reorder what follows.  Newlines lay the text out.
_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                     "\u2066-\u2069\ud800-\udfff]")

# Table blocks (``sim.codec.action_table``) under the names people use, in the order listed.
GROUPS: dict[str, str] = {
    "move": "walk", "buy": "buy", "sell": "sell", "deliver": "deliver", "take": "pick up",
    "drop": "drop", "accept": "accept", "offer": "offer", "gift": "give", "pay": "pay",
    "hire": "hire", "rob": "rob", "quest": "ask", "wait": "wait",
}
_ORDER = {block: k for k, block in enumerate(GROUPS)}


@dataclass(frozen=True)
class Move:
    """One legal act of this turn: its group (``GROUPS``), its act kind and its sentence."""

    group: str
    kind: str
    sentence: str


def inert(text: str) -> str:
    """``text`` safe to print: what a seat said or a person typed may hold escape sequences
    (a model's reply, a pasted line, a binary pipe), shown as ``\\xNN`` / ``\\uNNNN``."""
    return _UNSAFE.sub(lambda m: repr(m.group())[1:-1], text)


# --- the legal sentences ---------------------------------------------------------------------
def legal_moves(game: Game, seat: int) -> list[Move]:
    """The seat's admissible acts as sentences: the action-table rows whose mask bit is set,
    each as its canonical sentence (which parses back to the row's act), grouped in
    ``GROUPS`` order.  Numbered from 1 in this order for the person."""
    st, world = game.state, game.world
    mask = legal_mask(st, seat)
    here = st.room[seat]
    rows = [(i, a) for i, a in enumerate(action_table(world)) if mask[i]]
    rows.sort(key=lambda row: _ORDER[row[1].block])
    return [Move(GROUPS[a.block], a.kind, canonical(i, world, game.aliases, seat, here))
            for i, a in rows]


def moves_text(moves: Sequence[Move], width: int = WIDTH) -> str:
    """The numbered list, one group a paragraph, laid out in columns ``width`` wide."""
    if not moves:
        return "No legal sentence this turn."  # never: waiting is always legal
    label = max(len(m.group) for m in moves) + 2
    items = [f"{k:>3} {m.sentence}" for k, m in enumerate(moves, 1)]
    cell = max(map(len, items)) + 2  # one column width for the whole list: it lines up
    out = _wrap("This turn's legal sentences (type a number to play one, or write your own):",
                width)
    start = 0
    while start < len(moves):
        group = moves[start].group
        end = start
        while end < len(moves) and moves[end].group == group:
            end += 1
        out += columns(items[start:end], cell, width - label, f"{group:<{label}}")
        start = end
    out += _wrap('Any of them may end with | say "..." to speak as well.', width)
    return "\n".join(out)


def columns(items: Sequence[str], cell: int, width: int, first: str) -> list[str]:
    """``items`` in columns ``cell`` wide, as many as fit ``width``, row by row; the first line
    starts with ``first`` and the others with as many spaces."""
    per_line = max(1, width // cell)
    pad = " " * len(first)
    lines = []
    for k in range(0, len(items), per_line):
        row = "".join(f"{s:<{cell}}" for s in items[k:k + per_line]).rstrip()
        lines.append((first if k == 0 else pad) + row)
    return lines


# --- judging a typed sentence ----------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """What the town makes of a typed sentence: ``why`` it cannot be used ("" when it can) and
    the act ``kind`` it reads, or when it reads none the kind its first verb word names (""
    without one), which picks the suggestions."""

    why: str
    kind: str


def verb_kind(sentence: str) -> str:
    """The act kind of the first word of ``sentence`` that is a verb of the grammar (its first
    entry, guards aside: a guess, for suggestions only), or ""."""
    for token in tokenize(sentence[:MAX_SENTENCE_LEN]):
        entries = VERBS.get(token)
        if entries:
            return entries[0][0]
    return ""


def judge(game: Game, seat: int, sentence: str) -> Verdict:
    """Whether the town can use ``sentence`` this turn, and why not, in one line.

    The game's parser reads it as the turn would (one line, cut to 240 runes); an intent it
    reads is usable when a row of the action table with the same preconditions is legal by the
    environments' mask (quantities, prices and fees do not change a row's preconditions).
    """
    it, _ = game.intent_for(sentence, seat)
    view = game.observe(seat)
    if it.kind == "none":
        return Verdict(outcome_text(it.reason, view["room"]["name"]), verb_kind(sentence))
    rows = deciding_rows(it, game.world, seat, game.state.room[seat])
    if rows is None:
        return Verdict("", it.kind)
    mask = legal_mask(game.state, seat)
    if any(mask[i] for i in rows):
        return Verdict("", it.kind)
    return Verdict(why_not(it, view, game.world, game.aliases, game.config.thievery), it.kind)


@dataclass(frozen=True)
class _Key:
    """The slots of a table row that its mask bit depends on (not its quantity or coin)."""

    block: str
    to_room: int = -1
    item: int = -1
    rel: int = 0


@per_world
def _row_index(world: World) -> dict[_Key, int]:
    """Each row's key, for the one representative row of every precondition (quantity 1, the
    lowest coin or price of its block)."""
    index: dict[_Key, int] = {}
    for i, a in enumerate(action_table(world)):
        index.setdefault(_Key(a.block, a.to_room, a.item, a.rel), i)
    return index


def deciding_rows(it: Intent, world: World, seat: int, here: int) -> tuple[int, ...] | None:
    """The table rows whose mask bit decides whether ``it`` (a parsed, readable intent) can be
    played: usable when any of them is legal; () when none can be (a keeper elsewhere, a gift to
    a keeper who settles no commissions, a quantity of 0); None for speech, always usable."""
    if it.kind == "say":
        return None
    index = _row_index(world)
    keeper = world.keeper_in_room[here]
    rel = (it.other - seat) % SEATS if it.other >= 0 else 0
    keys: list[_Key] = []
    if it.kind in ("wait", "quest"):  # a parse fills incidental slots: read only those used
        if it.kind == "quest" and it.npc != keeper:
            return ()
        keys.append(_Key(it.kind))
    elif it.kind == "move":
        keys.append(_Key("move", to_room=it.to_room))
    elif it.kind in ("take", "drop"):
        keys.append(_Key(it.kind, item=it.item))
    elif it.kind in ("buy", "sell"):
        if it.npc != keeper or it.qty == 0:
            return ()
        keys.append(_Key(it.kind, item=it.item))
    elif it.kind == "give" and it.npc >= 0:
        if it.npc != keeper or it.npc != world.guild or it.item < 0 or it.qty == 0:
            return ()
        keys.append(_Key("deliver", item=it.item))
    elif it.kind == "give":
        if it.item >= 0 and it.qty > 0:
            keys.append(_Key("gift", item=it.item, rel=rel))
        if it.coin > 0:
            keys.append(_Key("pay", rel=rel))
    elif it.kind == "trade":
        keys.append(_Key("offer", item=it.item, rel=rel))
    elif it.kind in ("hire", "accept", "rob"):
        keys.append(_Key(it.kind, rel=rel))
    return tuple(index[k] for k in keys if k in index)


def why_not(it: Intent, view: Mapping, world: World, aliases: Sequence[str],
            thievery: bool) -> str:
    """The first precondition of ``it`` that fails in the seat's ``view`` (the order of the
    rules' own checks), in the words of the outcome the act would get."""
    room = view["room"]
    here = room["name"]
    held = {e["item"]: e["count"] for e in view["items"]}
    free = view["carryLimit"] - view["carried"]
    good = world.goods[it.item].name if it.item >= 0 else ""
    cog = aliases[it.other] if it.other >= 0 else ""
    npc = room.get("npc")
    named = world.keepers[it.npc].name if it.npc >= 0 else ""
    stock = {g["item"]: g for g in npc["goods"]} if npc else {}
    k = it.kind

    def said(reason: str) -> str:
        return outcome_text(reason, here)

    if k == "move":
        return said("no_such_exit")
    if k == "take":
        return said("no_such_item") if not any(
            g["item"] == good for g in room["ground"]) else said("carry_limit")
    if k in ("buy", "sell", "quest") or (k == "give" and it.npc >= 0):
        if not npc or npc["name"] != named:
            return said("no_npc_here")
        if k == "buy":
            return _why_not_buy(it, npc, stock.get(good), good, free, view["coin"])
        if k == "sell":
            if good not in stock:
                return said("not_wanted")
            if not held.get(good):
                return said("not_carrying")
            if it.qty == 0:
                return "you would sell nothing (a quantity of 0)."
            return said("npc_broke")
        if k == "give":
            return _why_not_deliver(it, world, good, held)
    if k in ("give", "trade", "hire", "rob") and cog not in room["cogs"]:
        return said("not_in_room")
    if k == "give":
        if it.coin > 0 and not (it.item >= 0 and held.get(good)):
            return said("cannot_afford")
        if it.item >= 0 and held.get(good):
            return "you would give nothing (a quantity of 0)."
        return said("not_carrying")
    if k in ("drop", "trade"):
        return said("not_carrying")
    if k == "hire":
        return said("cannot_afford")
    if k == "accept":
        return _why_not_accept(view, cog, free, here)
    if k == "rob":
        return _why_not_rob(view, cog, thievery, here)
    return "the rules would refuse it this turn."


def _why_not_buy(it: Intent, npc: Mapping, row: Mapping | None, good: str, free: int,
                 coin: int) -> str:
    if row is None:
        return f"{npc['name']} does not trade in {good}."
    if free <= 0:
        return outcome_text("carry_limit", "")
    if row["stock"] <= 0:
        return outcome_text("out_of_stock", "")
    if it.qty == 0:
        return "you would buy nothing (a quantity of 0)."
    return f"you have {coin} coin and {npc['name']} asks {row['ask']} for one {good}."


def _why_not_deliver(it: Intent, world: World, good: str, held: Mapping[str, int]) -> str:
    guild = world.keepers[world.guild].name
    if it.item < 0:
        return "shopkeepers take goods, not coin."
    if not held.get(good):
        return outcome_text("not_carrying", "")
    if it.npc != world.guild:
        return f"only {guild} settles commissions; the goods would be gone for nothing."
    if it.qty == 0:
        return "you would hand over nothing (a quantity of 0)."
    return f"no open commission of yours needs {good}; {guild} would keep it for nothing."


def _why_not_accept(view: Mapping, cog: str, free: int, here: str) -> str:
    offer = next((o for o in view["offers"] if o["from"] == cog), None)
    if offer is None:
        return outcome_text("no_such_offer", here)
    if cog not in view["room"]["cogs"]:
        return f"{cog} is no longer here, so the offer cannot be settled."
    if view["coin"] < offer["coin"]:
        return f"the offer costs {offer['coin']} coin and you have {view['coin']}."
    return f"the offer is {offer['qty']} goods and your pack has {free} free slots."


def _why_not_rob(view: Mapping, cog: str, thievery: bool, here: str) -> str:
    if not thievery:
        return outcome_text("thievery_forbidden", here)
    if view["standing"]["hiredTo"] == cog:
        return outcome_text("bound_by_contract", here)
    mine = sum(r["name"] in view["room"]["cogs"] for r in view["standing"]["retainers"])
    if not robbery_succeeds(mine, 0, view["room"]["dark"]):
        return ("the watch stops every robbery in a lit room (a failed robber pays up to 8 "
                "coin); only the unlit rooms, or hirelings at your side, give a chance.")
    return "the rules would refuse it this turn."


def suggestions(sentence: str, moves: Sequence[Move], kind: str = "",
                n: int = MAX_SUGGESTIONS) -> list[int]:
    """The numbers (from 1) of the legal sentences closest to ``sentence``: those of the same
    act kind first (any of them), then others that look alike (difflib), ``n`` at most."""
    query = _plain(sentence[:MAX_SENTENCE_LEN])
    by_text: dict[str, int] = {}
    for k, m in enumerate(moves):
        by_text.setdefault(_plain(m.sentence), k + 1)
    same = [_plain(m.sentence) for m in moves if kind and m.kind == kind]
    picked = difflib.get_close_matches(query, same, n, 0.0)
    rest = [t for t in by_text if t not in picked]
    picked += difflib.get_close_matches(query, rest, n - len(picked), SIMILAR) if (
        len(picked) < n) else []
    return [by_text[t] for t in picked]


def _plain(text: str) -> str:
    return " ".join(text.lower().rstrip(" .!").split())


def refusal_text(why: str, picks: Sequence[int], moves: Sequence[Move],
                 width: int = WIDTH) -> str:
    """Why a sentence was not played, in one line, then what might be meant, numbered as in
    the moves list (so the number plays it): on one line when it fits ``width``, else one a
    line."""
    head = f"Not played: {why}"
    if not picks:
        return head + "\n  (type moves to list this turn's legal sentences)"
    meant = [f"{k} {moves[k - 1].sentence}" for k in picks]
    one = "  did you mean: " + "   ".join(meant)
    if len(one) <= width:
        return f"{head}\n{one}"
    return "\n".join([head, "  did you mean:", *(f"    {m}" for m in meant)])


# --- the compact turn ------------------------------------------------------------------------
def turn_text(view: Mapping, before: Mapping | None, world: World, width: int = WIDTH) -> str:
    """The turn as a person reads it: what changed since the seat last chose (``before`` is its
    view then), the room, what it carries and owes, and the turn count, wrapped to ``width``
    (the terminal's).  ``view`` is ``Game.observe(seat)``; nothing else is read, so nothing
    hidden can show."""
    plural = {g.name: g.plural for g in world.goods}
    sections = (_headline(view, width), _news(view, before, plural, width),
                _place(view, plural, width), _shop(view, width),
                _purse(view, before, plural, width), _commissions(view, plural, width),
                _standing(view, width))
    return "\n".join(line for section in sections for line in section)


def _count(n: int, name: str, plural: Mapping[str, str]) -> str:
    return f"{n} {name if n == 1 else plural.get(name, name)}"


def _goods(entries: Sequence[Mapping], plural: Mapping[str, str]) -> str:
    return ", ".join(_count(e["count"], e["item"], plural) for e in entries)


def _wrap(text: str, width: int, indent: str = "  ") -> list[str]:
    return textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False)


def _headline(view: Mapping, width: int) -> list[str]:
    turn, turns = view["turn"] + 1, view["turns"]
    left = turns - view["turn"]
    return _wrap(f"Turn {turn} of {turns} ({left} {'turn' if left == 1 else 'turns'} left, "
                 f"this one included). You are {view['name']}.", width)


def last_sentence(view: Mapping, width: int = WIDTH) -> list[str]:
    """How the seat's last sentence went, wrapped to ``width``; nothing before its first."""
    if not view["lastReason"]:
        return []
    return _wrap(f'Your last sentence: "{view["lastSentence"]}" - {view["lastOutcome"]}', width)


def _news(view: Mapping, before: Mapping | None, plural: Mapping[str, str],
          width: int) -> list[str]:
    """The last outcome, the room's lines of last turn, arrivals, and offers to the seat."""
    room = view["room"]
    out = last_sentence(view, width)
    own = f"{view['name']} "  # the seat's own lines: its last sentence's line says it all
    heard = [_wrap(f"  {line}", width, "    ") for line in view["heard"]
             if not line.startswith(own)]
    if heard:
        out += _wrap(f"In {room['name']} last turn:", width)
        room_for = MAX_HEARD if sum(map(len, heard)) <= MAX_HEARD else MAX_HEARD - 1
        shown = 0
        while shown < len(heard) and len(heard[shown]) <= room_for:
            out += heard[shown]
            room_for -= len(heard[shown])
            shown += 1
        if shown < len(heard):
            out.append(f"  ... and {len(heard) - shown} more (type town to read them all).")
    if before is not None and before["room"]["id"] == room["id"]:
        came = [c for c in room["cogs"] if c not in before["room"]["cogs"]]
        if came:
            out += _wrap(f"Arrived here since your last turn: {', '.join(came)}.", width)
    offers = [_offer(o, plural) for o in view["offers"]]
    if offers:
        out += _wrap(f"Offers to you (accept this turn or they lapse): {'; '.join(offers)}.",
                     width)
    return out


def _offer(o: Mapping, plural: Mapping[str, str]) -> str:
    if o["kind"] == "trade":
        return f"{o['from']} sells you {_count(o['qty'], o['item'], plural)} for {o['coin']} coin"
    return f"{o['from']} hires you for {o['coin']} coin (3 turns)"


def _place(view: Mapping, plural: Mapping[str, str], width: int) -> list[str]:
    room = view["room"]
    exits = ", ".join(e["name"] for e in room["exits"])
    dark = " It is unlit: a robbery can succeed here." if room["dark"] else ""
    ground = _goods(room["ground"], plural) or "nothing"
    cogs = ", ".join(room["cogs"]) or "nobody"
    roads = f"Roads to {exits}." if exits else "There is no way out."  # a world file's room
    return [*_wrap(f"You are in {room['name']}.{dark} {roads}", width),
            *_wrap(f"Here: {cogs}. On the ground: {ground}.", width)]


def _shop(view: Mapping, width: int) -> list[str]:
    npc = view["room"].get("npc")
    if not npc:
        return ["No shopkeeper here."]
    goods = "; ".join(f"{g['item']} {g['stock']} in stock, sells at {g['ask']}, buys at "
                      f"{g['bid']}" for g in npc["goods"])
    return _wrap(f"{npc['name']} ({npc['coin']} coin): {goods}.", width)


def _purse(view: Mapping, before: Mapping | None, plural: Mapping[str, str],
           width: int) -> list[str]:
    change = ""
    if before is not None and before["coin"] != view["coin"]:
        change = f" ({view['coin'] - before['coin']:+d} since your last turn)"
    pack = _goods(view["items"], plural) or "nothing else"
    free = view["carryLimit"] - view["carried"]
    return _wrap(f"You carry {view['coin']} coin{change} and {pack} ({free} of "
                 f"{view['carryLimit']} pack slots free).", width)


def _commissions(view: Mapping, plural: Mapping[str, str], width: int) -> list[str]:
    """One line per commission: what it still needs, what the seat carries of it, its points
    and the cheapest-source hint when the seat has one."""
    quests = view["quests"]
    if not quests:
        return []
    held = {e["item"]: e["count"] for e in view["items"]}
    out = _wrap(f"Commissions (hand the goods to {quests[0]['settledBy']} at "
                f"{quests[0]['at']}):", width)
    for q in quests:
        want = _count(q["count"], q["item"], plural)
        left = q["count"] - q["delivered"]
        if left <= 0:
            out += _wrap(f"  {want}: done, {q['points']} points banked.", width, "    ")
            continue
        line = (f"  {want}: bring {left} more (you carry {held.get(q['item'], 0)}) for "
                f"{q['outstanding']} points")
        hint = q.get("cheapest")
        if hint:
            line += f"; cheapest: {hint['npc']} at {hint['at']}, {hint['ask']} coin"
        line += "."
        out += _wrap(line, width, "    ")
    return out


def _standing(view: Mapping, width: int) -> list[str]:
    s = view["standing"]
    parts = []
    if s["hiredTo"]:
        parts.append(f"you are hired to {s['hiredTo']} for {s['hiredToTurns']} more turns")
    parts += [f"{r['name']} is hired to you for {r['turns']} more turns"
              for r in s["retainers"]]
    return _wrap(f"Bonds: {'; '.join(parts)}.", width) if parts else []


# --- the guide -------------------------------------------------------------------------------
# (group, example, note, the act kind the example parses to); {cog} is another seat's alias.
EXAMPLES: tuple[tuple[str, str, str, str], ...] = (
    ("walk", "I walk to The Docks", "to a room a road leads to", "move"),
    ("pick up", "I pick up 2 hides", "goods on the ground; all the hides", "take"),
    ("drop", "I drop the relic", "", "drop"),
    ("buy", "I buy 2 rope from Smith Bram", "from the shopkeeper in your room", "buy"),
    ("sell", "I sell all the nails to Dockmaster Fen", "", "sell"),
    ("deliver", "I hand Guildmaster Vell 2 hides", "at The Guildhall, for a commission",
     "give"),
    ("give", "I give {cog} 1 lamp and 5 coins", "to a cog in your room", "give"),
    ("offer", "I offer {cog} 1 lamp for 12 coins", "{cog} may accept it next turn", "trade"),
    ("accept", "I accept {cog}'s offer", "an offer made to you last turn", "accept"),
    ("hire", "I hire {cog} for 10 coins", "a guard for 3 turns, once accepted", "hire"),
    ("rob", "I rob {cog}", "only in the dark: The Docks, Cutpurse Alley", "rob"),
    ("ask", "I ask Guildmaster Vell about my commissions", "who sells your goods cheapest",
     "quest"),
    ("say", 'I say "meet me at the docks"', "heard in your room next turn", "say"),
    ("wait", "I wait", "", "wait"),
)


@per_world
def town_examples(world: World) -> tuple[tuple[str, str, str, str], ...]:
    """:data:`EXAMPLES` for ``world``: the standard town's as written; in a world file's town
    the same acts with that town's rooms, goods and keepers (the standard ones name the Docks,
    Smith Bram and Guildmaster Vell, which another town may not have)."""
    if world == STANDARD_TOWN:
        return EXAMPLES
    x = example_acts(world)  # the entries the text view's examples name too
    seller, buyer = world.keepers[x.seller], world.keepers[x.buyer]
    bought, sold, wanted, relic = x.bought, x.sold, world.goods[x.wanted], world.goods[x.relic]
    guild = world.keepers[world.guild]
    dark = ", ".join(r.name for r in world.rooms if r.dark) or "no room of this town"
    first = world.rooms[0].name
    return (
        ("walk", f"I walk to {first}", "to a room a road leads to", "move"),
        ("pick up", f"I pick up 2 {wanted.plural}", f"goods on the ground; all the "
                                                    f"{wanted.plural}", "take"),
        ("drop", f"I drop the {relic.name}", "", "drop"),
        ("buy", f"I buy 2 {world.goods[bought].plural} from {seller.name}",
         "from the shopkeeper in your room", "buy"),
        ("sell", f"I sell all the {world.goods[sold].plural} to {buyer.name}", "", "sell"),
        ("deliver", f"I hand {guild.name} 2 {wanted.plural}",
         f"at {world.rooms[guild.room].name}, for a commission", "give"),
        ("give", f"I give {{cog}} 1 {relic.name} and 5 coins", "to a cog in your room", "give"),
        ("offer", f"I offer {{cog}} 1 {relic.name} for 12 coins",
         "{cog} may accept it next turn", "trade"),
        EXAMPLES[8], EXAMPLES[9],  # accept, hire: no word of the town
        ("rob", "I rob {cog}", f"only in the dark: {dark}", "rob"),
        ("ask", f"I ask {guild.name} about my commissions", "who sells your goods cheapest",
         "quest"),
        ("say", f'I say "meet me at {first}"', "heard in your room next turn", "say"),
        EXAMPLES[13],  # wait
    )


def guide_text(cog: str = "Gizmo", world: World = STANDARD_TOWN) -> str:
    """The help: the sentence forms with an example each, speech, scoring and the commands.
    ``cog`` is the alias the examples name (another seat of the game, when there is one);
    ``world`` the town whose names they use (:func:`town_examples`)."""
    out = ["Write one plain English sentence a turn; the first verb the town knows decides it."]
    for group, example, note, _ in town_examples(world):
        line = f"  {group:<8} {example.format(cog=cog)}"
        if note:
            line = f"{line:<55} ({note.format(cog=cog)})"
        out.append(line)
    spot = "the docks" if world == STANDARD_TOWN else world.rooms[0].name
    out += [
        f'A quoted part is spoken aloud: I walk to {spot} "see you there"; or after a bar:',
        f'  I walk to {spot} | say see you there; or the JSON a model writes:',
        '  {"action": "I wait", "say": "hello", "notes": "..."}',
        f"Score (as RESULTS prints it): (wealth + {POINT_VALUE} x commission points - "
        f"{world.start_coin}) / {SCORE_SCALE:g},",
        "  where wealth is your coin plus the base value of the goods you carry.",
        "Commands: moves (m) lists this turn's legal sentences, numbered; a number plays one",
        "  (7, or 7 | say hello); town (t) shows the full text view with the map; help (?) this;",
        "  quit (q, or Ctrl-D) ends the game with the results.",
    ]
    return "\n".join(out)
