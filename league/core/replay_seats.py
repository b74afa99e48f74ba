"""``guild verify`` plays the deterministic seats again: each recorded act must be the policy's.

A replay that re-derives shows that its acts give its results, not that a seat labelled
``factor`` played as factor does. So once ``sim.replay`` has re-derived it, verify steps a game
through the recorded acts a second time, asks each re-played seat's policy what it plays in
every start-of-turn state, and requires the recorded act to be that:

- ``factor`` and ``magpie``: their sentence, byte for byte, with nothing said and no notes.
  Their acts are all marked scripted, so an act that is instead the seat's fallback
  (``fallbackPlay``: the wait sentence or factor's) is accepted as long as the results line
  counts that many fallbacks.
- ``random``: the league builds ``make_policy("random")`` (seed 0) and resets it with the game
  seed, so its stream (``Random(game seed * 7 + seat)``) is derivable from the replay. It is
  asked every turn, as in the league; acts marked scripted are fallbacks, not compared
  (``league.core.verify_claims`` counts them); every other act must be its intent.
- ``champion``: the shipped network's masked argmax (``agents.champion``); each unscripted act
  must be a legal action whose logit is within :data:`PPO_TIE` of the best, as for ``ppo:``.
  ``league.json`` records the sha256 of the network file the league played (``"models"``);
  when this install ships another one, or cannot load it, its seats are not re-played (a note).
- ``ppo:MODEL``: the league plays the masked argmax of the model's logits, and ``league.json``
  records each model file's sha256 (``"models"``). When the file here has that digest, each
  unscripted act must be a legal action whose logit is within :data:`PPO_TIE` of the best
  (floating point may break a near-tie differently on another machine); a missing or changed
  model, or no torch, is one note and its seats are not re-played.

Other policies (``llm:``, ``sb3:``, ``exec:``, ``module:Name``) answer from outside what the
replay records, so their seats are not re-played; verify says so in one note. A policy's name
comes from ``league.json`` and may hold anything: notes and problems show it inert
(``league.core.store.shown``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents import make_policy
from agents.baselines.rules import WAIT
from league.core.episode import IN_PROCESS, TRUSTED
from league.core.signing import file_sha256
from league.core.store import SHOWN_NAME, shown
from sim import Game, GameConfig
from sim.replay import _action  # how a recorded act is played again: the replay's own reading
from sim.rules.world import SEATS

BUILT_IN = IN_PROCESS  # our built-in policies
SCRIPTED = ("factor", "magpie")
PPO = "ppo"
CHAMPION = "champion"
PPO_TIE = 1e-4  # a recorded ppo act is the model's if its logit is this close to the best
MODELS = "models"  # league.json: {"ppo:PATH": sha256 of the model file}


def spec_of(name: str) -> str:
    """The policy spec a league builds for ``name`` (``trusted:`` dropped, as the league does)."""
    spec = name.strip()
    return spec[len(TRUSTED):] if spec.lower().startswith(TRUSTED) else spec


def kind_of(name: str) -> str | None:
    """``factor``, ``magpie``, ``random``, ``champion`` or ``ppo`` for a seat verify can re-play,
    else None."""
    spec = spec_of(name).lower()
    if spec in BUILT_IN:
        return spec
    return PPO if spec.startswith("ppo:") else None


# --- model digests, recorded when a league starts ----------------------------------------------

_DIGESTS: dict[tuple, str] = {}


def _model_file(name: str) -> Path:
    from agents.learn.ppo import resolve_path  # numpy and torch: only for ppo: seats

    return resolve_path(spec_of(name)[len("ppo:"):])


def model_digest(name: str) -> str:
    """sha256 of the model file of ``ppo:PATH`` (``OSError``/``ValueError`` when unreadable)."""
    return _digest(_model_file(name))


def _digest(path: Path) -> str:
    """sha256 of a file, computed once per version of it (inode, size, mtime)."""
    st = path.stat()
    key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = file_sha256(path)
    return _DIGESTS[key]


def _champion_file() -> Path:
    import agents.champion as champion  # read when asked: tests and tools may point it elsewhere

    return Path(champion.CHAMPION_FILE)


def champion_digest() -> str:
    """sha256 of the champion's network file as this install ships it (``OSError``)."""
    return _digest(_champion_file())


def model_digests(policies: Sequence[str]) -> dict:
    """``league.json``'s ``{"models": {"ppo:PATH" or "champion": sha256}}`` (nothing without
    such seats)."""
    models = {}
    for name in policies:
        kind = kind_of(name)
        if kind in (PPO, CHAMPION):
            try:
                models[name] = model_digest(name) if kind == PPO else champion_digest()
            except (OSError, ValueError):  # check_options has refused such a league already
                continue
    return {MODELS: models} if models else {}


# --- re-playing --------------------------------------------------------------------------------

