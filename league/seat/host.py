"""``python -m league.seat.host SPEC``: a Python policy in a process of its own (``module:Name``).

It speaks the seat protocol (``league.seat.protocol``) on its standard input and output and
hands the policy a :class:`SeatGame`: a view of its own seat with the read methods a seat may
use (``observe(seat)``, ``observation_text(seat)``, its own ``commissions``, ``aliases``,
``turn``, ``done``, ``world``, ``admissible``).  Everything else a ``Game`` has (other seats'
hidden state, ``play_turn``, ``restore``, ``state``, ``snapshot``, ``end_early``) is simply not
there: this process holds no game.  A policy function (``module:function``, told apart from a
class or a factory by ``sim.policies.is_policy_function``) is called instead with the act
request without its ``type``, every view field in it: the dict ``sim.seat_view.turn_view``
built in the league's process, as it would be in-process; its answer is judged as a policy's.
Whatever the policy prints goes to standard error, so it cannot corrupt the protocol.  A fresh
policy object is built at every reset (every episode).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.policy import Decision, make_policy
from league.seat.protocol import VIEW_FIELDS, encode_line
from sim import Intent
from sim.language.textview import render_observation
from sim.policies import check_town
from sim.rules.checks import speakable
from sim.rules.world import STANDARD_TOWN
from sim.seat_view import TURN_FIELDS, FunctionPolicy, plain_sentence


class SeatGame:
    """What a policy running apart receives as ``game``: its own seat's view, nothing more.

    The view fields (observation, text view, legal actions and their sentences) come with the
    request when the league was asked for them at reset; any other is fetched on first use
    through ``fetch`` (a ``need`` request, ``league.seat.protocol``), and ``used`` learns which
    this policy reads, so the next reset asks for exactly those.
    """

    __slots__ = ("world", "aliases", "turn", "turns", "done", "_seat", "_view", "_commissions",
                 "_speech", "_fetch", "_used", "_lent")

    def __init__(self, request: dict, speech: bool,
                 fetch: Callable[[list[str]], dict] | None = None,
                 used: set[str] | None = None) -> None:
        self.world = STANDARD_TOWN
        self.aliases: list[str] = list(request["aliases"])
        self.turn: int = request["turn"]
        self.turns: int = request["turns"]
        self.done = False
        self._seat: int = request["seat"]
        self._view = {k: request[k] for k in VIEW_FIELDS if k in request}
        self._commissions: list[dict] = request["commissions"]
        self._speech = speech
        self._fetch = fetch
        self._used = set() if used is None else used
        self._lent = False  # the observation dict was handed out once (then copies)

    def _field(self, name: str) -> Any:
        self._used.add(name)
        if name not in self._view:
            if self._fetch is None:
                raise ValueError(f"this seat's view has no {name!r}")
            missing = [k for k in VIEW_FIELDS if k in self._used and k not in self._view]
            self._view.update(self._fetch(missing))
        return self._view[name]

    def fields(self) -> dict[str, Any]:
        """Every view field, in ``VIEW_FIELDS`` order, as the league built them (those the
        request lacks are fetched, at once)."""
        self._used.update(VIEW_FIELDS)
        return {name: self._field(name) for name in VIEW_FIELDS}

    @property
    def legal(self) -> list[int]:
        """Indices of the seat's legal actions in the action table."""
        return list(self._field("legal"))

    @property
    def admissible(self) -> list[str]:
        """The legal actions' canonical sentences, in the order of :attr:`legal`."""
        return list(self._field("admissible"))

    def _own(self, seat: int) -> None:
        if seat != self._seat:
            raise ValueError(f"seat {self._seat} sees only its own view, not seat {seat}'s")

    def observe(self, seat: int) -> dict:
        self._own(seat)
        obs = self._field("observation")
        if self._lent:  # the policy may keep or change what it got: later calls get copies
            return json.loads(json.dumps(obs))
        self._lent = True
        return obs

    def observation_text(self, seat: int, prompt: str = "") -> str:
        self._own(seat)
        if not prompt:
            return self._field("text")
        return render_observation(self._field("observation"), self.world, prompt[:4000],
                                  self._speech)

    def commissions(self, seat: int) -> list[dict]:
        self._own(seat)
        return [dict(c) for c in self._commissions]


def answer(policy: Any, request: dict, view: SeatGame) -> dict:
    """The policy's decision as a protocol answer: a policy function's from the request
    without its ``type`` (``sim.seat_view.turn_view``), any other policy's from ``view``."""
    if isinstance(policy, FunctionPolicy):
        got = policy.decide({**{k: request[k] for k in TURN_FIELDS}, **view.fields()})
    else:
        got = policy.act(view, request["seat"])
    return as_answer(got, view)


