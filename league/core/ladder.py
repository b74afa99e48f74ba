"""The ladder: per policy the mean episode score with a 95% interval, and what it did.

The statistic is the mean score over every seat a policy played (RULES §13: "the ladder
statistic is the mean episode score"). The six episodes of a rotation group share a seed, so
the group, not the episode or the seat, is the independent unit. The 95% interval is a Student
t interval over groups: each group's mean score per seat of the policy, weighted by the policy's
seats in it (so the interval is centred on the mean score), with ``n - 1`` degrees of freedom
for ``n`` groups. With fewer than two groups there is no spread to measure and the interval is
left empty (``null``).

A ladder written before the t interval recorded a percentile bootstrap over groups
(``"interval"``); a ladder that records it (:func:`kind_of`) is rebuilt as it was written: the
bootstrap, seeded from the league seed, and its ranking (every policy ranked, a tie broken by
name). The bootstrap covers the true mean far less than 95% of the time when groups are few
(two groups: the interval is the two group means), hence the t interval for new ladders.

Commission completion comes from the results alone: each commission adds ``4 x delivered`` to
``questPoints`` plus 8 once complete (RULES §13), so a seat completed
``(questPoints - 4 x delivered) / 8`` of its two commissions.

No free rides. A policy is ranked on its own play: one with more than 10% of its decisions not
its own (``fallbacks``: a decision the fallback played after a fault, or a scripted fallback of
the policy's own; a decision that fell back counts once, whatever its faults) is *unranked*
(``"ranked": false`` and ``"unranked"``: the reason), and so is one that held no seat (it has
no mean score). Unranked policies are listed below all ranked ones, ordered among themselves as
the ranked ones are (by mean score), with ``"rank": null``: a rank would place them in a
competition they did not play themselves. Ranked policies whose mean scores are equal as
``ladder.json`` records them (6 decimals) share a rank, the next rank skipping as many places
(1, 1, 3). ``faults`` counts every fault (``raised``, ``garbage``, ``timeout``, ``crashed``) of
the policy's seats, including those of a reset; ``notOwnShare`` is ``fallbacks / decisions``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from league.core.atomic import replacing
from league.core.errors import LeagueError
from league.core.files import read_regular
from league.core.lineups import MAX_NAME_CHARS
from league.core.store import MAX_LADDER_BYTES, shown

if TYPE_CHECKING:
    import numpy as np

Kind = Literal["t", "bootstrap"]  # the interval of a ladder: new ladders' t, or the older one
COMMISSIONS_PER_SEAT = 2
BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_WORDS = "95% percentile bootstrap over rotation groups"  # how such a ladder says it
T_INTERVAL = ("95% Student t interval over rotation groups: each group's mean score per seat, "
              "weighted by the policy's seats in it, n - 1 degrees of freedom for n groups")
UNRANKED_ABOVE = 10  # percent of a policy's decisions not its own above which it is unranked
RANKING = ("policies with more than 10% of their decisions not their own (fallbacks), or no "
           "seat, are unranked: listed below the ranked ones, rank null; equal mean scores (as "
           "recorded, 6 decimals) share a rank (1, 1, 3)")
BOOTSTRAP_RANKING = ("policies with more than 10% of their decisions not their own (fallbacks) "
                     "are unranked: listed below the ranked ones, rank null")
NO_SEAT = "it held no seat (too few episodes to seat every policy), so it has no mean score"
FAULT_ORDER = ("raised", "garbage", "timeout", "crashed")  # league.core.episode.FAULT_KINDS


def build(rows: Sequence[dict], policies: Sequence[str], league_seed: int | str,
          kind: Kind = "t") -> dict:
    """The ladder of a league's finished episodes (the content of ``ladder.json``); ``kind``
    is the interval, ``"bootstrap"`` only for a league whose ladder.json records it."""
    import numpy as np  # here: a league's workers never rank, and need no numpy

    groups = sorted({r["group"] for r in rows})
    gpos = {g: i for i, g in enumerate(groups)}
    sizes = Counter(r["group"] for r in rows)  # one pass (a group-by-group count was quadratic)
    full = sum(1 for g in groups if sizes[g] == 6)
    entries = []
    for name in policies:
        sums = np.zeros(len(groups))
        counts = np.zeros(len(groups))
        episodes = seats = completed = robberies = robbed = fallbacks = decisions = 0
        kinds: Counter[str] = Counter()
        for r in rows:
            mine = [s for s, p in enumerate(r["lineup"]) if p == name]
            if not mine:
                continue
            episodes += 1
            for s in mine:
                seats += 1
                sums[gpos[r["group"]]] += r["scores"][s]
                counts[gpos[r["group"]]] += 1
                completed += (r["questPoints"][s] - 4 * r["delivered"][s]) // 8
                robberies += r["robberies"][s]
                robbed += r["robbed"][s]
                fallbacks += r["fallbacks"][s]
                decisions += r["turns"]
                kinds.update(r["faults"][s])
        mean = float(sums.sum() / seats) if seats else None
        entries.append({
            "policy": name,
            "meanScore": _round(mean),
            "ci95": (_bootstrap(sums, counts, _seed(league_seed, name)) if kind == "bootstrap"
                     else _student_t(sums, counts, mean)),
            "episodes": episodes,
            "seats": seats,
            "commissions": COMMISSIONS_PER_SEAT * seats,
            "commissionsCompleted": completed,
            "completionRate": _round(completed / (COMMISSIONS_PER_SEAT * seats) if seats else None),
            "robberies": robberies,
            "robbed": robbed,
            "robberiesPerSeat": _round(robberies / seats if seats else None),
            "robbedPerSeat": _round(robbed / seats if seats else None),
            "faults": sum(kinds.values()),
            "fallbacks": fallbacks,
            "decisions": decisions,
            "notOwnShare": _round(fallbacks / decisions if decisions else None),
            **({"ranked": False, "unranked": NO_SEAT} if not seats and kind == "t"
               else _standing(fallbacks, decisions, kinds)),
        })
    return {"episodes": len(rows), "groups": len(groups), "completeGroups": full,
            "statistic": "mean episode score per seat (RULES §13)",
            "interval": interval(league_seed, kind),
            "ranking": BOOTSTRAP_RANKING if kind == "bootstrap" else RANKING,
            "policies": ranked(entries, kind)}


def ranked(entries: Sequence[dict], kind: Kind) -> list[dict]:
    """``entries`` in ladder order (ranked first, by mean score, then by name), each with its
    ``rank`` first (any it had is replaced): ranked policies with equal recorded means share
    one, as readers compare what ladder.json says (a bootstrap ladder numbered them in that
    order, ties and all)."""
    order = sorted(entries, key=lambda e: (not e["ranked"], e["meanScore"] is None,
                                           -(e["meanScore"] or 0.0), e["policy"]))
    out: list[dict] = []
    for place, e in enumerate(order, start=1):
        rank = place if e["ranked"] else None
        if (rank is not None and kind == "t" and out
                and out[-1]["meanScore"] == e["meanScore"]):
            rank = out[-1]["rank"]  # the previous one is ranked too: ranked ones come first
        out.append({"rank": rank, **{k: v for k, v in e.items() if k != "rank"}})
    return out


def _standing(fallbacks: int, decisions: int, kinds: Counter[str]) -> dict:
    """``ranked``, and why not (``unranked``, else None)."""
    if 100 * fallbacks <= UNRANKED_ABOVE * decisions:
        return {"ranked": True, "unranked": None}
    order = [*FAULT_ORDER, *sorted(k for k in kinds if k not in FAULT_ORDER)]
    faults = ", ".join(f"{k} {kinds[k]}" for k in order if kinds[k])
    why = f"faults: {faults}" if faults else "no faults: fallbacks of its own"
    return {"ranked": False,
            "unranked": f"{100 * fallbacks / decisions:.1f}% of its decisions ({fallbacks} of "
                        f"{decisions}) were not its own ({why})"}


def _student_t(sums: np.ndarray, counts: np.ndarray, mean: float | None) -> list[float] | None:
    """The t interval of ``mean``, ``sum(scores) / seats``, over the groups played: the
    linearised (cluster) standard error of a ratio of sums, which for equal seats per group is
    the standard deviation of the group means over the square root of their number."""
    played = counts > 0
    s, c = sums[played], counts[played]
    n = len(s)
    if n < 2 or mean is None:
        return None
    weights = c / c.sum()
    se = math.sqrt(n / (n - 1) * float((weights ** 2 * (s / c - mean) ** 2).sum()))
    half = _t975(n - 1) * se
    return [_round(mean - half), _round(mean + half)]


@functools.cache
def _t975(df: int) -> float:
    """Student's t 0.975 quantile, once per number of groups: exact, it takes milliseconds at
    hundreds of degrees of freedom, and every policy of a league asks for the same few."""
    from agents.learn.evaluation import t_quantile  # here: a league's workers never rank

    return t_quantile(0.975, df)


def _bootstrap(sums: np.ndarray, counts: np.ndarray, seed: int) -> list[float] | None:
    """Percentile interval of ``sum(scores) / seats`` over groups drawn with replacement (the
    interval of ladders that record it: :func:`kind_of`)."""
    played = counts > 0
    s, c = sums[played], counts[played]
    if len(s) < 2:
        return None
    import numpy as np

    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(s), size=(BOOTSTRAP_SAMPLES, len(s)))
    means = s[idx].sum(axis=1) / c[idx].sum(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return [_round(float(lo)), _round(float(hi))]


def interval(league_seed: int | str, kind: Kind = "t") -> str:
    """What the ladder's intervals are (a bootstrap's: what seeds it, :func:`bootstrap_seed`)."""
    if kind == "t":
        return T_INTERVAL
    source = ("the league seed" if isinstance(league_seed, int) else
              "the commitment to the league's secret draw (league.json's first sha256)")
    return f"{BOOTSTRAP_WORDS}, {BOOTSTRAP_SAMPLES} resamples, seeded from {source}"


def ladder_text(ladder: dict) -> str:
    """``ladder.json``'s text, as a league writes it (and signs its digest)."""
    return json.dumps(ladder, indent=2, ensure_ascii=False) + "\n"


