"""The ladder: per policy the mean episode score with a bootstrap interval, and what it did.

The statistic is the mean score over every seat a policy played (RULES §13: "the ladder
statistic is the mean episode score"). Its 95% interval is a percentile bootstrap that resamples
whole rotation groups: the six episodes of a group share a seed, so the group, not the episode
or the seat, is the independent unit. The bootstrap generator is seeded from the league seed,
so the interval is the same on every run. With fewer than two groups there is nothing to
resample and the interval is left empty (``null``).

Commission completion comes from the results alone: each commission adds ``4 x delivered`` to
``questPoints`` plus 8 once complete (RULES §13), so a seat completed
``(questPoints - 4 x delivered) / 8`` of its two commissions.

No free rides. A policy is ranked on its own play: one with more than 10% of its decisions not
its own (``fallbacks``: a decision the fallback played after a fault, or a scripted fallback of
the policy's own; a decision that fell back counts once, whatever its faults) is *unranked*
(``"ranked": false`` and ``"unranked"``: the reason). Unranked policies are listed below all
ranked ones, ordered among themselves as the ranked ones are (by mean score), with ``"rank":
null``: a rank would place them in a competition they did not play themselves. ``faults``
counts every fault (``raised``, ``garbage``, ``timeout``, ``crashed``) of the policy's seats,
including those of a reset; ``notOwnShare`` is ``fallbacks / decisions``.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from league.core.atomic import replacing

if TYPE_CHECKING:
    import numpy as np

COMMISSIONS_PER_SEAT = 2
BOOTSTRAP_SAMPLES = 2000
UNRANKED_ABOVE = 10  # percent of a policy's decisions not its own above which it is unranked
RANKING = ("policies with more than 10% of their decisions not their own (fallbacks) are "
           "unranked: listed below the ranked ones, rank null")
FAULT_ORDER = ("raised", "garbage", "timeout", "crashed")  # league.core.episode.FAULT_KINDS


def build(rows: Sequence[dict], policies: Sequence[str], league_seed: int | str) -> dict:
    """The ladder of a league's finished episodes (the content of ``ladder.json``)."""
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
            "ci95": _bootstrap(sums, counts, _seed(league_seed, name)),
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
            **_standing(fallbacks, decisions, kinds),
        })
    entries.sort(key=lambda e: (not e["ranked"], e["meanScore"] is None,
                                -(e["meanScore"] or 0.0), e["policy"]))
    ranks = iter(range(1, len(entries) + 1))
    return {"episodes": len(rows), "groups": len(groups), "completeGroups": full,
            "statistic": "mean episode score per seat (RULES §13)",
            "interval": interval(league_seed),
            "ranking": RANKING,
            "policies": [{"rank": next(ranks) if e["ranked"] else None, **e} for e in entries]}


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


def _bootstrap(sums: np.ndarray, counts: np.ndarray, seed: int) -> list[float] | None:
    """Percentile interval of ``sum(scores) / seats`` over groups drawn with replacement."""
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


def interval(league_seed: int | str) -> str:
    """What the ladder's intervals are, and what seeds them (:func:`bootstrap_seed`)."""
    source = ("the league seed" if isinstance(league_seed, int) else
              "the commitment to the league's secret draw (league.json's first sha256)")
    return (f"95% percentile bootstrap over rotation groups, {BOOTSTRAP_SAMPLES} resamples, "
            f"seeded from {source}")


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
    policy's rank is ``-``, and why it is unranked follows the table."""
    head = ("rank", "policy", "mean", "95% CI", "episodes", "seats", "commissions",
            "robs/seat", "robbed/seat", "faults", "fallbacks")
    lines = []
    unranked = []
    for e in ladder["policies"]:
        ci = e["ci95"]
        if e.get("unranked"):
            unranked.append(f"unranked: {e['policy']}: {e['unranked']}")
        share = e.get("notOwnShare")
        lines.append((
            "-" if e["rank"] is None else str(e["rank"]), e["policy"],
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
            "mean score per seat, 95% bootstrap interval over groups")
    if ladder["completeGroups"] < ladder["groups"]:
        note += (f"; the last group is incomplete ({ladder['episodes'] % 6} of 6 rotations), so "
                 "seat luck does not fully cancel")
    if unranked:
        note += (f"; a policy with more than {UNRANKED_ABOVE}% of its decisions not its own "
                 "(fallbacks) is unranked")
    return "\n".join(out + [note] + unranked)


def _num(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def plot(ladder: dict, path: Path) -> None:
    """A horizontal bar chart of mean scores with their intervals (needs matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    entries = [e for e in ladder["policies"] if e["meanScore"] is not None][::-1]
    names = [e["policy"] + (" (unranked)" if e.get("unranked") else "") for e in entries]
    means = [e["meanScore"] for e in entries]
    err = [[m - e["ci95"][0] if e["ci95"] else 0.0 for m, e in zip(means, entries)],
           [e["ci95"][1] - m if e["ci95"] else 0.0 for m, e in zip(means, entries)]]
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(entries) + 1.5))
    ax.barh(names, means, xerr=err, capsize=4, color="#4c72b0")
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_xlabel("mean episode score per seat (95% bootstrap CI)")
    ax.set_title(f"League ladder: {ladder['episodes']} episodes")
    fig.tight_layout()
    try:
        with replacing(path) as tmp:
            fig.savefig(tmp, dpi=120, format="png")
    finally:
        plt.close(fig)
