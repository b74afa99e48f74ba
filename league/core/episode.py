"""Playing one league episode: policies decide, faults fall back, time is bounded.

It runs inside worker processes (or Ray tasks) and returns plain JSON-ready data. Our own
policies play in this process (:func:`trusted`); every other one plays apart, in a seat process
(``league.apart.isolated``), sandboxed by default (``league.apart.sandbox``).

Faults. A decision is replaced by the seat's *fallback*, recorded ``scripted`` (RULES §6.1, §21),
when the policy raises, returns garbage (neither a sentence nor an ``Intent`` the rules accept
for that seat now), overruns ``decision_timeout`` or its seat process crashes; a policy whose
``reset`` fails plays its fallback all episode. The fallback (``--fallback``) is ``wait`` or
``factor``: by default ``llm:`` seats fall back to ``factor``, as in the original, and the others
wait, so a policy gains nothing by failing. Rows and replays name it (``fallbackPlay``).

Time limits. With a limit set (always, when a seat runs apart), an in-process call runs in a
daemon thread of its seat (``league.apart.calls``), waited for only until the limit: no signals,
so any thread or Ray task will do. A thread cannot be killed, so an overrunning call is
*abandoned*: its fallback plays the seat for the rest of the episode, and each decision that
comes while it still runs is another ``timeout`` fault. A seat process enforces its own limit
and is killed instead. The baselines, and any policy when no limit is set, are called directly.
Every seat's reset is under way before any is waited for, and a seat process has a start's
allowance for it (:func:`start_limit`): a slow start costs its own seat, never the others'
turns. ``episode_timeout`` bounds every wait in this process and ends the episode between turns
(``end_early``, reason ``deadline``, RULES §6.4); a seat process's waits are bounded by its own
limits, which the default deadline (:func:`episode_limit`) adds up. Timeouts depend on the
machine; everything else is deterministic.

Language-model seats answer with an ``agents.Decision`` (say, notes, and ``scripted`` for the
fallback they play themselves after two unusable replies, counted in ``fallbacks``; the seat's
fallback, ``factor`` or ``--fallback wait``, is passed to them); seats with
``concurrent = True`` are asked at once (RULES §6.6), and what ``take_records()`` returns goes
into the replay under ``"llm"``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents import Decision, Factor, is_scripted, make_policy
from agents.baselines.rules import WAIT
from league.apart import isolated, sandbox
from league.apart.calls import (
    Call,
    Seat,
    check,
    describe,
    explain,
    fault_of,
    past,
    plays,
    until,
)
from league.apart.isolated import DEFAULT_MEMORY_MB, SeatFaultError, hosted, town_refusal
from league.apart.isolated import from_spec as exec_policy
from league.core.atomic import write_atomic
from league.core.lineups import TRUSTED, EpisodeSpec
from league.core.replay_json import STDLIB, encode
from sim import Game, GameConfig, Intent
from sim.policies import check_town
from sim.rules.world import SEATS, STANDARD_TOWN

RESULT_KEYS = ("names", "scores", "coin", "wealth", "questPoints", "delivered", "robberies",
               "robbed", "turns", "maxTurns", "reason")  # RULES §13, in its order
FAULT_KINDS = ("raised", "garbage", "timeout", "crashed")

_log = logging.getLogger(__name__)
_FACTOR = Factor()
FALLBACKS = ("wait", "factor")  # what plays a decision a seat's policy does not make
FallbackAct = Callable[[Game, int], str]

Fault = Callable[[int, str, str], None]
_JSON = STDLIB  # what a replay's bytes are (``encode`` makes the same ones faster)


@dataclass(frozen=True)
class Settings:
    """What every episode of a league shares (sent once to each worker)."""

    policies: tuple[str, ...]
    turns: int = 14
    thievery: bool = True
    speech: bool = True
    decision_timeout: float | None = None
    episode_timeout: float | None = None
    start_timeout: float | None = None  # a seat process's episode reset (None: START_TIMEOUT)
    replay_dir: str | None = None  # write replays here; None returns them to the caller
    trust: bool = False            # run every policy in-process (--trust)
    seat_memory: int = DEFAULT_MEMORY_MB  # address-space cap of a seat process, MB
    sandbox: str = "bwrap"         # how seats that run apart run (league.apart.sandbox.MODES)
    hidden: tuple[str, ...] = ()   # folders no sandbox may see (the league's --out)
    seat_key: bytes | None = None  # a secret draw's key for seats' reset seeds (lineups)
    fallback: str | None = None    # wait or factor for every seat; None: factor for llm:, else wait


TOWN = STANDARD_TOWN  # the town every league plays (GameConfig's default; league.seat.host's)
APART_DECISION_TIMEOUT = 10.0  # seconds a seat that runs apart has per decision by default
BASELINES = ("factor", "magpie", "random")   # ours, pure Python (no numpy to load)
IN_PROCESS = (*BASELINES, "champion")        # ours: the engine's side
IN_PROCESS_PREFIXES = ("ppo:", "llm:")


def trusted(name: str, settings: Settings) -> bool:
    """Whether a seat's policy runs in the league's process.

    Our own policies do: the baselines (which alone may read the two hidden facts RULES §21
    allows), ``ppo:`` models (plain tensors, loaded with ``weights_only``) and language-model
    seats (our client talking to an endpoint).  So does anything under ``--trust`` or named
    ``trusted:SPEC``.  Everything else (``module:Name``, ``sb3:`` zips, which unpickle, and
    ``exec:`` programs) runs apart, in a seat process that sees only its seat.
    """
    low = name.strip().lower()
    if low.startswith(TRUSTED):
        return True
    if low.startswith("exec:"):  # a program, never in-process
        return False
    return settings.trust or low in IN_PROCESS or low.startswith(IN_PROCESS_PREFIXES)


def fallback_play(name: str, fallback: str | None) -> str:
    """What plays seat ``name``'s decisions that its policy does not make: ``wait`` or
    ``factor``. ``fallback`` (``--fallback``) decides for every seat; without it language-model
    seats (``llm:``, as in the original) fall back to ``factor`` and all others wait."""
    if fallback is not None:
        return fallback
    spec = name.strip().lower()
    return "factor" if spec.removeprefix(TRUSTED).startswith("llm:") else "wait"


def _wait(game: Game, seat: int) -> str:
    return WAIT


_FALLBACK_ACTS: dict[str, FallbackAct] = {"wait": _wait, "factor": _FACTOR.act}


def check_policy(name: str, settings: Settings) -> None:
    """Build the policy once before a league starts and check that it can play (ValueError
    naming it when it cannot)."""
    reach(built_policy(name, settings), name)


def built_policy(name: str, settings: Settings) -> Any:
    """The policy, built once before a league starts (ValueError naming it when it cannot be).

    A policy that runs apart is built in its own process (its module is never imported here,
    so its import-time code cannot reach the league)."""
    policy = league_policy(name, settings)
    own_fallback(policy, name, fallback_play(name, settings.fallback))
    return policy


def reach(policy: Any, name: str) -> None:
    """Check that a built policy (of seat name ``name``) can play, a ValueError in one line
    when it cannot: its ``probe`` (an ``llm:`` endpoint answers, a program starts in its
    sandbox) and, for one that plays in this process, its ``check_world`` (a ``ppo:`` model of
    another town's shapes cannot play :data:`TOWN`); one that runs apart is asked in its seat
    process when probed (``league.seat.host``), where it is loaded. Only for a league that will
    play: one that re-ranks finished episodes needs no server."""
    probe = getattr(policy, "probe", None)
    if callable(probe):
        probe()
    try:
        check_town([policy], TOWN)
    except ValueError as e:
        raise ValueError(town_refusal(name, e)) from None


def own_fallback(policy: Any, name: str, play: str) -> None:
    """Give a policy that plays its own fallback (``llm:`` seats) the seat's, ``play``; a spec
    that names another (``#fallback=``) is refused (ValueError): the league's ``--fallback``
    decides, and its records say so (``fallbackPlay``)."""
    if getattr(policy, "fallback", None) not in _FALLBACK_ACTS:
        return
    fragment = name.partition("#")[2]
    if policy.fallback != play and "fallback=" in fragment:
        raise ValueError(f"policy {name!r}: its #fallback={policy.fallback} is not the "
                         f"league's fallback for it ({play}); give --fallback {policy.fallback} "
                         "instead")
    policy.fallback = play


def league_policy(name: str, settings: Settings) -> Any:
    """The policy that plays ``name`` in a league: in-process when trusted, else apart."""
    spec = name.strip()
    if spec.lower().startswith(TRUSTED):
        return make_policy(spec[len(TRUSTED):])
    if trusted(spec, settings):
        return make_policy(spec)
    limits = {"timeout": decision_limit(settings), "memory_mb": settings.seat_memory,
              "seat_key": settings.seat_key}
    hidden = settings.hidden
    if settings.sandbox == "bwrap":  # the league's folder, and its other policies' own files
        hidden += sandbox.rivals_files(spec, settings.policies)
    if spec.lower().startswith("exec:"):
        policy = exec_policy(spec[len("exec:"):], **limits)
        if settings.sandbox == "bwrap":
            files, policy.argv = sandbox.exec_files(policy.argv)
            policy.launch = sandbox.launch(files, [], hidden)
        return policy
    if settings.sandbox != "bwrap":
        return hosted(spec, **limits)
    refused = sandbox.shadowed(spec)
    if refused is not None:
        raise ValueError(refused)
    files, path, runs = sandbox.policy_files(spec)
    return hosted(runs, name=spec, launch=sandbox.launch(files, path, hidden), **limits)


def decision_limit(settings: Settings) -> float:
    """A seat that runs apart always has a decision timeout (``--decision-timeout``, else
    :data:`APART_DECISION_TIMEOUT`): a program that sleeps must not hang the league."""
    return settings.decision_timeout or APART_DECISION_TIMEOUT


def episode_limit(settings: Settings) -> float:
    """The episode deadline when a seat runs apart and none was set: every turn at its
    longest (two decision limits: a seat kept waiting by the league has its limit from when the
    league turns to it, ``league.apart.isolated``), plus a start for the seat processes
    (:func:`start_timeout`; they start at once, so one start covers them all): a slow start
    then costs the other seats no turn."""
    return start_timeout(settings) + settings.turns * (2 * decision_limit(settings) + 1.0)


def start_timeout(settings: Settings) -> float:
    """Seconds a seat process has to answer its episode's reset (start, import, build and
    reset its policy): ``--start-timeout``, else ``league.apart.isolated.START_TIMEOUT``."""
    return settings.start_timeout or isolated.START_TIMEOUT


def start_limit(settings: Settings, episode: float | None) -> float:
    """:func:`start_timeout` in an episode of ``episode`` seconds (None: no deadline), but no
    more than the episode itself, and no less than a decision has.  A policy that starts slowly
    (a large import) plays under a tight ``--episode-timeout`` as it did before its reset was
    timed; ``--start-timeout`` cuts a stalling start short, so that the other seats keep their
    turns."""
    allowance = start_timeout(settings)
    if episode is not None:
        allowance = min(allowance, max(decision_limit(settings), episode))
    return allowance


# --- one episode -------------------------------------------------------------------------------

def play(spec: EpisodeSpec, settings: Settings) -> tuple[dict, str | None]:
    """Play one episode; return its ``results.jsonl`` row and, unless written, its replay JSON.

    With ``settings.replay_dir`` the replay is written there atomically before returning, so a
    results line is only ever appended for an episode whose replay is already written; it is
    not fsynced here: the league makes a batch of replays durable at once before their lines
    (``league.core.store``).
    """
    started = time.perf_counter()
    limit = settings.decision_timeout
    deadline = (started + settings.episode_timeout if settings.episode_timeout is not None
                else None)
    if deadline is None and not all(trusted(name, settings) for name in spec.lineup):
        deadline = started + episode_limit(settings)  # a seat runs apart: always a deadline
    threaded = limit is not None or deadline is not None
    config = GameConfig(seed=spec.seed, turns=settings.turns, thievery=settings.thievery,
                        speech=settings.speech, players=spec.lineup)
    game = Game(config)
    fallbacks = [0] * SEATS
    fallback_plays = [fallback_play(name, settings.fallback) for name in spec.lineup]
    acts = [_FALLBACK_ACTS[k] for k in fallback_plays]

    def fallback(game: Game, seat: int) -> str:
        return acts[seat](game, seat)

    faults: list[dict[str, int]] = [{} for _ in range(SEATS)]
    notes = [""] * SEATS

    def fault(seat: int, kind: str, note: str) -> None:
        faults[seat][kind] = faults[seat].get(kind, 0) + 1
        remark(seat, note)

    def remark(seat: int, note: str) -> None:
        if not notes[seat]:
            notes[seat] = f"turn {game.turn}: {note}"[:300]

    # Fresh policies every episode, so no state leaks from one episode into another and the
    # results cannot depend on which worker played which episode.
    seats: list[Seat] = []
    for seat, name in enumerate(spec.lineup):
        try:
            policy = league_policy(name, settings)
            own_fallback(policy, name, fallback_plays[seat])
            seats.append(Seat(policy, fallback=fallback_plays[seat]))
        except Exception as e:
            seats.append(Seat(_FACTOR, broken=True, fallback=fallback_plays[seat]))
            fault(seat, "raised", f"could not be built ({explain(e)}); "
                                  f"{plays(fallback_plays[seat])}")
    try:
        _reset(game, seats, spec.seed, limit, deadline, threaded, fault,
               start_limit(settings, None if deadline is None else deadline - started))
        scripted_by_policy = [is_scripted(s.policy) for s in seats]
        while not game.done:
            if past(deadline) and game.turn > 0:  # between turns: the first one always starts
                game.end_early()
                break
            turn = _decide(game, seats, limit, deadline, threaded, fault, fallback)
            if turn is None:  # the episode deadline passed during the decisions
                game.end_early()
                break
            answers, fell = turn
            if fell is None:  # six bare actions, nothing said, no fallback: the common turn
                try:
                    game.play_turn(answers, scripted=scripted_by_policy)
                    continue
                except ValueError:  # refused, nothing changed: replace the refused seats
                    decisions, fell = [Decision(a) for a in answers], [False] * SEATS
                    _replace_refused(game, decisions, fell, fault, fallback)
                    _play_decisions(game, decisions, fell, scripted_by_policy)
            else:
                decisions = answers
                _play_turn(game, decisions, fell, scripted_by_policy, fault, fallback)
            for seat in range(SEATS):
                fallbacks[seat] += fell[seat] or (decisions[seat].scripted
                                                  and not scripted_by_policy[seat])
    finally:
        for s in seats:
            s.close()
    payload = game.replay_payload(list(spec.lineup))
    payload["trusted"] = [trusted(name, settings) for name in spec.lineup]
    # how each seat ran: in the league's process (null), in a sandbox ("bwrap"), or apart
    # without one ("none")
    payload["sandbox"] = [None if t else settings.sandbox for t in payload["trusted"]]
    payload["fallbackPlay"] = fallback_plays
    records = _take_records(seats, remark)
    if records:
        payload["llm"] = records
    data = encode(payload)
    if settings.replay_dir is not None:  # this process alone writes this episode's replay
        write_atomic(Path(settings.replay_dir) / f"{spec.id}.json", data, sync=False, sole=True)
        text_out: str | None = None
    else:
        text_out = data.decode("ascii")
    results = payload["results"]
    row = {"id": spec.id, "index": spec.index, "group": spec.group, "rotation": spec.rotation,
           "seed": spec.seed, "lineup": list(spec.lineup)}
    row.update((k, results[k]) for k in RESULT_KEYS)
    row.update(trusted=payload["trusted"], fallbacks=fallbacks, fallbackPlay=fallback_plays,
               faults=faults, faultNotes=notes, wallTime=round(time.perf_counter() - started, 4))
    return row, text_out


def _reset(game: Game, seats: list[Seat], seed: int, limit: float | None,
           deadline: float | None, threaded: bool, fault: Fault, start: float) -> None:
    """Reset every seat's policy for the episode; one that fails, or has not answered within
    its limit, is broken: its fallback plays the whole episode.

    Every reset is under way before any is waited for (a seat process is sent its reset, with
    ``start`` seconds to answer it; a trusted policy's runs in its seat's thread when
    ``threaded``), so slow resets overlap instead of adding up. A trusted reset still running
    at the episode's deadline is a ``timeout`` too: it held the episode up.
    """
    calls: dict[int, Call] = {}
    for seat, s in enumerate(seats):
        reset = getattr(s.policy, "reset", None)
        if callable(reset) and not s.broken:
            calls[seat] = call = s.call(seat, reset, (seed,), game.turn, threaded)
            if s.bounded and call.error is None:  # a seat process: its reset goes now
                s.policy.begin(game, seat, start)
    for seat, call in calls.items():
        s = seats[seat]
        if s.bounded and call.error is None:
            try:
                s.policy.ready()
            except SeatFaultError as e:
                s.broken = True
                fault(seat, e.kind, f"{e}; {plays(s.fallback)}")
        elif not call.wait(until(call.started, limit, deadline)):
            s.broken, s.overrun = True, call
            over = (f"took over {limit:g} s" if limit is not None and not past(deadline)
                    else "had not returned by the episode's deadline")
            fault(seat, "timeout", f"reset {over}; {plays(s.fallback)}")
        elif call.error is not None:
            s.broken = True
            fault(seat, "raised", f"reset raised {check(call.error, s.policy)}; "
                                  f"{plays(s.fallback)}")


def _decide(game: Game, seats: list[Seat], limit: float | None, deadline: float | None,
            threaded: bool, fault: Fault,
            fallback: FallbackAct) -> tuple[list[Any], list[bool] | None] | None:
    """Six decisions for this turn and which seats fell back (``fallback`` plays them).

    Concurrent seats are all started first, in their threads; the others are asked one after
    another meanwhile. None when the episode deadline passed: the turn is abandoned. A seat
    that would run here and now anyway (a built-in baseline, a seat process, any policy when
    there is no time limit) is called directly, without a ``Call`` to wait on; and when all six
    answer a bare action (a sentence or an ``Intent``), the six answers come back as they are,
    with None for ``fell``: no ``Decision`` is built (in a league of baselines this machinery
    would be a large share of every turn's work).
    """
    asking = [seat for seat, s in enumerate(seats) if not s.broken]
    bare = len(asking) == SEATS
    answers: list[Any] = [None] * SEATS
    errors: list[tuple[str, str] | None] = [None] * SEATS  # (fault kind, note)
    for seat in asking:  # seat processes start thinking while the others are asked
        if seats[seat].bounded:
            seats[seat].policy.post(game, seat)
    calls = {seat: seats[seat].call(seat, seats[seat].policy.act, (game, seat), game.turn, True)
             for seat in asking if seats[seat].concurrent}
    for seat in [x for x in asking if x not in calls] + list(calls) if calls else asking:
        s = seats[seat]
        if seat not in calls and (s.direct or not threaded):  # what Seat.call runs here
            try:
                answer = answers[seat] = s.policy.act(game, seat)
            except BaseException as e:  # judged as a Call's error would be
                errors[seat] = fault_of(s, e)
                bare = False
            else:
                bare = bare and isinstance(answer, (str, Intent))
            continue
        bare = False
        call = calls.get(seat) or s.call(seat, s.policy.act, (game, seat), game.turn, threaded)
        if not call.wait(until(call.started, limit, deadline)):
            if past(deadline):
                return None
            s.broken, s.overrun = True, call
            errors[seat] = ("timeout", f"took over {limit} s; {plays(s.fallback)} from now on")
        elif call.error is not None:
            errors[seat] = fault_of(s, call.error)
        else:
            answers[seat] = call.value
    if bare:
        return answers, None
    decisions: list[Decision] = []
    fell: list[bool] = []
    for seat, s in enumerate(seats):
        decision: Decision | None = None
        error = errors[seat]
        if error is not None:
            fault(seat, *error)
        elif s.broken:
            if s.still_overrunning():
                fault(seat, "timeout", f"still busy with its call of turn {s.overrun.turn}")
        else:
            decision = _valid(answers[seat], seat, fault)
        fell.append(decision is None)
        decisions.append(Decision(fallback(game, seat)) if decision is None else decision)
    return decisions, fell


def _valid(answer: Any, seat: int, fault: Fault) -> Decision | None:
    """The answer as a ``Decision``, or None (a ``garbage`` fault) when it is not one."""
    decision = answer if isinstance(answer, Decision) else Decision(answer)
    if not isinstance(decision.action, (str, Intent)):
        fault(seat, "garbage", f"returned {type(decision.action).__name__}, not a sentence or "
                               "an Intent")
        return None
    if not (isinstance(decision.say, str) and isinstance(decision.notes, str)):
        fault(seat, "garbage", "returned a Decision whose say or notes is not a str")
        return None
    return decision


def _take_records(seats: list[Seat], remark: Callable[[int, str], None]) -> list[dict]:
    """Every policy's ``take_records()`` (each policy object once), sorted by turn and seat.

    A policy whose bookkeeping fails must not lose the episode: its records are left out, and
    why goes into the seat's fault note and the log.
    """
    out: list[dict] = []
    seen: set[int] = set()
    for seat, s in enumerate(seats):
        take = getattr(s.policy, "take_records", None)
        if id(s.policy) in seen or not callable(take):
            continue
        seen.add(id(s.policy))
        try:
            got = take()
        except Exception as e:
            _log.warning("seat %d: take_records raised; its records are not in the replay",
                         seat, exc_info=True)
            remark(seat, f"take_records raised {explain(e, s.policy)}; its records are not "
                         "in the replay")
            continue
        if isinstance(got, list):
            out.extend(r for r in got if isinstance(r, dict))
    out.sort(key=lambda r: (r.get("turn", 0), r.get("seat", 0)))
    return out


def _play_turn(game: Game, decisions: list[Decision], fell: list[bool],
               scripted_by_policy: list[bool], fault: Any, fallback: FallbackAct) -> None:
    """``play_turn``; an ``Intent`` the rules refuse is garbage and the fallback plays that seat.

    ``play_turn`` checks every action before it changes anything, so a refused call can be
    retried with the offending seats replaced. Fallback decisions are recorded scripted.
    """
    try:
        _play_decisions(game, decisions, fell, scripted_by_policy)
        return
    except ValueError:
        pass
    _replace_refused(game, decisions, fell, fault, fallback)
    _play_decisions(game, decisions, fell, scripted_by_policy)


def _play_decisions(game: Game, decisions: list[Decision], fell: list[bool],
                    scripted_by_policy: list[bool]) -> None:
    game.play_turn([d.action for d in decisions], says=[d.say for d in decisions],
                   notes=[d.notes for d in decisions],
                   scripted=[f or s or d.scripted
                             for f, s, d in zip(fell, scripted_by_policy, decisions)])


def _replace_refused(game: Game, decisions: list[Decision], fell: list[bool],
                     fault: Any, fallback: FallbackAct) -> None:
    """Let the fallback play each seat whose action the rules refuse (a ``garbage`` fault)."""
    for seat, d in enumerate(decisions):
        try:
            game.intent_for(d.action, seat)
        except ValueError as e:
            fault(seat, "garbage", f"returned an action the rules refuse ({describe(e)})")
            decisions[seat] = Decision(fallback(game, seat))
            fell[seat] = True
