"""The choosing mode of a language-model seat: it picks one of its admissible acts.

In the free-sentence mode (``agents.llm.prompt``) a model writes its own sentence, which the
town may not understand. Here the model is shown the seat's admissible acts, the rows of the
action table whose legal-mask bit is set, each as its canonical sentence (which parses back to
that row's act), numbered from 1, and answers with a number. The reply is constrained where the
server can constrain it (a llama.cpp GBNF grammar from :func:`choice_grammar`, or a JSON schema
with an ``enum`` from :func:`choice_schema`) and checked here always (:func:`parse_choice`), so
a choice that is played is always legal.

What it cannot do: the action table's offers and hires are at its fixed prices, and it buys,
sells, picks up, drops and hands over at most two units a turn; a model that needs another
price or three units writes sentences (the free mode).

The prompt is built for a small model that reads slowly: the stable part comes first (a short
rule summary and the town's map, the same for every seat and turn of an episode, so a server
that reuses the longest evaluated prefix reads it once), then the seat's compact view and its
choices. Pure text in and out, like ``agents.llm.prompt``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from agents.llm.prompt import clean
from sim import Game
from sim.codec.action_table import canonical, legal_mask, semantic, to_intent
from sim.language.parser import parse
from sim.language.textview import render_town
from sim.rules.world import (
    COMPLETION_BONUS,
    FINE_COIN,
    MAX_NOTES_LEN,
    MAX_SAY_LEN,
    POINT_VALUE,
    POINTS_PER_UNIT,
    SEATS,
)

MODES = ("free", "admissible")
# The longest reply worth reading: ``{"action": 123, "say": "<160>", "notes": "<600>"}`` with
# every character escaped as \uXXXX. Longer text is not parsed (a hostile endpoint).
MAX_REPLY_CHARS = 6 * (MAX_SAY_LEN + MAX_NOTES_LEN) + 64
# At most 9 digits: int() of thousands of digits raises (Python's limit on int strings).
_ACTION = re.compile(r'\{\s*"action"\s*:\s*(?:(-?\d{1,9})\s*[,}]|("(?:[^"\\]|\\.)*"))')
_LEADING_NUMBER = re.compile(r"\s*(\d{1,9})(?!\d|\.\d)")  # not 2.5


@dataclass(frozen=True)
class Choice:
    """A usable reply: the chosen act (1-based number and sentence), what to say, notes."""

    number: int
    action: str
    say: str = ""
    notes: str = ""


def admissible(game: Game, seat: int) -> list[str]:
    """The seat's legal acts as canonical sentences, in action-table order (the choices)."""
    st = game.state
    room = st.room[seat]
    return [canonical(i, game.world, st.aliases, seat, room)
            for i, ok in enumerate(legal_mask(st, seat)) if ok]


def choice_number(game: Game, seat: int, action: str) -> int | None:
    """The 1-based number among the seat's choices of the act the sentence ``action`` reads
    as now, or None when it is none of them (the free mode's counterpart of a choice; a legal
    act outside the table, such as buying three units, is none of them)."""
    st = game.state
    room = st.room[seat]
    intent = parse(game.world, st.aliases, seat, room, st.offers, game.turn, action)
    if intent.kind == "none":
        return None
    want = semantic(intent)
    rows = [i for i, ok in enumerate(legal_mask(st, seat)) if ok]
    for k, i in enumerate(rows, 1):
        if semantic(to_intent(i, game.world, seat, room)) == want:
            return k
    return None


def is_admissible(game: Game, seat: int, action: str) -> bool:
    """Whether the sentence ``action`` reads as one of the seat's legal rows now."""
    return choice_number(game, seat, action) is not None


def label(sentence: str, keeper: str = "") -> str:
    """A choice as the prompt lists it: the canonical sentence without its "I " and its full
    stop, and without the keeper a buy or sell names (there is one keeper in a room)."""
    text = sentence.removeprefix("I ").removesuffix(".")
    if keeper:
        for verb, link in (("buy ", " from "), ("sell ", " to ")):
            if text.startswith(verb) and text.endswith(f"{link}{keeper}"):
                return text[:-len(link) - len(keeper)]
    return text


def choose_system_prompt(game: Game, prompt: str = "",
                         extras: tuple[str, ...] = ("say", "notes")) -> str:
    """The system message: rules in brief, the town and the answer's form; the same for all
    six seats and every turn of an episode, so every request shares it as a prefix.

    ``extras`` are the optional fields the answer may add (:func:`extras_for`); ``prompt``
    (the operator's guidance) follows: stable across turns too.
    """
    w = game.world
    guild = w.keepers[w.guild]
    dark = [r.name for r in w.rooms if r.dark]
    meaning = {"say": '"say" (heard in your room next turn)',
               "notes": '"notes" (private, shown back to you)'}
    talk = f"; you may add {' and '.join(meaning[x] for x in extras)}" if extras else ""
    lines = [
        f"You play one of {SEATS} traders in a town for {game.config.turns} turns. Each turn "
        "you choose ONE act from a numbered list of the acts open to you.",
        f"Score: your coin, plus the value of goods you carry, plus {POINT_VALUE} x your "
        f"commission points. Hand commission goods to {guild.name} for {POINTS_PER_UNIT} "
        f"points a unit, {COMPLETION_BONUS} more for a whole commission.",
        "Shops ask more for goods they are short of and pay about two thirds of their ask.",
        f"Robbery works only in the dark ({', '.join(dark) or 'nowhere'}); elsewhere the robber "
        f"pays the victim {FINE_COIN} coins. A hired cog beside you guards you.",
        render_town(game.observe(0)),
        f'Answer with JSON: {{"action": N}}, N the number of your choice{talk}.',
    ]
    if prompt:
        lines += ["GUIDANCE FROM YOUR OPERATOR:", prompt]
    return "\n".join(lines)