def kind_of(ladder: object) -> Kind:
    """The interval a written ladder records: ``"bootstrap"`` for one written before the t
    interval, which is rebuilt as it was; ``"t"`` for any other."""
    text = ladder.get("interval") if isinstance(ladder, dict) else None
    return "bootstrap" if isinstance(text, str) and text.startswith(BOOTSTRAP_WORDS) else "t"


def kept(path: Path) -> Kind:
    """The interval the ladder.json at ``path`` records, for the league's next ladder to keep
    (:func:`kind_of`); ``"t"`` when there is none, or it cannot be read (a league writes its
    ladder anew)."""
    try:
        return kind_of(json.loads(read_regular(path, MAX_LADDER_BYTES, "ladder")))
    except (LeagueError, ValueError, RecursionError):  # none is a LeagueError too
        return "t"


def bootstrap_seed(seed: int | None, commitments: list[dict] | None) -> int | str:
    """What seeds the bootstrap (``league.json``'s ``seed``, or for a secret draw the first
    secret's commitment, which is known from the league's start)."""
    if seed is not None or not commitments:
        return seed if seed is not None else 0
    return str(commitments[0].get("sha256"))


def _seed(league_seed: int | str, policy: str) -> int:
    h = hashlib.sha256(f"guild-ladder:{league_seed}:{policy}".encode()).digest()
    return int.from_bytes(h[:8], "big")


