"""The seat protocol: what a seat running apart receives each turn, and what it may answer.

A policy that is not one of ours runs in a process of its own (``league.apart.isolated``) and
talks to the league in one JSON object per line on its standard input and output, in any
language (``exec:COMMAND``; ``module:Name`` through ``python -m league.seat.host``).  Requests:

* ``{"type": "build"}`` once, when a league checks its policies before it starts (answer
  ``{}``, or ``{"error": "..."}`` if the policy cannot be built, with ``"town": true`` if it
  cannot play the league's town, the standard one);
* ``{"type": "reset", "seed": S, "seat": K, "turns": T, "speech": B, "thievery": B}`` at the
  start of every episode (``seed`` seeds a stochastic policy but does not reveal the town);
* ``{"type": "act", "turn", "seat", "turns", "aliases", "commissions", "observation", "text",
  "legal", "admissible"}`` each turn: exactly what the seat may see (RULES §17): its
  observation (``Game.observe``), its text view (SENTENCES §17), its own commissions, and its
  legal actions' indices in ``sim.codec.action_table`` with their canonical sentences.  It is
  built by ``sim.seat_view.turn_view`` (the view fields by :func:`view`, re-exported here), the
  same code that builds a policy function's argument in-process.

Answers: anything to a reset; to an act, ``{"action": ..., "say": "...", "notes": "..."}`` as
SENTENCES §20 has it (``action`` a sentence or a legal action's index; or a structured intent,
an object in ``Intent.to_json`` form, :data:`INTENT_KEYS`, played as the ``Intent`` itself
would be in the league's process: what ``league.seat.host`` sends for a policy's ``Intent``, so
that its spoken text and its reason survive the trip), with ``"scripted":
true`` when the act is a fallback the policy chose itself (``agents.Decision.scripted``: the act
is played, recorded scripted and counted in the seat's own ``fallbacks``, as in-process; it marks
only that seat's act), or ``{"error": "..."}`` when the policy failed (``league.seat.host``
says ``{"garbage": "..."}`` when its policy returned no decision).  ``league.seat.host`` calls
a policy function (``module:function``, ``sim.policies``) with the act request without its
``type``, and answers what it returns.

Paying only for what a seat reads: the view fields (:data:`VIEW_FIELDS`) are most of a
decision's cost to the league, so a reset answer ``{"fields": [...]}`` makes every act of the
episode carry just those (no ``fields``: all), and during an act a program may write ``{"need":
[...]}`` and read back ``{"type": "view", ...}`` before it answers (at most :data:`MAX_NEEDS`
times).  ``league.seat.host`` asks for nothing at first, fetches what its policy reads, and
names those fields at the next reset; for a policy function, which is handed the whole view,
it names them all.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from agents.policy import Decision
from sim import Game, Intent, IntentError
from sim.codec.action_table import legal_mask, n_actions, to_intent
from sim.seat_view import VIEW_FIELDS as VIEW_FIELDS  # the protocol's names for them
from sim.seat_view import turn_view
from sim.seat_view import view as view

MAX_LINE = 1 << 16          # bytes of one answer line; more is a flood
MAX_ACTION = 240            # characters of a sentence (SENTENCES §20)
MAX_SAY = 160
MAX_NOTES = 600
MAX_NEEDS = 4               # need requests per act; more is garbage
# An intent's keys as ``Intent.to_json`` writes them (RULES §15.2's ``parsed`` record); all but
# ``kind`` may be left out, taking ``Intent``'s defaults.
INTENT_KEYS = ("kind", "toRoom", "item", "qty", "npc", "other", "coin", "reason", "spoken")


class ProtocolError(ValueError):
    """An answer that is not one (not JSON, wrong fields, too long): a ``garbage`` fault."""


def seat_seed(game_seed: int, seat: int, key: bytes | None = None) -> int:
    """The seed a seat running apart is reset with: stable, but not the town's own seed.

    With the league's secret ``key`` it is an HMAC, which no search of game seeds can match
    to a town; without one (a public draw) a hash of the game seed."""
    text = f"guild-seat:{game_seed}:{seat}".encode()
    digest = (hmac.new(key, text, hashlib.sha256).digest() if key is not None
              else hashlib.sha256(text).digest())
    return int.from_bytes(digest[:7], "big")


def reset_request(game: Game, seat: int, seed: int, key: bytes | None = None) -> dict:
    c = game.config
    return {"type": "reset", "seed": seat_seed(seed, seat, key), "seat": seat,
            "turns": c.turns, "speech": c.speech, "thievery": c.thievery}


def act_request(game: Game, seat: int, fields: tuple[str, ...] = VIEW_FIELDS) -> dict:
    """What ``seat`` may see this turn, as one JSON-ready object (module docstring), with just
    the view ``fields`` named: ``sim.seat_view.turn_view``, which a policy function gets."""
    return {"type": "act", **turn_view(game, seat, fields)}


def view_fields(names: Any, what: str) -> tuple[str, ...]:
    """``names`` checked as a list of view fields; :class:`ProtocolError` naming ``what``."""
    if not isinstance(names, list) or len(names) > len(VIEW_FIELDS) or not all(
            isinstance(n, str) and n in VIEW_FIELDS for n in names):
        raise ProtocolError(f"{what} must be a list of view fields {list(VIEW_FIELDS)}; got "
                            f"{_show(json.dumps(names).encode())}")
    return tuple(names)


def read_line(line: bytes) -> dict:
    """One answer line as a JSON object; :class:`ProtocolError` when it is not one."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        raise ProtocolError(f"answered {_show(line)}, not a JSON object") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"answered {_show(line)}, not a JSON object")
    return data