def shown_labels(game: Game, seat: int, choices: list[str]) -> list[str]:
    """The choices as the prompt lists them (:func:`label`, the keeper here dropped)."""
    w = game.world
    keeper = w.keeper_in_room[game.state.room[seat]]
    name = w.keepers[keeper].name if keeper >= 0 else ""
    return [label(c, name) for c in choices]


def choose_user_prompt(game: Game, seat: int, choices: list[str],
                       shown: list[str] | None = None) -> str:
    """The seat's view in brief, then its numbered choices, one kind of act a line (``shown``:
    their :func:`shown_labels`, when the caller has them)."""
    if shown is None:
        shown = shown_labels(game, seat, choices)
    return "\n".join([*terse_view(game.observe(seat), game.world), "YOUR CHOICES:",
                      *choice_lines(shown)])


def choice_lines(labels: list[str]) -> list[str]:
    """Numbered labels, one line per verb. Neighbours that differ only in one number (a price,
    a fee, a count) share an entry, their numbers and choice numbers joined by "/":
    ``offer Gizmo 1 salt for 9/11/13/17 coins: 26/27/28/29``. Fewer tokens for a slow reader."""
    entries: list[tuple[list[str], int, list[str], list[int]]] = []  # words, slot, values, ks
    for k, text in enumerate(labels, 1):
        words = text.split(" ")
        if entries:
            prev, slot, values, ks = entries[-1]
            diff = [i for i, (a, b) in enumerate(zip(prev, words)) if a != b] \
                if len(prev) == len(words) else []
            if len(diff) == 1 and words[diff[0]].isdigit() and prev[diff[0]].isdigit() \
                    and slot in (-1, diff[0]):
                entries[-1] = (prev, diff[0], [*values, words[diff[0]]], [*ks, k])
                continue
        entries.append((words, -1, [], [k]))
    lines: list[str] = []
    verb = ""
    for words, slot, values, ks in entries:
        if slot < 0:
            entry = f"{ks[0]} {' '.join(words)}"
        else:
            shown = [*words[:slot], "/".join([words[slot], *values]), *words[slot + 1:]]
            entry = f"{' '.join(shown)}: {'/'.join(map(str, ks))}"
        if lines and words[0] == verb:
            lines[-1] += f" | {entry}"
        else:
            lines.append(entry)
        verb = words[0]
    return lines


def terse_view(obs: dict, world) -> list[str]:
    """The facts of the text view (SENTENCES §17) a chooser needs, in few tokens: turn, purse
    and pack, commissions, the room (ground, cogs, the keeper's table), what was heard, offers,
    standing, the last act's outcome and the notes. The exits are in the choices."""
    plural = {g.name: g.plural for g in world.goods}

    def goods(entries: list[dict]) -> str:
        return ", ".join(f"{e['count']} {e['item'] if e['count'] == 1 else plural[e['item']]}"
                         for e in entries)

    room = obs["room"]
    free = obs["carryLimit"] - obs["carried"]
    out = [f"Turn {obs['turn'] + 1} of {obs['turns']}. You are {obs['name']}: "
           f"{obs['coin']} coin, pack {goods(obs['items']) or 'empty'} ({free} free)."]
    if obs["quests"]:
        out.append("Commissions: " + "; ".join(
            f"{q['count']} {plural[q['item']]}, {q['delivered']} handed in"
            + (f" (cheapest: {q['cheapest']['npc']} asks {q['cheapest']['ask']})"
               if q.get("cheapest") else "") for q in obs["quests"]) + ".")
    here = [f"Here: {room['name']}" + (" (dark)" if room["dark"] else "")]
    if room["ground"]:
        here.append(f"on the ground {goods(room['ground'])}")
    if room["cogs"]:
        here.append(f"cogs {', '.join(room['cogs'])}")
    out.append("; ".join(here) + ".")
    npc = room.get("npc")
    if npc:
        out.append(f"{npc['name']} ({npc['coin']} coin) sells/buys: " + "; ".join(
            f"{g['item']} {g['ask']}/{g['bid']} ({g['stock']} left)" for g in npc["goods"])
            + ".")
    if obs["heard"]:
        out.append("Heard: " + " ".join(obs["heard"]))
    for o in obs["offers"]:
        if o["kind"] == "trade":
            out.append(f"Offer: {o['from']} sells you {o['qty']} {o['item']} for {o['coin']}.")
        else:
            out.append(f"Offer: {o['from']} would hire you for {o['coin']}.")
    standing = obs["standing"]
    if standing["hiredTo"]:
        out.append(f"You are hired to {standing['hiredTo']} ({standing['hiredToTurns']} "
                   "turns).")
    for r in standing["retainers"]:
        out.append(f"{r['name']} is hired to you ({r['turns']} turns).")
    if obs["lastReason"]:
        out.append(f"Last turn: {label(obs['lastSentence'])} - {obs['lastOutcome']}")
    if obs["notes"]:
        out.append(f"Your notes: {obs['notes']}")
    return out