def _round(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else round(x, 6)


def table(ladder: dict) -> str:
    """The ladder as a fixed-width text table (what ``guild league`` prints); an unranked
    policy's rank is ``-``, and why it is unranked follows the table.  A policy's name is its
    author's text: shown inert (an escape sequence or a newline in it would act on the terminal
    or forge a row), as ``guild verify`` shows it."""
    head = ("rank", "policy", "mean", "95% CI", "episodes", "seats", "commissions",
            "robs/seat", "robbed/seat", "faults", "fallbacks")
    lines = []
    unranked = []
    for e in ladder["policies"]:
        ci = e["ci95"]
        if e.get("unranked"):
            unranked.append(f"unranked: {_name(e['policy'])}: {e['unranked']}")
        share = e.get("notOwnShare")
        lines.append((
            "-" if e["rank"] is None else str(e["rank"]), _name(e["policy"]),
            _num(e["meanScore"], "+.3f"),
            f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "n/a",
            str(e["episodes"]), str(e["seats"]),
            f"{e['commissionsCompleted']}/{e['commissions']} ({_num(e['completionRate'], '.0%')})",
            _num(e["robberiesPerSeat"], ".2f"), _num(e["robbedPerSeat"], ".2f"),
            str(e.get("faults", "n/a")),
            f"{e['fallbacks']}" + (f" ({share:.1%})" if share is not None else "")))
    widths = [max(len(h), *(len(r[i]) for r in lines)) for i, h in enumerate(head)]
    left = {1}  # the policy name reads best left-aligned; numbers right-aligned

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [fmt(head), "  ".join("-" * w for w in widths)]
    out += [fmt(r) for r in lines]
    groups = ladder["groups"]
    note = (f"{ladder['episodes']} episodes in {groups} rotation group{'s' * (groups != 1)}; "
            f"mean score per seat, {_interval_words(ladder)}")
    if ladder["completeGroups"] < ladder["groups"]:
        note += (f"; the last group is incomplete ({ladder['episodes'] % 6} of 6 rotations), so "
                 "seat luck does not fully cancel")
    if unranked:
        note += (f"; a policy with more than {UNRANKED_ABOVE}% of its decisions not its own "
                 "(fallbacks), or no seat, is unranked")
    ranks = [e["rank"] for e in ladder["policies"] if e["rank"] is not None]
    if len(set(ranks)) < len(ranks):
        note += "; equal mean scores (to 6 decimals) share a rank"
    return "\n".join(out + [note] + unranked)


def _name(policy: str) -> str:
    """A policy's name in the printed ladder: whole (two long paths differ at their end), with
    every character that could act on the terminal shown as its escape."""
    return shown(policy, 6 * MAX_NAME_CHARS)  # an escape is at most 6 characters


def _interval_words(ladder: dict) -> str:
    """The ladder's interval, in a few words for a note or an axis."""
    return ("95% t interval over groups" if kind_of(ladder) == "t"
            else "95% bootstrap interval over groups")


def _num(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def plot(ladder: dict, path: Path) -> None:
    """A horizontal bar chart of mean scores with their intervals (needs matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    entries = [e for e in ladder["policies"] if e["meanScore"] is not None][::-1]
    names = [e["policy"] + (" (unranked)" if e.get("unranked") else "")
             + ("" if e["ci95"] else " (no interval)") for e in entries]
    means = [e["meanScore"] for e in entries]
    nan = float("nan")  # no bar drawn: a zero-width one would look certain
    err = [[m - e["ci95"][0] if e["ci95"] else nan for m, e in zip(means, entries)],
           [e["ci95"][1] - m if e["ci95"] else nan for m, e in zip(means, entries)]]
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(entries) + 1.5))
    ax.barh(names, means, xerr=err, capsize=4, color="#4c72b0")
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_xlabel(f"mean episode score per seat ({_interval_words(ladder)})")
    ax.set_title(f"League ladder: {ladder['episodes']} episodes")
    fig.tight_layout()
    try:
        with replacing(path) as tmp:
            fig.savefig(tmp, dpi=120, format="png")
    finally:
        plt.close(fig)