def parse_answer(data: dict, game: Game, seat: int) -> Decision:
    """The decision in one answer (see :func:`read_line`); :class:`ProtocolError` when it is
    not a valid one."""
    if "error" in data:
        raise SeatError(str(data["error"])[:300])
    if "garbage" in data:  # the host's verdict on what its policy returned
        raise AnswerError(str(data["garbage"])[:300])
    action = data.get("action")
    say, notes = data.get("say", ""), data.get("notes", "")
    if not isinstance(say, str) or not isinstance(notes, str):
        raise ProtocolError("answered a say or notes that is not a string")
    scripted = data.get("scripted", False)
    if not isinstance(scripted, bool):
        raise ProtocolError(f"answered scripted {_show(json.dumps(scripted).encode())}, "
                            f"neither true nor false")
    if isinstance(action, dict):
        act: str | Intent = structured_intent(action)
    elif isinstance(action, bool) or not isinstance(action, (str, int)):
        raise ProtocolError(f"answered action {_show(json.dumps(action).encode())}, neither "
                            f"a sentence, an action index nor an intent")
    elif isinstance(action, int):
        if not (0 <= action < n_actions(game.world) and legal_mask(game.state, seat)[action]):
            raise ProtocolError(f"answered action index {action}, not one of the seat's legal "
                                f"actions (0..{n_actions(game.world) - 1})")
        act = to_intent(action, game.world, seat, game.state.room[seat])
    else:
        act = action[:MAX_ACTION]
    return Decision(act, say=say[:MAX_SAY], notes=notes[:MAX_NOTES], scripted=scripted)


def structured_intent(action: dict) -> Intent:
    """An answer's ``action`` object as the ``Intent`` it names; :class:`ProtocolError` when it
    names none (an unknown key, no ``kind``, a slot of the wrong type or range).  Whether the town
    has the rooms, goods and seats it names is the rules' question, asked when it is played
    (an act the rules refuse is a ``garbage`` fault, as in-process)."""
    unknown = [k for k in action if k not in INTENT_KEYS]
    if unknown or "kind" not in action:
        what = f"the key {_show(str(unknown[0]).encode())}" if unknown else "no kind"
        raise ProtocolError(f"answered an intent with {what} (its keys: "
                            f"{', '.join(INTENT_KEYS)})")
    try:
        return Intent(action["kind"], to_room=action.get("toRoom", -1),
                      item=action.get("item", -1), qty=action.get("qty", 1),
                      npc=action.get("npc", -1), other=action.get("other", -1),
                      coin=action.get("coin", 0), reason=action.get("reason"),
                      text=action.get("spoken", ""))
    except (IntentError, TypeError) as e:
        raise ProtocolError(f"answered an intent object that is no Intent: "
                            f"{str(e)[:200]}") from None


class AnswerError(ProtocolError):
    """The policy behind ``league.seat.host`` returned something that is no decision."""


class SeatError(RuntimeError):
    """The policy in the seat's process failed and said why (a ``raised`` fault)."""


def _show(line: bytes) -> str:
    text = line.decode("utf-8", "replace").strip()
    return repr(text[:60] + ("..." if len(text) > 60 else ""))


def encode_line(obj: Any) -> bytes:
    """One protocol line (orjson, the ``fast`` extra, where installed: a request is encoded
    once per decision, and json's encoder was the largest cost of the league's side)."""
    if _orjson is not None:
        return _orjson.dumps(obj, option=_orjson.OPT_NON_STR_KEYS | _orjson.OPT_APPEND_NEWLINE)
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


try:
    import orjson as _orjson
except ImportError:  # the fast extra is not installed: the standard library's encoder
    _orjson = None
