"""The policy interface, building policies from specs, and playing whole episodes.

A policy decides one seat's act from the start-of-turn state (RULES §6.1, §17): ``act(game,
seat)`` returns a sentence (parsed by the rules, docs/sentences.md), an ``Intent``, or a
:class:`Decision` (the act plus the seat's spoken line and notes, and whether a baseline wrote
it), which language-model seats need (SENTENCES §20.1). A policy with ``concurrent = True`` may
be asked from a worker thread while the other seats decide (:func:`decide_turn`), so that the
requests of slow remote seats overlap (RULES §6.6).

A policy may also be a plain function of the seat's view, ``def my_policy(view: dict) -> str``,
as a Kaggle agent is a function of its observation: :func:`make_policy` wraps it
(``sim.seat_view.FunctionPolicy``), so it plays wherever a spec is accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from sim import Game, GameConfig, Intent
from sim.game import is_bool
from sim.policies import POLICIES, check_town
from sim.rules.world import SEATS


@runtime_checkable
class Policy(Protocol):
    """Anything with ``act(game, seat) -> str | Intent``.

    ``act`` must decide only from what ``seat`` may see (``game.observe(seat)`` or
    :class:`agents.baselines.view.SeatView`) and must not change the game. Stateful policies may
    also define ``reset(seed)``; :func:`play_episode` calls it before the first turn. A class
    attribute ``scripted = True`` marks the seat's acts as scripted (RULES §6.1), as the
    original does for its baselines. ``act`` may return a :class:`Decision` to also speak,
    write notes or mark a fallback; ``concurrent = True`` allows asking it from a worker thread
    beside the other seats (:func:`decide_turn`); ``take_records()``, when defined, returns
    per-decision records (dicts with ``turn`` and ``seat``) that the league stores in the
    replay under ``"llm"`` (``agents.llm.LLMPolicy`` logs its prompts and replies this way).
    """

    def act(self, game: Game, seat: int) -> str | Intent | Decision: ...


@dataclass(frozen=True)
class Decision:
    """A whole answer for one turn: what a language-model seat returns (SENTENCES §20.1).

    ``action`` is played like a bare sentence or ``Intent``; ``say`` and ``notes`` go to
    ``Game.play_turn`` (spoken line; private notes, kept when empty); ``scripted`` marks an act a
    baseline wrote in the policy's place (a fallback), recorded as RULES §6.6 says.
    """

    action: str | Intent
    say: str = ""
    notes: str = ""
    scripted: bool = False

    def __post_init__(self) -> None:
        """Refused where it is made (a seat's fault) rather than at ``play_turn``, which would
        refuse the whole turn: ``scripted="no"`` would be recorded as True."""
        for name in ("say", "notes"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"Decision.{name} must be a str; got "
                                 f"{type(getattr(self, name)).__name__}")
        if not is_bool(self.scripted):
            raise ValueError(f"Decision.scripted must be a bool; got "
                             f"{type(self.scripted).__name__}")
        if type(self.scripted) is not bool:  # numpy's: counted and recorded as Python's
            object.__setattr__(self, "scripted", bool(self.scripted))


_is_decision = Decision.__instancecheck__  # isinstance(a, Decision) without a call frame


def as_decision(answer: str | Intent | Decision) -> Decision:
    """Any answer of ``act`` as a :class:`Decision` (a bare action says and notes nothing)."""
    return answer if isinstance(answer, Decision) else Decision(answer)


def decide_turn(game: Game, policies: Sequence[Policy]) -> list[Any]:
    """Every seat's answer to ``act`` for this turn, in seat order.

    Seats whose policy sets ``concurrent = True`` are asked at the same time in worker
    threads (the others in this thread meanwhile), so six remote model seats wait for one
    request, not six. The game is not changed until every answer is in, so the threads only
    read it. An exception of any seat is raised here, after all threads have finished.
    """
    threaded = [s for s, p in enumerate(policies) if getattr(p, "concurrent", False)]
    if len(threaded) < 2:
        return [p.act(game, seat) for seat, p in enumerate(policies)]
    with ThreadPoolExecutor(max_workers=len(threaded)) as pool:
        futures = {s: pool.submit(policies[s].act, game, s) for s in threaded}
        local = {s: p.act(game, s) for s, p in enumerate(policies) if s not in futures}
        return [futures[s].result() if s in futures else local[s]
                for s in range(len(policies))]


def make_policy(spec: str | Policy | type | Mapping[str, Any], **params: Any) -> Policy:
    """Build a policy from a spec and keyword parameters (docs/api.md §3).

    ``spec`` is ``"factor"``, ``"magpie"``, ``"random"`` (case-insensitive), a prefixed spec
    such as ``"sb3:model.zip"`` or ``"llm:MODEL@URL"``, or ``"module.path:Name"`` naming a class
    or factory in an importable module (``Name`` may be dotted); ``params`` go to its
    constructor, e.g. ``make_policy("factor", sell_margin=1)``.  A mapping ``{"name": spec,
    **params}`` and a ready policy object (no params) also work.  Names resolve through
    ``sim.policies``, where the ``guild.policies`` entry points of ``pyproject.toml`` declare
    ours and a user's package may declare its own.  Raises ``ValueError`` naming the spec for
    anything unknown or unbuildable.

    ``Name`` (or ``spec`` itself) may be a policy function instead: a plain function requiring
    exactly one positional argument, given no params (``sim.policies.is_policy_function``).  It
    is called each turn with the seat's view (``sim.seat_view.turn_view``: the dict a seat
    that runs apart is sent, ``turn``, ``seat``, ``turns``, ``aliases``, ``commissions``,
    ``observation``, ``text``, ``legal`` and ``admissible``) and returns a sentence; a function
    requiring two or more arguments is refused.
    """
    return POLICIES.make(spec, **params)


def is_scripted(policy: object) -> bool:
    """Whether the seat's acts are recorded as scripted (the original's baselines are)."""
    return bool(getattr(policy, "scripted", False))


def play_episode(config: GameConfig, policies: Sequence[Policy | str], *,
                 initial: dict | None = None, reset: bool = True,
                 on_turn: Callable[[Game, list[dict]], None] | None = None) -> Game:
    """Play one whole episode and return the finished game.

    Every turn each seat decides against the same start-of-turn state (concurrent seats at
    once, :func:`decide_turn`), then the six actions go to ``play_turn`` together (RULES
    §6.1-6.3), with the says and notes of :class:`Decision` answers and ``scripted`` set for
    baseline seats and fallbacks.

    Args:
        config: the episode's settings.
        policies: six policies (or specs or policy functions for :func:`make_policy`), in
            seat order.
        initial: a snapshot-form state to ``restore`` before turn 0 (scenarios, overrides).
        reset: call each policy's ``reset(seed)`` first, with ``config.seed``.
        on_turn: called after every turn with the game and that turn's six act records.
    """
    if not isinstance(config, GameConfig):
        raise ValueError(f"play_episode: config must be a GameConfig (GameConfig.from_dict "
                         f"reads a dict); got {type(config).__name__}")
    if (isinstance(policies, (str, bytes)) or not isinstance(policies, Sequence)
            or len(policies) != SEATS):
        raise ValueError(f"play_episode needs exactly {SEATS} policies (one per seat); got "
                         f"{policies!r:.80}")
    if on_turn is not None and not callable(on_turn):
        raise ValueError(f"play_episode: on_turn must be callable; got {on_turn!r:.40}")
    seats = [make_policy(p) for p in policies]
    check_town(seats, config.world)
    game = Game(config)
    if initial is not None:
        game.restore(initial)
    if reset:
        for p in seats:
            r = getattr(p, "reset", None)
            if callable(r):
                r(config.seed)
    scripted = [is_scripted(p) for p in seats]
    # Read once, not every turn: whether any seats are asked at the same time (decide_turn).
    together = sum(bool(getattr(p, "concurrent", False)) for p in seats) >= 2
    acts_of = [p.act for p in seats]
    while not game.done:
        answers = (decide_turn(game, seats) if together
                   else [act(game, seat) for seat, act in enumerate(acts_of)])
        if not any(map(_is_decision, answers)):  # bare acts: nothing said
            acts = game.play_turn(answers, scripted=scripted)
        else:
            turn = [as_decision(a) for a in answers]
            acts = game.play_turn([d.action for d in turn], says=[d.say for d in turn],
                                  notes=[d.notes for d in turn],
                                  scripted=[s or d.scripted for s, d in zip(scripted, turn)])
        if on_turn is not None:
            on_turn(game, acts)
    return game
