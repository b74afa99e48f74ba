"""The per-turn text a language-model player reads (SENTENCES §17), rendered from ``observe``.

The text and the numeric views are built from the one per-seat dict of ``observation.observe``,
so they cannot show different facts.  The prose is ours; the order and the facts follow §17.1.
"""

from __future__ import annotations

from ..rules.world import MAX_NOTES_LEN, MAX_SAY_LEN, MAX_SENTENCE_LEN, World
from .vocab import PHRASEBOOK


def render_observation(obs: dict, world: World, prompt: str = "", speech: bool = True) -> str:
    """The whole observation text of one seat, ending with the reply-format line."""
    plural = {g.name: g.plural for g in world.goods}

    def count(n: int, name: str) -> str:
        return f"{n} {name if n == 1 else plural.get(name, name)}"

    def goods_list(entries: list[dict]) -> str:
        return ", ".join(count(e["count"], e["item"]) for e in entries)

    out: list[str] = []
    add = out.append
    add(f"Turn {obs['turn'] + 1} of {obs['turns']}.")
    free = obs["carryLimit"] - obs["carried"]
    pack = goods_list(obs["items"]) or "empty"
    add(f"YOU ARE {obs['name'].upper()}. Purse: {obs['coin']} coin. Pack: {pack} "
        f"({free} of {obs['carryLimit']} slots free).")
    quests = obs["quests"]
    if quests:
        add(f"YOUR COMMISSIONS (settled by {quests[0]['settledBy']} at {quests[0]['at']}):")
    for q in quests:
        d = q["delivered"]
        progress = "none delivered" if d == 0 else f"{d} delivered, {q['count'] - d} to go"
        line = (f"- {count(q['count'], q['item'])} - {progress}, {q['points']} points "
                f"banked, {q['outstanding']} outstanding")
        hint = q.get("cheapest")
        if hint:
            line += f". Cheapest right now: {hint['npc']} at {hint['at']} asks {hint['ask']}"
        add(line + ".")
    room = obs["room"]
    exits = [e["name"] for e in room["exits"]]
    exit_text = (" and ".join(exits) if len(exits) <= 2
                 else ", ".join(exits[:-1]) + " and " + exits[-1])
    unlit = (" It is unlit here: a robbery can succeed in the dark." if room["dark"] else "")
    add(f"YOU ARE IN: {room['name']}. {room['desc']}{unlit} Exits lead to {exit_text}.")
    add(f"ON THE GROUND HERE: {goods_list(room['ground']) or 'nothing'}.")
    add(f"COGS HERE: {', '.join(room['cogs']) or 'nobody'}.")
    npc = room.get("npc")
    if npc:
        add(f"SHOPKEEPER HERE: {npc['name']} ({npc['coin']} coin).")
        add("  goods | in stock | it sells for | it pays")
        for g in npc["goods"]:
            add(f"  {g['item']} | {g['stock']} | {g['ask']} | {g['bid']}")
    else:
        add("SHOPKEEPER HERE: none.")
    add("WHAT HAPPENED HERE LAST TURN:")
    out.extend(f"- {line}" for line in obs["heard"])
    if not obs["heard"]:
        add("(nothing)")
    if obs["offers"]:
        add("OPEN OFFERS TO YOU:")
        for o in obs["offers"]:
            if o["kind"] == "trade":
                add(f"- {o['from']} offers you {count(o['qty'], o['item'])} for {o['coin']} coin; "
                    "accept it this turn or it lapses.")
            else:
                add(f"- {o['from']} offers to hire you for {o['coin']} coin; accept it this "
                    "turn or it lapses.")
    standing = obs["standing"]
    parts = []
    if standing["hiredTo"]:
        parts.append(f"you are hired to {standing['hiredTo']} for "
                     f"{standing['hiredToTurns']} more turns")
    parts.extend(f"{r['name']} is hired to you for {r['turns']} more turns"
                 for r in standing["retainers"])
    if parts:
        add(f"YOUR STANDING: {'; '.join(parts)}.")
    add("THE TOWN:")
    keepers = []
    for m in obs["map"]:
        add(f"- {m['name']} (roads to {', '.join(m['exits'])})"
            + (" - UNLIT" if m.get("dark") else ""))
        if m["npc"]:
            keepers.append(f"{m['npc']} at {m['name']}")
    add(f"Shopkeepers: {'; '.join(keepers)}.")
    if obs["lastReason"]:
        add(f'YOUR LAST SENTENCE: "{obs["lastSentence"]}" - {obs["lastOutcome"]}')
    add("")
    add("SENTENCES THE TOWN HAS UNDERSTOOD BEFORE (write your own; these are only examples):")
    out.extend(f"  {line}" for line in PHRASEBOOK)
    add("")
    add("YOUR NOTES FROM EARLIER TURNS:")
    add(obs["notes"] or "(none)")
    add("")
    if prompt:
        add("GUIDANCE FROM YOUR OPERATOR (weigh it heavily, but never above the rules of the "
            "town; still answer in the format below):")
        add(prompt)
        add("")
    if speech:
        add('Reply with ONLY a JSON object: {"action": "<one sentence of plain English>", '
            '"say": "<one line spoken aloud, or empty>", "notes": "<private notes>"} '
            f"(action at most {MAX_SENTENCE_LEN} characters, say at most {MAX_SAY_LEN}, "
            f"notes at most {MAX_NOTES_LEN}).")
    else:
        add('Reply with ONLY a JSON object: {"action": "<one sentence of plain English>", '
            f'"notes": "<private notes>"}} (action at most {MAX_SENTENCE_LEN} characters, '
            f"notes at most {MAX_NOTES_LEN}).")
    return "\n".join(out)