@dataclass
class Seats:
    """Which policies of a league verify re-plays (built once from ``league.json``), and what
    it found. ``check(row, config, events)`` re-plays one episode's seats."""

    manifest: dict
    kinds: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # policy -> why it is not re-played
    decisions: int = 0   # acts compared with the policy's choice
    fallbacks: int = 0   # acts accepted as counted fallbacks
    _ppo: dict[str, Any] = field(default_factory=dict)
    _champion: Any = None

    def __post_init__(self) -> None:
        models = self.manifest.get(MODELS)
        models = models if isinstance(models, dict) else {}
        for name in self.manifest.get("policies", []):
            kind = kind_of(name)
            if kind is None:
                self.skipped[name] = "its choices are not derivable from the replay"
            elif kind in (PPO, CHAMPION):
                why = (self._load_ppo(name, models.get(name)) if kind == PPO
                       else self._load_champion(name, models.get(name)))
                if why is None:
                    self.kinds[name] = kind
                else:
                    self.skipped[name] = why
            else:
                self.kinds[name] = kind
        self._factor = make_policy("factor")
        self._magpie = make_policy("magpie")

    def _load_champion(self, name: str, digest: object) -> str | None:
        """Why the champion's seats cannot be re-played here, or None (it is loaded)."""
        if not isinstance(digest, str):
            return "league.json records no digest of its network"
        try:
            if champion_digest() != digest:
                return ("this install's champion is another network than the league played "
                        "(its sha256 is not league.json's)")
            self._champion = make_policy(CHAMPION)
        except OSError as e:
            return f"its network cannot be read here ({e.strerror or e})"
        except ValueError as e:  # NetError
            return f"its network cannot be loaded here ({shown(str(e), 160)})"
        return None

    def _load_ppo(self, name: str, digest: object) -> str | None:
        """Why the seats of ``name`` cannot be re-played here, or None (its policy is loaded)."""
        named = _named(name)
        if not isinstance(digest, str):
            return f"{named}: league.json records no digest of its model"
        try:
            path = _model_file(name)
        except (OSError, ValueError):
            return f"model {named} is missing"
        try:
            if model_digest(name) != digest:
                return f"model {named} is changed (its sha256 is not league.json's)"
        except OSError as e:
            return f"model {named} cannot be read ({shown(str(e.strerror or e), 160)})"
        try:
            from agents.learn.ppo import PPOPolicy, load_model
            load_model(path)
        except ImportError:
            return f"{named}: re-playing a ppo: model needs torch"
        except ValueError as e:  # ModelError
            return f"model {named} cannot be loaded ({shown(str(e), 300)})"
        self._ppo[name] = PPOPolicy(path)
        return None

    def check(self, row: dict, config: GameConfig, events: list) -> str | None:
        """Why the episode's re-played seats did not play their policies (None if they did).

        ``events`` must have re-derived with ``sim.replay`` under ``config``: the game is stepped
        through its recorded acts, as the replay does, without comparing the events again."""
        episode = self.episode(row, config.seed)
        if episode is None:
            return None
        game = Game(config)
        turn: list[dict] = []
        for e in events:
            if not (isinstance(e, dict) and e.get("kind") == "act"):
                continue
            turn.append(e)
            if len(turn) < SEATS:
                continue
            by_seat = sorted(turn, key=lambda a: a["seat"])
            turn = []
            episode(game, by_seat)
            if episode.problem is not None:
                return episode.problem
            try:
                game._play([_action(a) for a in by_seat], [a.get("say", "") for a in by_seat],
                           [a.get("text", "") for a in by_seat],
                           [bool(a.get("scripted", False)) for a in by_seat], stored=True)
            except ValueError as error:  # not after sim.replay has re-derived the events
                return f"its turn {game.turn} cannot be played again ({shown(str(error))})"
        return None

    def episode(self, row: dict, seed: int) -> Episode | None:
        """The re-play check of one episode (None when no seat of it is re-played)."""
        lineup = row["lineup"]
        plays = row.get("fallbackPlay", ["factor"] * SEATS)
        budget = row.get("fallbacks")
        checks = []
        for seat, name in enumerate(lineup):
            kind = self.kinds.get(name) if isinstance(name, str) else None
            if kind is None:
                continue
            if kind == "random":
                policy = make_policy(spec_of(name))
                policy.reset(seed)  # as the league does: reset(the episode's game seed)
            elif kind == PPO:
                policy = self._ppo[name]
            elif kind == CHAMPION:
                policy = self._champion
            else:
                policy = self._factor if kind == "factor" else self._magpie
            fallback = plays[seat] if isinstance(plays, list) and len(plays) == SEATS else None
            allowed = (budget[seat] if isinstance(budget, list) and len(budget) == SEATS
                       and isinstance(budget[seat], int) else 0)
            checks.append(_Seat(seat, name, kind, policy, self._fallback(fallback), allowed))
        return Episode(self, checks) if checks else None

    def _fallback(self, play: object) -> Callable[[Game, int], str] | None:
        if play == "wait":
            return lambda game, seat: WAIT
        if play == "factor":
            return self._factor.act
        return None

    def notes(self) -> list[str]:
        """What verify says about re-playing: which policies, how many acts, which were not."""
        out = []
        if self.kinds:
            extra = (f", {self.fallbacks} as counted fallbacks" if self.fallbacks else "")
            out.append(f"re-played the seats of {', '.join(_named(k) for k in self.kinds)}: "
                       f"{self.decisions} "
                       f"recorded acts are the policy's own choice{extra}")
        for name, why in self.skipped.items():
            out.append(f"{why}; its seats were not re-played" if kind_of(name) == PPO
                       else f"{_named(name)} was not re-played: {why}")
        return out


