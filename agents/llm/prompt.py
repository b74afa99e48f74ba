"""What a language-model seat is told and how its answer is read (SENTENCES §18, §20.1).

Pure text in, text out: no network, so the prompt and the reply rules can be read, tested and
reused (``guild export-sft`` rebuilds the exact system message from here) apart from the HTTP
client (``agents.llm.client``) and the policy (``agents.llm.seat``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sim import Game
from sim.rules.text import no_surrogates
from sim.rules.world import (
    COMPLETION_BONUS,
    FINE_COIN,
    MAX_NOTES_LEN,
    MAX_SAY_LEN,
    MAX_SENTENCE_LEN,
    POINT_VALUE,
    POINTS_PER_UNIT,
    RETAINER_TURNS,
    SEATS,
)

ELLIPSIS = "\u2026"
ASCII_SPACE = " \t\n\r\x0b\x0c"
# The reply as a JSON schema, for endpoints that constrain their output to one (llama.cpp turns
# it into a grammar): the three keys, in the order the system message names them. No length
# bounds: llama.cpp spells ``maxLength: 600`` as 600 nested grammar rules, which makes a small
# model's every reply many times slower; :func:`clean` caps the fields anyway.
REPLY_SCHEMA: dict = {
    "type": "object",
    "properties": {"action": {"type": "string"}, "say": {"type": "string"},
                   "notes": {"type": "string"}},
    "required": ["action", "say", "notes"],
    "additionalProperties": False,
}
# The ways of asking for it, most standard first: OpenAI's (vLLM, Ollama, llama.cpp's own
# server), then llama-cpp-python's ``json_object`` with a ``schema``, then plain text.
RESPONSE_FORMATS = ("json_schema", "json_object", "none")
CORRECTIVE = ("Your previous reply was invalid. Reply with only the JSON object described above "
              "(a string \"action\" is required), with nothing before or after it.")


# --- the system message (SENTENCES §18, in our own words) --------------------------------------

def system_prompt(game: Game, seat: int) -> str:
    """The system message for ``seat``: the same for every seat except the alias (§18).

    Built from the game's town, so a variant town names its own dark rooms and guildmaster.
    The alias comes last: six seats' messages then share all but their last line, and a
    server that reuses the longest evaluated prefix (llama.cpp) reads the rules once, not six
    times a turn.
    """
    w = game.world
    alias = game.aliases[seat]
    guild = w.keepers[w.guild]
    guildhall = w.rooms[guild.room].name
    dark = [r.name for r in w.rooms if r.dark]
    dark_text = " and ".join(dark) if dark else "no room of this town"
    fee_turns = RETAINER_TURNS
    return "\n".join([
        f"You are one of {SEATS} cogs trading in a small town for "
        f"{game.config.turns} turns. You act by writing ONE sentence of plain English each "
        "turn. There is no menu of moves: the town reads your sentence and decides whether the "
        "act happened.",
        "",
        "Each turn you do exactly one thing. The town understands: going to a neighbouring "
        "place; picking something up from the ground or dropping it; buying from or selling to "
        "the shopkeeper in your room; handing goods to a shopkeeper; offering another cog a "
        "trade of goods for coin; accepting an offer made to you last turn; hiring another cog; "
        "robbing another cog; asking a shopkeeper about your commissions; speaking; and "
        "waiting. Name the thing, the place or the cog plainly.",
        "",
        "A sentence the town cannot read costs you the turn, and next turn you are told why. "
        "Nothing else punishes it.",
        "",
        "You can act only on what is in your room. You never see other rooms, nor other cogs' "
        "goods or coin.",
        "",
        "Prices follow stock: a shop asks more for what it is short of, pays about two thirds "
        "of its asking price, buys only the goods it deals in, and can run out of coin.",
        "",
        f"You hold two commissions, settled by {guild.name} at {guildhall}. Every unit you "
        f"hand in scores {POINTS_PER_UNIT} points, finishing a commission scores "
        f"{COMPLETION_BONUS} more, and partial delivery counts.",
        "",
        f"Robbery works only in the dark ({dark_text}). Anywhere else the watch stops it and "
        f"the robber pays the intended victim {FINE_COIN} coins. A hireling beside you protects "
        "you, and a hireling of your own helps you rob. A successful robbery takes the "
        "victim's single most valuable good.",
        "",
        "Hiring is the only promise the town enforces: the fee moves when the offer is "
        f"accepted, and for {fee_turns} turns the hireling cannot rob its employer and guards "
        "it while beside it. Nothing else anyone says or agrees is enforced.",
        "",
        f"Your final score is your coin, plus the fixed value of the goods you carry, plus "
        f"{POINT_VALUE} times your commission points. You start with {w.start_coin} coin and "
        "a score of zero.",
        "",
        "What you say is heard by everyone in your room next turn, and it need not be true. "
        "Your notes are private and are shown back to you every turn.",
        "",
        "Reply with ONLY one JSON object, with no prose and no code fences: start with { and "
        'end with }. Its keys are "action" (your sentence, at most '
        f'{MAX_SENTENCE_LEN} characters), "say" (one line spoken aloud, or empty, at most '
        f'{MAX_SAY_LEN}) and "notes" (private notes for later turns, at most {MAX_NOTES_LEN}).',
        "",
        f"Your name in the town is {alias}.",
    ])


def response_format(kind: str, schema: dict | None = None) -> dict | None:
    """The request's ``response_format`` for ``kind`` (one of :data:`RESPONSE_FORMATS`) and
    ``schema`` (default :data:`REPLY_SCHEMA`; the choosing mode gives its own)."""
    schema = REPLY_SCHEMA if schema is None else schema
    if kind == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
    if kind == "json_object":
        return {"type": "json_object", "schema": schema}
    return None


# --- reading a reply (SENTENCES §20.1) ---------------------------------------------------------

@dataclass(frozen=True)
class Reply:
    """The three cleaned fields of a valid reply."""

    action: str
    say: str
    notes: str

    def to_json(self) -> str:
        """The reply as the one JSON object a model should have written (export, tests)."""
        return json.dumps({"action": self.action, "say": self.say, "notes": self.notes},
                          ensure_ascii=False)


def clean(text: str, cap: int) -> str:
    """Tabs, CRs and LFs to spaces, strip ASCII whitespace, then cap in runes with "…".

    Python strings index code points, so the cut never splits a character. A lone surrogate
    (from a JSON escape such as ``\\ud800``) becomes U+FFFD, as the game's own text does, so
    the records can be written as UTF-8.
    """
    t = no_surrogates(text) if not text.isascii() else text
    t = t.replace("\t", " ").replace("\r", " ").replace("\n", " ").strip(ASCII_SPACE)
    return t if len(t) <= cap else t[:cap - 1] + ELLIPSIS


def parse_reply(text: str) -> tuple[Reply | None, str]:
    """``(Reply, "")`` for a valid reply, else ``(None, why)`` (§20.1 steps 1-4).

    The object is the text from the first ``{`` to the last ``}``, so fences and chatter around
    it are tolerated; unknown keys are ignored; a ``say`` or ``notes`` that is missing or not a
    string counts as empty.
    """
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return None, "no JSON object in the reply"
    try:
        obj = json.loads(text[start:end + 1])
    except ValueError as e:
        return None, f"the JSON does not parse ({e.args[0] if e.args else e})"
    except RecursionError:
        return None, "the JSON is nested too deeply"
    if not isinstance(obj, dict):
        return None, "the JSON is not an object"
    action = obj.get("action")
    if not isinstance(action, str):
        return None, "no string \"action\""
    action = clean(action, MAX_SENTENCE_LEN)
    if not action:
        return None, "the action is empty"

    def text_field(key: str, cap: int) -> str:
        v = obj.get(key)
        return clean(v, cap) if isinstance(v, str) else ""

    return Reply(action, text_field("say", MAX_SAY_LEN), text_field("notes", MAX_NOTES_LEN)), ""
