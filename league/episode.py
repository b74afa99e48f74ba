"""Playing one league episode: policies decide, faults fall back to ``factor``, time is bounded.

This is the part that runs inside worker processes (or Ray tasks). It imports only ``sim`` and
``agents`` plus the policies' own modules, and returns plain JSON-ready data.

Faults (issue 7 scope 5). For each decision the seat's policy is called; the decision is
replaced by the ``factor`` baseline's sentence, recorded ``scripted`` (RULES §6.1, §21), when
the policy

- raises (any ``Exception``, or ``SystemExit``),
- returns garbage: neither a sentence (``str``) nor an ``Intent`` the rules accept for that
  seat now (``play_turn`` would refuse it), or
- takes longer than ``decision_timeout`` seconds.

Timeouts are enforced two ways. In the main thread of a process (local workers, the in-process
run, Ray tasks) a ``SIGALRM`` interval timer interrupts the call when the limit passes, so a
policy that sleeps or loops cannot stall the league; the interruption is a ``BaseException``
that a policy's ``except Exception`` does not swallow. Wherever signals are unavailable, and for
code that does not return to the interpreter in time, the decision is timed and judged after the
fact: an over-time answer is discarded. (A thread with ``join(timeout)`` was rejected: the
abandoned thread keeps reading the game while the next turn changes it.) Either way the decision
counts as a fault of its policy and ``factor`` plays instead. Timeouts depend on the machine, so
a policy near its limit can make a league non-reproducible; everything else is deterministic.

A policy whose ``reset`` raises plays ``factor`` for the whole episode (its state is unknown);
every decision counts as a fallback.

The episode limit ``episode_timeout`` is checked before each turn, and a decision still running
when it passes is interrupted too; the episode then ends between turns with ``end_early``
(reason ``deadline``, RULES §6.4), so the turn in progress never happens.

Language-model seats (issue 11). A policy may answer with an ``agents.Decision`` (sentence, say,
notes, scripted); its say and notes go to ``play_turn`` and ``scripted`` (the policy's own
``factor`` fallback) is recorded and counted in ``fallbacks``. Seats whose policy sets
``concurrent = True`` are asked at the same time in worker threads while the others decide here
(RULES §6.6: the requests of a turn overlap). Threads cannot take the alarm, so their decisions
are judged after the fact against ``decision_timeout`` (such policies bound their own time, as
``LLMPolicy`` does with its request timeouts); waiting for them stops at the episode deadline.
Records a policy returns from ``take_records()`` (an ``LLMPolicy``'s prompts, replies and token
counts) are stored in the replay payload under ``"llm"``, sorted by turn and seat; ``sim.replay``
and ``guild verify`` ignore that key.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents import Decision, Factor, is_scripted, make_policy
from sim import Game, GameConfig, Intent
from sim.rules.world import SEATS

from .atomic import write_atomic
from .lineups import EpisodeSpec

RESULT_KEYS = ("names", "scores", "coin", "wealth", "questPoints", "delivered", "robberies",
               "robbed", "turns", "maxTurns", "reason")  # RULES §13, in its order
FAULT_KINDS = ("raised", "garbage", "timeout")


@dataclass(frozen=True)
class Settings:
    """What every episode of a league shares (sent once to each worker)."""

    policies: tuple[str, ...]
    turns: int = 14
    thievery: bool = True
    speech: bool = True
    decision_timeout: float | None = None
    episode_timeout: float | None = None
    replay_dir: str | None = None  # write replays here; None returns them to the caller


class _Interrupted(BaseException):
    """Raised by the alarm inside an over-time decision (not an ``Exception`` on purpose)."""


class _Alarm:
    """A per-call ``SIGALRM`` limit; a no-op outside the main thread or without SIGALRM."""

    def __init__(self) -> None:
        self.usable = (hasattr(signal, "setitimer")
                       and threading.current_thread() is threading.main_thread())
        self._old: Any = None

    def __enter__(self) -> _Alarm:
        if self.usable:
            self._old = signal.signal(signal.SIGALRM, _raise_interrupted)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.usable:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._old)

    def call(self, fn: Any, limit: float | None, *args: Any) -> Any:
        """``fn(*args)``, interrupted with ``_Interrupted`` after ``limit`` seconds."""
        if limit is None or not self.usable:
            return fn(*args)
        if limit <= 0:
            raise _Interrupted
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            return fn(*args)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)


def _raise_interrupted(signum: int, frame: object) -> None:
    raise _Interrupted


_FALLBACK = Factor()


def play(spec: EpisodeSpec, settings: Settings) -> tuple[dict, str | None]:
    """Play one episode; return its ``results.jsonl`` row and, unless written, its replay JSON.

    With ``settings.replay_dir`` the replay is written there atomically before returning, so a
    results line is only ever appended for an episode whose replay is already on disk.
    """
    started = time.perf_counter()
    deadline = (started + settings.episode_timeout if settings.episode_timeout is not None
                else None)
    config = GameConfig(seed=spec.seed, turns=settings.turns, thievery=settings.thievery,
                        speech=settings.speech, players=spec.lineup)
    game = Game(config)
    fallbacks = [0] * SEATS
    faults: list[dict[str, int]] = [{} for _ in range(SEATS)]
    notes = [""] * SEATS
    broken = [False] * SEATS

    def fault(seat: int, kind: str, note: str) -> None:
        faults[seat][kind] = faults[seat].get(kind, 0) + 1
        if not notes[seat]:
            notes[seat] = f"turn {game.turn}: {note}"[:300]

    # Fresh policies every episode, so no state leaks from one episode into another and the
    # results cannot depend on which worker played which episode.
    seats: list[Any] = []
    for seat, name in enumerate(spec.lineup):
        try:
            seats.append(make_policy(name))
        except Exception as e:
            seats.append(_FALLBACK)
            broken[seat] = True
            fault(seat, "raised", f"could not be built ({_describe(e)}); plays factor")

    with _Alarm() as alarm:
        for seat, policy in enumerate(seats):
            reset = getattr(policy, "reset", None)
            if callable(reset) and not broken[seat]:
                try:
                    alarm.call(reset, settings.decision_timeout, spec.seed)
                except _Interrupted:
                    broken[seat] = True
                    fault(seat, "timeout", f"reset took over {settings.decision_timeout} s; "
                                           "plays factor")
                except (Exception, SystemExit) as e:
                    broken[seat] = True
                    fault(seat, "raised", f"reset raised {_describe(e)}; plays factor")
        scripted_by_policy = [is_scripted(p) for p in seats]
        while not game.done:
            if deadline is not None and time.perf_counter() >= deadline:
                game.end_early()
                break
            turn = _decide(game, seats, broken, settings.decision_timeout, deadline, alarm,
                           fault)
            if turn is None:  # the episode deadline passed during the decisions
                game.end_early()
                break
            decisions, fell = turn
            _play_turn(game, decisions, fell, scripted_by_policy, fault)
            for seat in range(SEATS):
                fallbacks[seat] += fell[seat] or (decisions[seat].scripted
                                                  and not scripted_by_policy[seat])
    payload = game.replay_payload(list(spec.lineup))
    records = _take_records(seats)
    if records:
        payload["llm"] = records
    text = json.dumps(payload, separators=(",", ":"))
    if settings.replay_dir is not None:
        write_atomic(Path(settings.replay_dir) / f"{spec.id}.json", text)
        text_out: str | None = None
    else:
        text_out = text
    results = payload["results"]
    row = {"id": spec.id, "index": spec.index, "group": spec.group, "rotation": spec.rotation,
           "seed": spec.seed, "lineup": list(spec.lineup)}
    row.update((k, results[k]) for k in RESULT_KEYS)
    row.update(fallbacks=fallbacks, faults=faults, faultNotes=notes,
               wallTime=round(time.perf_counter() - started, 4))
    return row, text_out


def _decide(game: Game, seats: list, broken: list[bool], limit: float | None,
            deadline: float | None, alarm: _Alarm,
            fault: Any) -> tuple[list[Decision], list[bool]] | None:
    """Six decisions for this turn and which seats fell back to ``factor``.

    None when the episode deadline passed meanwhile: the turn is abandoned.
    """
    answers: list[Any] = [None] * SEATS
    errors: list[str | None] = [None] * SEATS
    spent = [0.0] * SEATS
    threaded = [s for s, p in enumerate(seats)
                if not broken[s] and getattr(p, "concurrent", False)]
    pool = ThreadPoolExecutor(max_workers=len(threaded)) if len(threaded) > 1 else None
    futures = {s: pool.submit(_timed, seats[s].act, game, s) for s in threaded} if pool else {}
    try:
        for seat, policy in enumerate(seats):
            if broken[seat] or seat in futures:
                continue
            budget = limit
            if deadline is not None:
                left = deadline - time.perf_counter()
                budget = left if budget is None else min(budget, left)
            t0 = time.perf_counter()
            try:
                answers[seat] = alarm.call(policy.act, budget, game, seat)
            except _Interrupted:
                errors[seat] = "timeout"
            except (Exception, SystemExit) as e:
                errors[seat] = f"raised {_describe(e)}"
            spent[seat] = time.perf_counter() - t0
            if deadline is not None and time.perf_counter() >= deadline:
                return None
        for seat, future in futures.items():
            wait = None if deadline is None else max(0.0, deadline - time.perf_counter())
            try:
                answers[seat], errors[seat], spent[seat] = future.result(timeout=wait)
            except FuturesTimeout:
                return None
        if futures and deadline is not None and time.perf_counter() >= deadline:
            return None
    finally:
        if pool is not None:  # normally all done; after the deadline, abandoned
            pool.shutdown(wait=False, cancel_futures=True)
    decisions: list[Decision] = []
    fell: list[bool] = []
    for seat in range(SEATS):
        decision: Decision | None = None
        if not broken[seat]:
            answer, error = answers[seat], errors[seat]
            if error is None and limit is not None and spent[seat] > limit:
                error = "timeout"
            if error == "timeout":
                fault(seat, "timeout", f"took over {limit} s")
            elif error is not None:
                fault(seat, "raised", error)
            else:
                decision = answer if isinstance(answer, Decision) else Decision(answer)
                if not isinstance(decision.action, (str, Intent)):
                    fault(seat, "garbage", f"returned {type(decision.action).__name__}, not a "
                                           "sentence or an Intent")
                    decision = None
                elif not (isinstance(decision.say, str) and isinstance(decision.notes, str)):
                    fault(seat, "garbage", "returned a Decision whose say or notes is not a str")
                    decision = None
        fell.append(decision is None)
        decisions.append(Decision(_FALLBACK.act(game, seat)) if decision is None else decision)
    return decisions, fell


def _timed(act: Any, game: Game, seat: int) -> tuple[Any, str | None, float]:
    """``act(game, seat)`` in a worker thread: the answer, the error if any, the time taken."""
    t0 = time.perf_counter()
    try:
        answer, error = act(game, seat), None
    except (Exception, SystemExit) as e:
        answer, error = None, f"raised {_describe(e)}"
    return answer, error, time.perf_counter() - t0


def _take_records(seats: list) -> list[dict]:
    """Every policy's ``take_records()`` (each policy object once), sorted by turn and seat."""
    out: list[dict] = []
    seen: set[int] = set()
    for policy in seats:
        take = getattr(policy, "take_records", None)
        if id(policy) in seen or not callable(take):
            continue
        seen.add(id(policy))
        try:
            got = take()
        except Exception:  # a policy's bookkeeping must not lose the episode
            continue
        if isinstance(got, list):
            out.extend(r for r in got if isinstance(r, dict))
    out.sort(key=lambda r: (r.get("turn", 0), r.get("seat", 0)))
    return out


def _play_turn(game: Game, decisions: list[Decision], fell: list[bool],
               scripted_by_policy: list[bool], fault: Any) -> None:
    """``play_turn``; an ``Intent`` the rules refuse is garbage and ``factor`` plays that seat.

    ``play_turn`` checks every action before it changes anything, so a refused call can be
    retried with the offending seats replaced. Fallback decisions are recorded scripted.
    """
    def play() -> None:
        game.play_turn([d.action for d in decisions], says=[d.say for d in decisions],
                       notes=[d.notes for d in decisions],
                       scripted=[f or s or d.scripted
                                 for f, s, d in zip(fell, scripted_by_policy, decisions)])

    try:
        play()
        return
    except ValueError:
        pass
    for seat, d in enumerate(decisions):
        try:
            game.intent_for(d.action, seat)
        except ValueError as e:
            fault(seat, "garbage", f"returned an action the rules refuse ({_describe(e)})")
            decisions[seat] = Decision(_FALLBACK.act(game, seat))
            fell[seat] = True
    play()


def _describe(e: BaseException) -> str:
    msg = str(e)
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__