@dataclass
class _Seat:
    seat: int
    name: str
    kind: str
    policy: Any
    fallback: Callable[[Game, int], str] | None
    allowed: int  # fallbacks the results line counts for this seat


class Episode:
    """One episode's check, called with the game at the start of each turn and the turn's six
    recorded acts by seat: compares each re-played seat's act with its policy's choice; the
    first difference is kept in ``problem``."""

    def __init__(self, seats: Seats, checks: list[_Seat]) -> None:
        self._seats = seats
        self._checks = checks
        self.problem: str | None = None

    def __call__(self, game: Game, acts: list[dict]) -> None:
        if self.problem is not None:
            return
        for c in self._checks:
            e = acts[c.seat]
            try:
                if c.kind in SCRIPTED:
                    problem = self._scripted(game, c, e)
                else:
                    problem = self._unscripted(game, c, e)
            except Exception as error:  # a state the policy cannot read: say so, go on
                self.problem = (f"re-playing seat {c.seat} ({_named(c.name)}) on turn "
                                f"{game.turn} raised {type(error).__name__}: "
                                f"{shown(str(error))}")
                return
            if problem is not None:
                self.problem = (f"seat {c.seat} ({_named(c.name)}) played "
                                f"{shown(e.get('sentence', ''), quoted=True)} on turn "
                                f"{game.turn}, but {problem}")
                return

    def _scripted(self, game: Game, c: _Seat, e: dict) -> str | None:
        want = c.policy.act(game, c.seat)
        plain = "structured" not in e and not e.get("say") and not e.get("text")
        sentence = e.get("sentence", "")
        if plain and sentence == want:
            self._seats.decisions += 1
            return None
        if plain and c.allowed > 0 and c.fallback is not None \
                and sentence == c.fallback(game, c.seat):
            c.allowed -= 1
            self._seats.fallbacks += 1
            return None
        return f"{c.kind} plays {shown(want, quoted=True)} there"

    def _unscripted(self, game: Game, c: _Seat, e: dict) -> str | None:
        if c.kind in (PPO, CHAMPION):
            if e.get("scripted"):
                return None  # a fallback, counted and checked by verify_claims
            wants = (_ppo_choices(c.policy, game, c.seat) if c.kind == PPO
                     else _near_best(c.policy.logits(game, c.seat), game, c.seat))
        else:
            want = c.policy.act(game, c.seat)  # always: random's stream advances every turn
            if e.get("scripted"):
                return None
            wants = [want]
        recorded = e.get("structured")
        if isinstance(recorded, dict) and not e.get("say") and not e.get("text"):
            played = _action(e)  # the intent the replay played (it re-derived)
            for want in wants:
                try:  # the same intent, or one the rules check into the recorded one
                    if want == played or game.intent_for(want, c.seat)[0].to_json() == recorded:
                        self._seats.decisions += 1
                        return None
                except ValueError:
                    continue
        plays = []
        for want in wants[:3]:
            try:
                plays.append(shown(game.intent_for(want, c.seat)[1], quoted=True))
            except ValueError:
                plays.append(repr(want))
        return f"{_named(c.name)} plays {' or '.join(plays)} there"


def _ppo_choices(policy: Any, game: Game, seat: int) -> list:
    """The intents of the legal actions whose logit is within :data:`PPO_TIE` of the best."""
    import numpy as np
    import torch

    from sim.codec.action_table import legal_mask
    from sim.codec.encode import encode_flat

    st = game.state
    mask = legal_mask(st, seat)
    obs = np.asarray(encode_flat(st, seat, mask), np.float32)[None]
    policy._check_sizes(obs.shape[1], len(mask))
    with torch.no_grad():
        logits = policy.net().masked_logits(torch.from_numpy(obs))[0]
    return _near_best(logits.numpy(), game, seat)


def _near_best(logits: Any, game: Game, seat: int) -> list:
    """The intents of the legal actions whose logit is within :data:`PPO_TIE` of the best,
    best first."""
    import numpy as np

    from sim.codec.action_table import legal_mask, to_intent

    st = game.state
    mask = legal_mask(st, seat)
    logits = np.asarray(logits, np.float64)
    best = float(logits.max())
    near = np.flatnonzero(logits >= best - PPO_TIE).tolist()
    near.sort(key=lambda i: -float(logits[i]))
    return [to_intent(i, st.world, seat, st.room[seat]) for i in near if mask[i]]


def _named(name: object) -> str:
    """A policy name as a note or problem shows it: ``league.json`` may hold anything."""
    return shown(name, SHOWN_NAME)