def extras_for(talk: bool, speech: bool) -> tuple[str, ...]:
    """The optional fields a choosing answer offers: none without ``talk``, and no ``say`` in
    a game without speech."""
    if not talk:
        return ()
    return ("say", "notes") if speech else ("notes",)


def choice_schema(n: int, extras: tuple[str, ...] = ("say", "notes")) -> dict:
    """A JSON schema whose ``action`` is one of 1..n, then the optional ``extras``."""
    props: dict = {"action": {"type": "integer", "enum": list(range(1, n + 1))}}
    props.update({x: {"type": "string"} for x in extras})
    return {"type": "object", "properties": props, "required": ["action"],
            "additionalProperties": False}


def choice_grammar(n: int, extras: tuple[str, ...] = ("say", "notes")) -> str:
    """A GBNF grammar (llama.cpp) for ``{"action": K}`` with K in 1..n, the action first, then
    each of the optional ``extras``: the server cannot sample anything else."""
    numbers = " | ".join(f'"{k}"' for k in range(n, 0, -1))
    tail = "".join(f' ( ", \\"{x}\\": " str )?' for x in extras)
    rules = [f'root ::= "{{\\"action\\": " number{tail} "}}"', f"number ::= {numbers}"]
    if extras:
        rules.append('str ::= "\\"" ( [^"\\\\\\x00-\\x1f] | "\\\\" ["\\\\/bfnrt] )* "\\""')
    return "\n".join(rules)


def parse_choice(text: str, choices: list[str], shown: list[str] | None = None,
                 extras: tuple[str, ...] = ("say", "notes")) -> tuple[Choice | None, str]:
    """``(Choice, "")`` for a usable reply, else ``(None, why)``; never raises.

    Usable: a JSON object whose ``action`` is a number in 1..len(choices) or one of the
    choices verbatim (as the sentence, or as ``shown``, the labels the prompt listed; case and
    outer spaces aside); a reply cut off after a complete action (``{"action": 3,`` ...); or,
    from an endpoint without a format, a reply that starts with such a number. The ``extras``
    the answer may add (``say``, ``notes``) count only from a whole object, cleaned and capped;
    others are dropped.
    """
    if not isinstance(text, str):
        return None, "the reply is not text"
    if len(text) > MAX_REPLY_CHARS:
        text = text[:MAX_REPLY_CHARS]
    obj: dict = {}
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        try:
            parsed = json.loads(text[start:end + 1])
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict):
            obj = parsed
    if "action" in obj:
        raw = obj["action"]
    elif (m := _ACTION.search(text)) is not None:
        raw = int(m.group(1)) if m.group(1) is not None else _json_string(m.group(2))
    elif start < 0 and (m := _LEADING_NUMBER.match(text)) is not None:
        raw = int(m.group(1))
    else:
        return None, "no action in the reply"
    number = _number_of(raw, choices, shown or [])
    if number is None:
        return None, f"the action {str(raw)[:40]!r} is not one of the {len(choices)} choices"

    def text_field(key: str, cap: int) -> str:
        v = obj.get(key)
        return clean(v, cap) if key in extras and isinstance(v, str) else ""

    return Choice(number, choices[number - 1], text_field("say", MAX_SAY_LEN),
                  text_field("notes", MAX_NOTES_LEN)), ""


def _json_string(quoted: str) -> str | None:
    try:
        value = json.loads(quoted)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _number_of(raw: object, choices: list[str], shown: list[str]) -> int | None:
    """The 1-based choice ``raw`` names: an int (or a digit string) in range, or a sentence
    (a choice's, with or without its "I" and full stop, or the label ``shown`` for it)."""
    if isinstance(raw, str):
        s = raw.strip()
        if s.isascii() and s.isdigit() and len(s) < 6:
            raw = int(s)
        else:
            folded = " ".join(s.split()).casefold().removesuffix(".")
            for k, c in enumerate(choices, 1):
                names = {c.casefold().removesuffix("."), label(c).casefold()}
                if k <= len(shown):
                    names.add(shown[k - 1].casefold())
                if folded in names:
                    return k
            return None
    if isinstance(raw, bool) or not isinstance(raw, int):
        return None
    return raw if 1 <= raw <= len(choices) else None
