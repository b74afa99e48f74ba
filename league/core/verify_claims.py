"""What ``guild verify`` checks beyond each replay: the league's claims about itself.

A replay that re-derives proves one episode; the league also claims how many episodes it
played (``league.json``), who fell back, to what and why (``results.jsonl``), and a ladder
(``ladder.json``). Each of these is a number a reader trusts without a replay to hand, so each
is recomputed here from the files that back it, and every disagreement is one line naming the
file or episode; what it shows of the files is cut and escaped (``league.core.store.shown``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents import Factor, Magpie, RandomPolicy, is_scripted
from agents.champion import Champion
from league.core import ladder
from league.core.episode import FAULT_KINDS, fallback_play
from league.core.errors import LeagueError
from league.core.files import read_regular
from league.core.lineups import EpisodeSpec
from league.core.store import (
    LADDER,
    MANIFEST,
    MAX_LADDER_BYTES,
    RESULTS,
    SHOWN_NAME,
    are_fault_counts,
    is_count,
    shown,
)
from sim.rules.world import SEATS

# Whether the built-in policies mark every act scripted (RULES §6.6, §21). Other policies are
# judged by their acts: one unscripted act anywhere in the league shows a policy is not.
_BUILT_IN = {cls.__name__.lower().removesuffix("policy"): is_scripted(cls)
             for cls in (Factor, Magpie, RandomPolicy, Champion)}
LADDER_TOLERANCE = 1.5e-6  # ladder.json rounds to 6 decimals; allow one flip of the last digit

SHOWN_NUMBERS = 5  # line numbers of a repeated episode named before the rest are counted
SHOWN_IDS = 20  # repeated or foreign episode ids named one problem each before a count

Marks = list[tuple[int, int]]  # per seat: (acts in the replay, acts marked scripted)


def schedule_problems(rows: Sequence[dict], episodes: int) -> list[str]:
    """Each of the ``episodes`` that league.json claims must be in ``results.jsonl`` once."""
    lines: dict[str, list[int]] = {}
    for n, row in enumerate(rows, start=1):
        lines.setdefault(str(row.get("id")), []).append(n)
    expected = [_id(i) for i in range(episodes)]
    problems = []
    if len(rows) != episodes:
        problems.append(f"{RESULTS} has {len(rows)} episode lines but {MANIFEST} claims "
                        f"{episodes} episodes")
    missing = [i for i, e in enumerate(expected) if e not in lines]
    if missing:
        problems.append(f"{RESULTS} lacks episode{'s' * (len(missing) > 1)} "
                        f"{_ranges(missing)} of the {episodes} that {MANIFEST} claims")
    known = set(expected)
    repeated = [(ep, ns) for ep, ns in lines.items() if len(ns) > 1]
    for ep, ns in repeated[:SHOWN_IDS]:
        problems.append(f"{RESULTS} has episode {shown(ep)} {len(ns)} times (lines "
                        f"{_numbers(ns)})")
    if len(repeated) > SHOWN_IDS:
        problems.append(f"{RESULTS} has {len(repeated) - SHOWN_IDS} more episodes more than "
                        "once")
    foreign = [(ep, ns[0]) for ep, ns in lines.items() if ep not in known]
    for ep, n in foreign[:SHOWN_IDS]:
        problems.append(f"{RESULTS} line {n} is episode {shown(ep)}, not one of the "
                        f"{episodes} that {MANIFEST} claims")
    if len(foreign) > SHOWN_IDS:
        problems.append(f"{RESULTS} holds {len(foreign) - SHOWN_IDS} more episode ids that "
                        f"are not {MANIFEST}'s")
    if not problems and [r["id"] for r in rows] != expected:
        n = next(n for n, (r, e) in enumerate(zip(rows, expected), start=1) if r["id"] != e)
        problems.append(f"{RESULTS} is out of episode order: line {n} is "
                        f"{shown(rows[n - 1]['id'])}, not {expected[n - 1]}")
    return problems


def _numbers(ns: list[int]) -> str:
    """``5, 6, 9, 12, 14 and 3 more``: line numbers, the first few of them."""
    more = f" and {len(ns) - SHOWN_NUMBERS} more" if len(ns) > SHOWN_NUMBERS else ""
    return ", ".join(map(str, ns[:SHOWN_NUMBERS])) + more


def _ranges(indices: list[int]) -> str:
    """``e000003, e000010-e000599``: a long gap (an interrupted league) stays one line."""
    spans: list[list[int]] = []
    for i in indices:
        if spans and spans[-1][1] == i - 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    ids = [_id(a) if a == b else f"{_id(a)}-{_id(b)}" for a, b in spans[:10]]
    return ", ".join(ids) + (f" and {len(spans) - 10} more ranges" if len(spans) > 10 else "")


def _id(index: int) -> str:
    return EpisodeSpec(index, 0, 0, 0, ()).id


def replay_marks(events: list) -> Marks:
    """Per seat, how many act events the replay holds and how many are marked scripted."""
    acts, marked = [0] * SEATS, [0] * SEATS
    for e in events:
        if isinstance(e, dict) and e.get("kind") == "act" and e.get("seat") in range(SEATS):
            acts[e["seat"]] += 1
            marked[e["seat"]] += bool(e.get("scripted", False))
    return list(zip(acts, marked))


def fallback_problems(rows: Sequence[dict], marks: dict[int, Marks]) -> dict[int, str]:
    """Per results line (0-based) whose fallbacks or faults the replay contradicts, why.

    How ``league.core.episode`` counts: a decision is a fallback when the seat's fallback (waiting
    or ``factor``) played it (the policy raised, returned garbage or overran, or its seat was
    given up after a fault) or when
    a policy that is not scripted by nature answered with a scripted decision of its own. Every
    fallback is marked scripted in the replay; so is every act of a scripted policy. Hence, per
    seat: a policy that is not scripted has exactly as many fallbacks as scripted acts; a
    scripted one has all acts scripted and falls back only after a fault; and each decision has
    at most one fault, plus one for building or resetting the policy.
    """
    unscripted = {name for n, m in marks.items() for name, (acts, k) in
                  zip(rows[n]["lineup"], m) if k < acts}
    out: dict[int, str] = {}
    for n, m in marks.items():
        row = rows[n]
        shape = _shape_problem(row)
        if shape is not None:
            out[n] = shape
            continue
        for seat, (name, (acts, k)) in enumerate(zip(row["lineup"], m)):
            problem = _seat_problem(name, acts, k, row["fallbacks"][seat], row["faults"][seat],
                                    row["faultNotes"][seat], name in unscripted)
            if problem is not None:
                out[n] = f"seat {seat} ({shown(name, SHOWN_NAME)}): {problem}"
                break
    return out


def fallback_play_problems(rows: Sequence[dict], manifest: dict) -> dict[int, str]:
    """Per results line (0-based) whose ``fallbackPlay`` is not what ``league.json`` gives.

    ``--fallback`` (the manifest's ``fallback``, absent by default) decides each seat's
    fallback from its policy name (``league.core.episode.fallback_play``). Lines written before
    ``fallbackPlay`` existed lack it; they come first, and a league begun with them went on with
    ``factor`` for every seat (as ``league.tournament`` resumes it). A line without it after one
    with it, or in a league whose manifest names a fallback, has lost it.
    """
    chosen = manifest.get("fallback")
    legacy = bool(rows) and "fallbackPlay" not in rows[0]
    rule = "factor" if legacy and chosen is None else chosen
    out: dict[int, str] = {}
    seen = False
    for n, row in enumerate(rows):
        if "fallbackPlay" not in row:
            if seen or chosen is not None:
                out[n] = "the line lacks fallbackPlay, which every line of this league has"
            continue
        seen = True
        lineup = row.get("lineup")
        if not (isinstance(lineup, list) and all(isinstance(x, str) for x in lineup)):
            continue  # a line that is not its episode: check_episode says so
        expected = [fallback_play(name, rule) for name in lineup]
        if row["fallbackPlay"] != expected:
            given = (f"--fallback {shown(chosen)}" if chosen is not None
                     else "the default fallback")
            claimed = shown(json.dumps(row["fallbackPlay"]), 100)
            out[n] = (f"{RESULTS} claims fallbackPlay {claimed} but {given} gives "
                      f"{shown(json.dumps(expected), 100)}")
    return out


def _shape_problem(row: dict) -> str | None:
    fb, faults, notes = row["fallbacks"], row["faults"], row["faultNotes"]
    if not (isinstance(fb, list) and len(fb) == SEATS and all(map(is_count, fb))):
        return f"fallbacks {shown(fb, 100, quoted=True)} is not six counts"
    if not (isinstance(faults, list) and len(faults) == SEATS and all(
            are_fault_counts(f) and all(k in FAULT_KINDS and v > 0 for k, v in f.items())
            for f in faults)):
        return (f"faults {shown(faults, 200, quoted=True)} is not six counts by kind "
                f"({', '.join(FAULT_KINDS)})")
    if not (isinstance(notes, list) and len(notes) == SEATS
            and all(isinstance(x, str) for x in notes)):
        return "faultNotes is not six strings"
    return None


def _seat_problem(name: str, acts: int, marked: int, fallbacks: int, faults: dict[str, int],
                  note: str, seen_unscripted: bool) -> str | None:
    n_faults = sum(faults.values())
    claim = f"{RESULTS} claims {fallbacks} fallbacks and faults {faults}"
    if faults and not note:
        return f"{RESULTS} records faults {faults} without a fault note"
    if n_faults > fallbacks + 1:
        return f"{claim}, but a seat has at most one fault per fallback, plus one at reset"
    scripted = _BUILT_IN.get(name.strip().lower())
    if scripted is False or seen_unscripted:
        if fallbacks != marked:
            return f"{claim}, but the replay marks {marked} of its {acts} acts scripted"
        return None
    if marked != acts:
        return (f"the replay marks only {marked} of its {acts} acts scripted, but every act of a "
                "scripted policy is")
    if fallbacks > acts:
        return f"{claim}, but the seat made only {acts} decisions"
    if fallbacks and not faults and not (scripted is None and fallbacks == acts):
        return f"{claim}, but a scripted policy falls back only after a fault"
    return None


def ladder_problems(root: Path, rows: Sequence[dict], manifest: dict) -> list[str]:
    """``ladder.json`` must be what ``league.core.ladder`` computes from ``results.jsonl``.

    The ladder is deterministic (a t interval, or the bootstrap of a ladder that records one,
    seeded from the league seed), so the only slack is the last rounded digit.
    """
    path = root / LADDER
    if not os.path.lexists(path):
        return [f"{LADDER} is missing; the league writes it after every run"]
    try:
        claimed = json.loads(read_regular(path, MAX_LADDER_BYTES, LADDER))
    except LeagueError as e:  # no regular file, or too large: unread
        return [str(e)]
    except RecursionError:
        return [f"{LADDER} cannot be read as JSON (nested too deeply)"]
    except ValueError as e:
        return [f"{LADDER} cannot be read as JSON ({e})"]
    try:
        derived = ladder.build(rows, manifest["policies"],
                               ladder.bootstrap_seed(manifest["seed"],
                                                     manifest.get("commitments")),
                               ladder.kind_of(claimed))
    except (KeyError, TypeError, IndexError, ValueError, OverflowError) as e:
        return [f"{LADDER} cannot be recomputed: {RESULTS} lacks what the ladder needs "
                f"({type(e).__name__}: {shown(str(e), 200)})"]
    diffs = ladder_differences(claimed, derived, any("fallbackPlay" in r for r in rows))
    lines = [f"{LADDER}: {d}" for d in diffs[:5]]
    if len(diffs) > 5:
        lines[-1] += f" (and {len(diffs) - 5} more differences)"
    return lines


def ladder_differences(claimed: object, derived: dict, fallback_play: bool) -> list[str]:
    """Where ``claimed`` (``ladder.json`` as read) differs from ``derived`` (what
    ``league.core.ladder.build`` gives for the results), a leaf each, numbers to their last
    rounded digit. ``fallback_play``: some line has ``fallbackPlay``, so the league ranked by
    the rule that leaves policies unranked, as a ladder without ``ranking`` did not."""
    derived = json.loads(json.dumps(derived))
    if isinstance(claimed, dict) and "ranking" not in claimed and not fallback_play:
        derived = before_ranking(derived)  # a league played, and ranked, before the rule
    if isinstance(claimed, dict) and claimed.get("interval") == ladder.interval(0, "bootstrap"):
        derived["interval"] = claimed["interval"]  # a secret draw's, worded before it was told
    diffs: list[str] = []
    _diff(claimed, derived, "", diffs)
    return diffs


NEW_KEYS = ("faults", "notOwnShare", "ranked", "unranked")  # of an entry, with the ranking rule


def before_ranking(derived: dict) -> dict:
    """The ladder as it was written before unranked policies: every policy ranked by mean
    score, without the keys the rule added."""
    entries = [{k: v for k, v in e.items() if k not in NEW_KEYS} for e in derived["policies"]]
    entries.sort(key=lambda e: (e["meanScore"] is None, -(e["meanScore"] or 0.0), e["policy"]))
    for rank, e in enumerate(entries, start=1):
        e["rank"] = rank
    return {**{k: v for k, v in derived.items() if k != "ranking"}, "policies": entries}


def _diff(claimed: Any, derived: Any, where: str, out: list[str]) -> None:
    """Append ``where: claimed vs derived`` for each leaf that differs (numbers: tolerance)."""
    if isinstance(claimed, dict) and isinstance(derived, dict):
        for key in sorted(set(claimed) | set(derived), key=str):
            if key not in claimed or key not in derived:
                side = "lacks" if key not in claimed else "has an extra"
                out.append(f"{where or 'the ladder'} {side} key {shown(key, quoted=True)}")
            else:
                _diff(claimed[key], derived[key], f"{where}.{key}" if where else str(key), out)
    elif isinstance(claimed, list) and isinstance(derived, list):
        if len(claimed) != len(derived):
            out.append(f"{where} has {len(claimed)} entries but {RESULTS} gives {len(derived)}")
            return
        mine, theirs = (_by_policy(claimed), _by_policy(derived)) if where == "policies" else (
            None, None)
        if mine is not None and theirs is not None:  # an entry is its policy's, wherever it is
            for name in [*theirs, *(n for n in mine if n not in theirs)]:  # ladder order
                label = f"{where}[{shown(name, 60)}]"  # escapes show, none acts
                if name not in mine:
                    out.append(f"{where} lacks the entry of {shown(name, 60, quoted=True)}")
                elif name not in theirs:
                    out.append(f"{where} has an entry of {shown(name, 60, quoted=True)}, a "
                               f"policy {RESULTS} does not rank")
                else:
                    _diff(mine[name], theirs[name], label, out)
            return
        for i, (c, d) in enumerate(zip(claimed, derived)):
            _diff(c, d, f"{where}[{i}]", out)
    elif _close(claimed, derived):
        return
    else:
        out.append(f"{where} is {shown(json.dumps(claimed), 100)} but {RESULTS} gives "
                   f"{shown(json.dumps(derived), 100)}")


def _by_policy(entries: list) -> dict[str, dict] | None:
    """Ladder entries by their ``policy``; None unless each is an object naming a policy of
    its own (then they are compared by place)."""
    named = {e.get("policy"): e for e in entries if isinstance(e, dict)}
    if len(named) != len(entries) or not all(isinstance(k, str) for k in named):
        return None
    return named


def _close(a: Any, b: Any) -> bool:
    numbers = (int, float)
    if (isinstance(a, numbers) and isinstance(b, numbers)
            and not isinstance(a, bool) and not isinstance(b, bool)):
        return math.isclose(a, b, rel_tol=0.0, abs_tol=LADDER_TOLERANCE)
    return bool(a == b) and type(a) is type(b)