def as_answer(got: Any, view: SeatGame) -> dict:
    """What a policy returned as a protocol answer: ``garbage`` when it is no decision.  Types
    are read with ``type``, not ``isinstance`` (which an object's ``__class__`` can fool into an
    answer no line can carry); a sentence is sent as :func:`sim.seat_view.plain_sentence` makes
    it (10 MB or a lone surrogate would be no line either).  A ``Decision`` marked ``scripted``
    (a fallback the policy wrote itself) says so, so that the league counts it as a fallback
    wherever the policy runs.  An ``Intent`` is sent as one (``Intent.to_json``, its text made
    one line of at most MaxSayLen, as the rules would make it): a sentence could not say a
    move's spoken line or a ``none``'s reason, which the rules play as given in-process."""
    decision = got if isinstance(got, Decision) else Decision(got)
    action = decision.action
    if isinstance(action, Intent):
        try:  # rebuilt field by field: a subclass's own to_json is not sent
            it = speakable(action)
            sent: Any = Intent.to_json(Intent(it.kind, it.to_room, it.item, it.qty, it.npc,
                                              it.other, it.coin, it.reason, str(it.text)))
        except Exception as e:  # a reason no sentence is read with, or slots forged since
            return {"garbage": f"returned an Intent the rules refuse ({type(e).__name__}: {e})"}
    elif issubclass(type(action), str):
        sent = plain_sentence(action)
    else:
        return {"garbage": f"returned {type(action).__name__}, not a sentence or an Intent"}
    if not (issubclass(type(decision.say), str) and issubclass(type(decision.notes), str)):
        return {"garbage": "returned a Decision whose say or notes is not a str"}
    reply = {"action": sent, "say": decision.say, "notes": decision.notes}
    if decision.scripted:  # its own fallback: counted against it, as it would be in-process
        reply["scripted"] = True
    return reply


def _said(e: BaseException) -> str:
    """``Type: message`` (``Type`` alone without one), as the league describes an exception
    raised in its own process; a message whose ``__str__`` raises is not shown."""
    msg = _message(e)
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def _message(e: BaseException) -> str:
    """``str(e)``, or a remark when its ``__str__`` raises."""
    try:
        return str.__str__(str(e))
    except KeyboardInterrupt:
        raise
    except BaseException:
        return "(its message cannot be shown)"


# Of an error's text: a refusal's whole line (a module not found: about 210), and room for the
# place and the league's own words ("turn 13: its policy failed: ") in its 300-character notes.
MAX_SAID = 220
MAX_REFUSAL = 300  # a town refusal names a model's file and both shapes: the league's whole line
_OURS = tuple(str(Path(__file__).resolve().parents[2] / package) + os.sep
              for package in ("agents", "feasibility", "league", "sim"))


def _where(e: BaseException, spec: str) -> str:
    """`` (at file.py:LINE)``: the innermost frame of the traceback in the policy's own
    top-level package, named by its file's last two path parts; nothing when our own code
    raised (a name that resolves to nothing, a file that is no model)."""
    frames = traceback.extract_tb(e.__traceback__)
    home = spec.split(":", 1)[0].split(".")[0]
    pick = next((f for f in reversed(frames) if f"/{home}" in f.filename
                 and not f.filename.startswith(_OURS)), None)
    if pick is None:
        return ""
    name = "/".join(pick.filename.split("/")[-2:]) if "/__init__" in pick.filename else \
        pick.filename.rsplit("/", 1)[-1]
    return f" (at {name}:{pick.lineno})"


def build(policy: Any) -> dict:
    """The answer to ``build``: whether the policy can play (its ``probe``: an ``sb3:`` model
    loads, an endpoint answers) and plays the league's town, the standard one (its
    ``check_world``, as ``sim.policies.check_town`` asks it: a model of another town's shapes
    does not), refused with ``"town": true``. It is asked here, where the policy is loaded,
    since the league's process may not be able to load it."""
    probe = getattr(policy, "probe", None)
    if callable(probe):
        probe()
    try:
        check_town([policy], STANDARD_TOWN)
    except ValueError as e:
        return {"error": (_message(e) or type(e).__name__)[:MAX_REFUSAL], "town": True}
    return {"ok": True}


def serve(spec: str, requests: Any, replies: Any) -> None:
    """Answer requests until standard input closes."""
    policy: Any = None
    speech = True
    used: set[str] = set()  # the view fields the policy has read, in any episode
    requests = iter(requests)
    reply: dict

    def write(message: dict) -> None:
        replies.write(encode_line(message))
        replies.flush()

    def fetch(names: list[str]) -> dict:
        write({"need": names})
        got = json.loads(next(requests))
        if not isinstance(got, dict) or got.get("type") != "view":
            raise RuntimeError("the league answered a need with no view")
        return {k: got[k] for k in names}

    for line in requests:
        try:
            request = json.loads(line)
            if request.get("type") == "build":  # the league's check before it starts
                reply = build(make_policy(spec))
            elif request.get("type") == "reset":
                speech = bool(request.get("speech", True))
                policy = make_policy(spec)
                if isinstance(policy, FunctionPolicy):  # it reads the whole view
                    used.update(VIEW_FIELDS)
                reset = getattr(policy, "reset", None)
                if callable(reset):
                    reset(request.get("seed"))
                reply = {"ok": True, "fields": [k for k in VIEW_FIELDS if k in used]}
            elif policy is None:
                reply = {"error": "act before reset"}
            else:
                reply = answer(policy, request, SeatGame(request, speech, fetch, used))
        except KeyboardInterrupt:  # Ctrl-C reaches the seats too: this process stops
            raise
        except BaseException as e:  # the policy's own failure, sys.exit too: this seat's fault
            reply = {"error": f"{_said(e)[:MAX_SAID]}{_where(e, spec)}"}
        write(reply)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m league.seat.host MODULE:NAME", file=sys.stderr)
        return 2
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)            # the policy's prints go to standard error
    sys.stdout = sys.stderr
    serve(args[0], sys.stdin.buffer, replies)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
