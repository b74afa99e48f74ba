"""What a seat sees at the start of a turn, as plain data, and a policy function played on it.

A seat sees (RULES §17) the turn, its own seat, the game's length, the players' names and its
own commissions (:data:`TURN_FIELDS`), and its view fields (:data:`VIEW_FIELDS`): its
observation (``Game.observe``), its text view (SENTENCES §17), its legal actions' indices in
``sim.codec.action_table`` and their canonical sentences.  :func:`turn_view` builds it, JSON-ready,
for every path, so a policy reads the same data wherever it plays: it is the seat protocol's
act request (``league.seat.protocol``, which re-exports :func:`view` and :data:`VIEW_FIELDS`)
without its ``type``, and :class:`FunctionPolicy` calls a policy function with it in-process.

It lives in ``sim`` (it reads only the game) because the environments build their opponents
from specs, and a policy function among them needs its view without ``league`` or ``agents``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .codec.action_table import canonical, legal_mask
from .game import Game
from .language.textview import render_observation
from .rules.text import cut, no_surrogates, one_line
from .rules.world import MAX_SENTENCE_LEN

TURN_FIELDS = ("turn", "seat", "turns", "aliases", "commissions")  # carried by every act
VIEW_FIELDS = ("observation", "text", "legal", "admissible")       # carried when asked for


def turn_view(game: Game, seat: int, fields: Sequence[str] = VIEW_FIELDS) -> dict[str, Any]:
    """Everything ``seat`` sees this turn: :data:`TURN_FIELDS`, then the view ``fields`` named
    (all by default, as a policy function gets them), in a fresh dict sharing nothing with the
    game."""
    return {"turn": game.turn, "seat": seat, "turns": game.config.turns,
            "aliases": game.aliases, "commissions": game.commissions(seat),
            **view(game, seat, fields)}


def view(game: Game, seat: int, fields: Sequence[str] = VIEW_FIELDS) -> dict[str, Any]:
    """The named view fields of ``seat`` (each built only when named)."""
    st = game.state
    out: dict[str, Any] = {}
    if "observation" in fields or "text" in fields:
        obs = game.observe(seat)  # once: the text view is rendered from it, as Game's is
        if "observation" in fields:
            out["observation"] = obs
        if "text" in fields:
            out["text"] = render_observation(obs, game.world, "", game.config.speech)
    if "legal" in fields or "admissible" in fields:
        legal = [i for i, ok in enumerate(legal_mask(st, seat)) if ok]
        if "legal" in fields:
            out["legal"] = legal
        if "admissible" in fields:
            room = st.room[seat]
            out["admissible"] = [canonical(i, game.world, st.aliases, seat, room)
                                 for i in legal]
    return out


class FunctionPolicy:
    """A policy function (``sim.policies.is_policy_function``) as a policy.

    ``act(game, seat)`` calls the function with the seat's whole :func:`turn_view` and returns
    what it returned, so that whatever plays the seat judges a function's answer exactly as it
    judges a class's: a sentence (or an ``Intent``) is played, anything else is the caller's
    usual fault.  A sentence is first made what a seat apart can send (:func:`plain_sentence`),
    so that a function plays the same in-process and apart.  A seat that runs apart
    (``league.seat.host``) holds no game, only the view it was sent: it calls :meth:`decide`
    with that.  Nothing of the function's is reset between episodes (it has no ``reset``): a
    policy that remembers is a class.
    """

    __slots__ = ("fn", "name")
    scripted = False

    def __init__(self, fn: Callable[[dict], Any], name: str = "") -> None:
        self.fn = fn
        self.name = name or f"{fn.__module__}:{fn.__qualname__}"

    def __repr__(self) -> str:
        return f"FunctionPolicy({self.name!r})"

    def act(self, game: Game, seat: int) -> Any:
        return self.decide(turn_view(game, seat))

    def decide(self, seat_view: dict[str, Any]) -> Any:
        """The function's answer to a view built elsewhere (the seat protocol's request)."""
        return plain_sentence(self.fn(seat_view))


def plain_sentence(answer: Any) -> Any:
    """A ``str`` answer as the plain text a seat apart sends, anything else unchanged.

    A ``str`` subclass loses its methods (the game calls ``strip`` and friends on a sentence,
    and a ``ParsedSentence`` would hand over an intent the parser never gave); a text longer
    than a sentence is what the game keeps of it (a 10 MB answer fits no protocol line); a
    lone surrogate, which no UTF-8 line carries, becomes U+FFFD.  An object that only claims
    to be a ``str`` (through ``__class__``) raises ``TypeError``: a fault, not a crash.
    """
    if type(answer) is not str:
        if not isinstance(answer, str):
            return answer
        if not issubclass(type(answer), str):
            raise TypeError(f"returned {type(answer).__name__}, which poses as a str")
        answer = str.__str__(answer)
    if len(answer) > MAX_SENTENCE_LEN:
        answer = cut(one_line(answer), MAX_SENTENCE_LEN)
    if not answer.isascii():
        answer = no_surrogates(answer)
    return answer
