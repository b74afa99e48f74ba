"""``GameConfig`` and ``Game``: the facade of docs/api.md §1 over the rules modules."""

from __future__ import annotations

import contextlib
import operator
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from .language.parser import parse
from .language.phrasing import canonical_sentence, outcome_text
from .language.textview import render_observation
from .language.vocab import lower_runes
from .rules.checks import check_structured, validate_ids
from .rules.errors import ConfigError, StateError, TurnError, shown
from .rules.intents import Intent, ParsedSentence
from .rules.observation import observe
from .rules.scoring import results
from .rules.setup import initial_state, seed_in_range
from .rules.state import restore, snapshot
from .rules.text import cut, one_line
from .rules.turn import open_turn, settle
from .rules.turn import resolve_turn as _resolve_turn
from .rules.world import (
    MAX_NOTES_LEN,
    MAX_PROMPT_LEN,
    MAX_SAY_LEN,
    MAX_SENTENCE_LEN,
    MAX_TURNS,
    MIN_TURNS,
    SEATS,
    STANDARD_TOWN,
    World,
    per_world,
)
from .rules.worldfile import load_world


@dataclass(frozen=True)
class GameConfig:
    """One episode's settings (RULES §6.7-6.8).  Bad values raise ``ConfigError`` at once.

    Args:
        seed: any int whose ``seed * 7919 + 17`` fits in int64 (the original's arithmetic).
        turns: the horizon, from 6 to ``MAX_TURNS`` (1000, the one bound on turns everywhere).
        thievery: False plays the "honest-town" variant (every robbery is forbidden).
        speech: False blanks every spoken line.
        players: six policy names for ``results()["names"]``; default ``P1``..``P6``.
        world: the town (default the standard one); variant towns are ``World`` values.
    """

    seed: int = 0
    turns: int = 14
    thievery: bool = True
    speech: bool = True
    players: tuple[str, ...] | None = None
    world: World = field(default=STANDARD_TOWN, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ConfigError(f"GameConfig.seed must be an int; got {shown(self.seed)}")
        if not seed_in_range(self.seed):
            raise ConfigError(f"GameConfig.seed {shown(self.seed)} is out of range: seed * 7919 "
                              "+ 17 must fit in a signed 64-bit integer")
        if isinstance(self.turns, bool) or not isinstance(self.turns, int):
            raise ConfigError(f"GameConfig.turns must be an int; got {shown(self.turns)}")
        if not MIN_TURNS <= self.turns <= MAX_TURNS:
            raise ConfigError(f"GameConfig.turns must be from {MIN_TURNS} to {MAX_TURNS}; got "
                              f"{shown(self.turns)}")
        for name in ("thievery", "speech"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"GameConfig.{name} must be a bool; got "
                                  f"{shown(getattr(self, name))}")
        if self.players is not None:
            players = self.players
            if isinstance(players, str) or not isinstance(players, Sequence):
                raise ConfigError(f"GameConfig.players must be a list of {SEATS} names; "
                                  f"got {shown(players)}")
            if len(players) != SEATS:
                raise ConfigError(f"GameConfig.players must name exactly {SEATS} players; "
                                  f"got {len(players)}")
            if not all(isinstance(p, str) for p in players):
                raise ConfigError(f"GameConfig.players must be strings; got {shown(players)}")
            object.__setattr__(self, "players", tuple(players))
        if not isinstance(self.world, World):
            hint = (" (a world file is read by sim.load_config(path), or "
                    "sim.rules.worldfile.load_world(path), which returns (world, turns))"
                    if isinstance(self.world, (str, os.PathLike, tuple)) else "")
            raise ConfigError(f"GameConfig.world must be a World; got "
                              f"{type(self.world).__name__}{hint}")

    @property
    def names(self) -> list[str]:
        return list(self.players) if self.players else [f"P{i + 1}" for i in range(SEATS)]

    def to_dict(self) -> dict:
        """JSON-ready config (the world is recorded separately, as the replay payload does)."""
        return {"seed": self.seed, "turns": self.turns, "thievery": self.thievery,
                "speech": self.speech, "players": self.names}

    @classmethod
    def from_dict(cls, d: dict, world: World | None = None) -> GameConfig:
        """Build from a JSON config; unknown keys (``sampled``, ``world`` JSON...) are ignored."""
        if not isinstance(d, dict):
            raise ConfigError(f"config must be a dict; got {type(d).__name__}")
        kw = {k: d[k] for k in ("seed", "turns", "thievery", "speech") if k in d}
        players = d.get("players")
        if players is not None:
            if isinstance(players, (str, bytes)) or not isinstance(players, Sequence):
                raise ConfigError(f"config.players must be a list; got {shown(players)}")
            kw["players"] = tuple(_player_name(p, i) for i, p in enumerate(players))
        return cls(**kw, world=STANDARD_TOWN if world is None else world)


class Game:
    """One episode.  ``play_turn`` takes the six seats' actions and resolves the turn.

    >>> g = Game(GameConfig(seed=0))
    >>> g.aliases
    ['Piston', 'Widget', 'Tinker', 'Bolt', 'Rivet', 'Sprocket']
    """

    def __init__(self, config: GameConfig | None = None) -> None:
        if config is not None and not isinstance(config, GameConfig):
            raise ConfigError(f"Game(config): config must be a GameConfig; got "
                              f"{type(config).__name__} (GameConfig.from_dict reads a dict)")
        self.config = config if config is not None else GameConfig()
        c = self.config
        self.world = c.world
        self.state = initial_state(c.seed, c.world, c.turns, c.speech, c.thievery)
        self.events: list[dict] = [{"kind": "start"}]
        self._aliases_low = tuple(a.lower() for a in self.state.aliases)
        open_turn(self.state, self.events)

    # --- reading -------------------------------------------------------------------------
    @property
    def aliases(self) -> list[str]:
        return list(self.state.aliases)

    @property
    def turn(self) -> int:
        return self.state.turn

    @property
    def done(self) -> bool:
        return self.state.done

    def snapshot(self) -> dict:
        return snapshot(self.state)

    def commissions(self, seat: int) -> list[dict]:
        st = self.state
        check_seat(seat)
        return [{"item": st.quest_item[seat][q], "count": st.quest_count[seat][q],
                 "delivered": st.delivered[seat][q]} for q in range(len(st.quest_item[seat]))]

    def results(self) -> dict:
        return results(self.state, self.config.names)

    def observe(self, seat: int) -> dict:
        check_seat(seat)
        return observe(self.state, seat, outcome_text)

    def observation_text(self, seat: int, prompt: str | None = "") -> str:
        """The text view a language-model player reads (SENTENCES §17); ``prompt`` is the
        operator guidance block (cut to 4000 runes; ``None`` is no prompt)."""
        check_seat(seat)
        if prompt is None:
            prompt = ""
        if not isinstance(prompt, str):
            raise TurnError(f"prompt must be a str; got {type(prompt).__name__}")
        return render_observation(self.observe(seat), self.world,
                                  cut(prompt, MAX_PROMPT_LEN), self.config.speech)

    # --- acting --------------------------------------------------------------------------
    def intent_for(self, action: str | Intent, seat: int,
                   stored: bool = False) -> tuple[Intent, str]:
        """The checked intent and the stored sentence for one seat's action, this turn.

        ``stored=True`` takes a sentence exactly as an earlier game stored it (a replay): the
        240-rune cut may have left a trailing space that one-lining would now remove.
        """
        check_seat(seat)
        return self._intent_for(action, seat, stored)

    def _intent_for(self, action: str | Intent, seat: int, stored: bool) -> tuple[Intent, str]:
        st = self.state
        if isinstance(action, str):  # a ParsedSentence too (play_turn takes its intent as is)
            sentence = action if stored else cut(one_line(action), MAX_SENTENCE_LEN)
            return _parse_cached(self.world, st.aliases, self._aliases_low, seat, st.room[seat],
                                 st.offers, st.turn, sentence), sentence
        if isinstance(action, Intent):
            validate_ids(action, self.world, seat)
            it = check_structured(action, self.world, seat, st.room[seat], st.offers, st.turn,
                                  recorded=stored)
            return it, canonical_sentence(it, self.world, st.aliases)
        raise TurnError(f"actions[{seat}] must be a sentence (str) or an Intent; "
                        f"got {type(action).__name__}")

    def play_turn(self, actions: Sequence[str | Intent], says: Sequence[str] | None = None,
                  notes: Sequence[str] | None = None,
                  scripted: Sequence[bool] | None = None) -> list[dict]:
        """Resolve one turn from six actions in seat order; returns the six act events.

        Each action is a sentence (parsed against the start-of-turn state) or an ``Intent``.
        Nothing changes when the call is refused (``TurnError``/``IntentError``). The acts are
        copies: a caller's edits stay out of the record.
        """
        acts = self._play(actions, says, notes, scripted, stored=False)
        return [{**a, "structured": dict(a["structured"])} if "structured" in a else dict(a)
                for a in acts]

    def _play(self, actions, says, notes, scripted, stored: bool) -> list[dict]:
        """:meth:`play_turn` (``stored``: a replay's recorded acts), returning the record's own
        act events: the package's callers that do not keep them (the environments, replay)
        skip the copies."""
        st = self.state
        if st.done:
            raise TurnError("play_turn: the episode is over (reason "
                            f"{st.reason!r}); start a new Game")
        _check_six(actions, "actions")
        says = _six_strings(says, "says")
        notes = _six_strings(notes, "notes")
        if scripted is None:
            scripted = [False] * SEATS
        else:
            _check_six(scripted, "scripted")
            if not stored:  # a replay's are compared with the record, types and all
                _check_bools(scripted, "scripted")
            scripted = list(map(bool, scripted))
        intents, sentences = [], []
        structured = False  # whether an action is an Intent (its act records it, below)
        for seat, action in enumerate(actions):
            if type(action) is ParsedSentence:  # parsed by its writer (a baseline), stored form
                intents.append(action.intent if action.vouched and not CHECK_PARSED
                               else _check_parsed(self, action, seat))
                sentences.append(str(action))
                continue
            if stored and isinstance(action, str) and len(action) > MAX_SENTENCE_LEN:
                raise TurnError(f"actions[{seat}]: a stored sentence has at most "
                                f"{MAX_SENTENCE_LEN} runes; got {len(action)}")
            it, sentence = self._intent_for(action, seat, stored)
            intents.append(it)
            sentences.append(sentence)
            structured = structured or isinstance(action, Intent)
        if not any(says):  # most turns: nobody speaks
            stored_says = says
        elif stored:  # a replay: the recorded fields are already one-lined and cut
            stored_says = [s if st.speech else "" for s in says]
        else:
            stored_says = [cut(one_line(s), MAX_SAY_LEN) if s and st.speech else ""
                           for s in says]
        if stored:  # a replay: each act's recorded text is its seat's notes after the turn
            st.notes[:] = notes  # (notes of blanks clear them, RULES §6.1: the record has none)
        elif any(notes):  # most turns carry no notes: skip the six-seat loop
            for seat, n in enumerate(notes):
                if n:
                    st.notes[seat] = cut(one_line(n), MAX_NOTES_LEN)
        acts = _resolve_turn(st, intents, sentences, stored_says, scripted, self.events)
        if structured:
            for seat, action in enumerate(actions):
                if isinstance(action, Intent):
                    acts[seat]["structured"] = intents[seat].to_json()
        return acts

    def end_early(self) -> None:
        """Settle now, between turns, with reason ``deadline`` (RULES §6.4); idempotent."""
        if not self.state.done:
            settle(self.state, "deadline", self.events)

    def restore(self, state: dict) -> None:
        """Replace floors, shops and seats with a snapshot-form state (validated first)."""
        if not isinstance(state, dict):  # checked here: the compiled restore raises TypeError
            raise StateError(f"state must be a dict in snapshot form; got "
                             f"{type(state).__name__}")
        if self.state.done:
            raise TurnError("restore: the episode is over")
        restore(self.state, state)
        # The open turn's snapshot event now describes the restored state.
        if self.events and self.events[-1]["kind"] == "turn":
            self.events[-1] = {"kind": "turn", **snapshot(self.state)}

    def replay_payload(self, policy_names: Sequence[str] | None = None) -> dict:
        """The replay JSON of RULES §15.5."""
        return {"protocol": "cogmud.replay.v1", "names": self.aliases,
                "policyNames": list(policy_names or self.config.names),
                "config": {"turns": self.config.turns, "seed": self.config.seed,
                           "speech": self.config.speech, "thievery": self.config.thievery,
                           "sampled": True, "world": self.world.to_json()},
                "events": self.events, "results": self.results()}


# GUILD_CHECK_PARSED=1 checks the baselines' vouched ParsedSentences too (a check of their
# writer, for tests and debugging; off by default, as parsing is what they save).
CHECK_PARSED = os.environ.get("GUILD_CHECK_PARSED", "0") == "1"


def _check_parsed(game: Game, said: ParsedSentence, seat: int) -> Intent:
    """The intent ``said`` carries, once parsing its text gave the same: a policy object may
    hand any ``ParsedSentence``, and an intent its text does not parse to would be played
    unchecked and recorded as another act (a replay could not re-derive it)."""
    st = game.state
    it = _parse_cached(game.world, st.aliases, game._aliases_low, seat, st.room[seat], st.offers,
                       st.turn, str(said))
    if it != said.intent:
        raise TurnError(f"actions[{seat}]: ParsedSentence {str(said)!r} carries "
                        f"{said.intent!r} but parses to {it!r}")
    return said.intent


_PARSES_MAX = 1 << 16
# The cross-episode parse memo; GUILD_PARSE_MEMO=0 turns it off (to measure the parser alone).
PARSE_MEMO = os.environ.get("GUILD_PARSE_MEMO", "1") != "0"


@per_world(maxsize=8)
def _parse_memo(world: World) -> dict[tuple, Intent]:
    """The parse memo of one town (bounded: cleared when it reaches ``_PARSES_MAX``)."""
    return {}


def _parse_cached(world: World, aliases: list[str], aliases_low: tuple[str, ...], seat: int,
                  room: int, offers, turn: int, sentence: str) -> Intent:
    """``parse`` with a memo: the parse is pure in (town, aliases, seat, room, sentence) except
    for an ``accept`` naming nobody, which reads the live offers, so those are never stored.
    Baselines and leagues repeat sentences a lot, so most parses are memo hits.  The
    aliases join the key only when one of them occurs in the sentence (as a substring of its
    text lowercased as the parser lowercases it, SENTENCES §5: a superset of occurring as a
    token), so alias-free sentences are shared across episodes."""
    if not PARSE_MEMO:
        return parse(world, aliases, seat, room, offers, turn, sentence)
    low = lower_runes(sentence)  # not str.lower: "GİZMO" must find "gizmo"
    named = tuple(aliases) if any(a in low for a in aliases_low) else ()
    key = (named, seat, room, sentence)
    memo = _parse_memo(world)
    hit = memo.get(key)
    if hit is not None:
        return hit
    it = parse(world, aliases, seat, room, offers, turn, sentence)
    if it.kind != "accept" and it.reason != "no_such_offer":
        if len(memo) >= _PARSES_MAX:
            memo.clear()
        memo[key] = it
    return it


def _player_name(p: object, i: int) -> object:
    """A ``players`` entry of a JSON config: a name, or an object with a ``name``."""
    if isinstance(p, dict):
        if "name" not in p:
            raise ConfigError(f"config.players[{i}] must have a 'name'; got {shown(p)}")
        return p["name"]
    return p


def check_seat(seat: int) -> None:
    """Refuse anything but an int seat 0..5 (a bool, -1 or 6 is a caller mistake, never
    wrapped around or looked up)."""
    if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < SEATS:
        raise TurnError(f"seat must be an int from 0 to {SEATS - 1}; got {shown(seat)}")


def seat_index(seat: object) -> int:
    """``seat`` as a plain int (a numpy integer too), or ``TurnError``: as :func:`check_seat`,
    for the policies' ``act(game, seat)``, which batched callers give numpy integers."""
    if type(seat) is int and 0 <= seat < SEATS:  # the common case
        return seat
    if not isinstance(seat, bool):
        with contextlib.suppress(TypeError):  # no index (1.0): check_seat names it
            seat = operator.index(seat)  # type: ignore[arg-type]
    check_seat(seat)  # type: ignore[arg-type]
    return seat  # type: ignore[return-value]


def _check_six(xs, name: str) -> None:
    if type(xs) in (list, tuple) and len(xs) == SEATS:  # the common case, without the ABC
        return
    if isinstance(xs, (str, bytes)) or not isinstance(xs, Sequence) or len(xs) != SEATS:
        got = (f"{len(xs)} items" if isinstance(xs, Sequence) and not isinstance(xs, (str, bytes))
               else f"a {type(xs).__name__}")
        raise TurnError(f"{name} must be a list of {SEATS} items (one per seat); got {got}")


def is_bool(x: object) -> bool:
    """Whether ``x`` is a bool, Python's or numpy's (``numpy.bool``, whose truth is its own;
    an array, or an object claiming a ``dtype``, is not)."""
    return x is True or x is False or (type(x).__module__ == "numpy"
                                       and type(x).__name__ in ("bool", "bool_"))


def _check_bools(xs, name: str) -> None:
    """Each item a bool (numpy's too): "no" or [0] would be recorded as True."""
    for i, x in enumerate(xs):
        if not is_bool(x):
            raise TurnError(f"{name}[{i}] must be a bool; got {type(x).__name__}")


def _six_strings(xs, name: str) -> list[str]:
    if xs is None:
        return [""] * SEATS
    _check_six(xs, name)
    if all(type(x) is str for x in xs):
        return list(xs)
    out = []
    for i, x in enumerate(xs):
        if x is None:
            x = ""
        if not isinstance(x, str):
            raise TurnError(f"{name}[{i}] must be a str; got {type(x).__name__}")
        out.append(x)
    return out


def load_config(path, **settings) -> GameConfig:
    """A ``GameConfig`` that plays a world file (``sim.rules.worldfile``): its town, and its turn
    count unless ``turns`` is given; other settings (``seed``, ``thievery``...) pass through."""
    unknown = sorted(set(settings) - {"seed", "turns", "thievery", "speech", "players"})
    if unknown:
        raise ConfigError(f"load_config: unknown setting {unknown[0]!r} (settings: seed, turns, "
                          "thievery, speech, players)")
    world, turns = load_world(path)
    if turns is not None:
        settings.setdefault("turns", turns)
    return GameConfig(world=world, **settings)
