"""``python -m agents.llm.local_stats RUN_DIR``: how a league's language-model seats did.

The figures a language-model seat is judged by (docs/llm.md): over the model's seat-episodes,
the share of replies that were usable, the share of the model's own decisions that were one of
the seat's legal rows (``admissible``: all of them in the choosing mode), the share of its
sentences the town understood (parsed to an intent, whether or not the act then succeeded),
fallbacks, the mean score and commissions of each policy, and speed: decisions per second of
league time, each decision's seconds and the time to its first streamed token (median, 95th
percentile). Reads only the league's files (``results.jsonl``, ``ladder.json`` and
``replays/``), so it works on any finished league.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from sim.commandline import OneLineParser


def league_stats(run: Path) -> dict[str, Any]:
    """The figures for the ``llm:`` seats of the league in ``run``."""
    rows = read_rows(run / "results.jsonl")
    if not rows:  # a league stopped before its first batch of lines: read its replays
        rows = [row_of(path) for path in sorted((run / "replays").glob("e*.json"))]
    scores: dict[str, list[float]] = {}
    seat_episodes = decisions = fallbacks = replies = valid = played = understood = 0
    own = admissible = 0
    formats: dict[str, int] = {}
    modes: dict[str, int] = {}
    seconds: list[float] = []
    first: list[float] = []
    wall = 0.0
    records = 0
    for row in rows:
        lineup = row["lineup"]
        for seat, name in enumerate(lineup):
            scores.setdefault(name, []).append(row["scores"][seat])
        llm_seats = {s for s, name in enumerate(lineup) if is_llm(name)}
        if not llm_seats:
            continue
        wall += row["wallTime"]
        seat_episodes += len(llm_seats)
        fallbacks += sum(row["fallbacks"][s] for s in llm_seats)
        payload = json.loads((run / "replays" / f"{row['id']}.json").read_text(encoding="utf-8"))
        recs = payload.get("llm", [])
        # the league's decisions of these seats: a decision that timed out leaves no record
        decisions += row["turns"] * len(llm_seats) if "turns" in row else len(recs)
        for rec in recs:
            records += 1
            mode = rec.get("mode", "free")
            modes[mode] = modes.get(mode, 0) + 1
            if isinstance(rec.get("seconds"), (int, float)):
                seconds.append(rec["seconds"])
            if not rec.get("scripted"):
                own += 1
                admissible += rec.get("admissible") is True
            for a in rec["attempts"]:
                if "reply" in a:
                    replies += 1
                    valid += "error" not in a
                    kind = a.get("format", "none")
                    formats[kind] = formats.get(kind, 0) + 1
                if isinstance(a.get("first_token"), (int, float)):
                    first.append(a["first_token"])
        for e in payload["events"]:
            if e["kind"] == "act" and e["seat"] in llm_seats and not e["scripted"]:
                played += 1
                understood += e["intent"] != "none"
    return {
        "episodes": len(rows), "seatEpisodes": seat_episodes, "decisions": decisions,
        "records": records, "modes": modes,
        "replies": replies, "validReplyShare": share(valid, replies),
        "modelDecisions": own, "admissibleShare": share(admissible, own),
        "modelPlayed": played, "understoodShare": share(understood, played),
        "fallbacks": fallbacks, "fallbackShare": share(fallbacks, decisions),
        "meanScore": {name: round(sum(v) / len(v), 2) for name, v in sorted(scores.items())},
        "commissions": commissions(run),
        "decisionsPerSecond": round(decisions / wall, 3) if wall else None,
        "decisionSeconds": quantiles(seconds), "firstTokenSeconds": quantiles(first),
        "formats": formats,
    }


def share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def quantiles(values: list[float]) -> dict[str, float] | None:
    """The median and the 95th percentile (nearest rank) of ``values``."""
    if not values:
        return None
    v = sorted(values)
    return {"median": round(statistics.median(v), 3),
            "p95": round(v[math.ceil(0.95 * len(v)) - 1], 3)}


def commissions(run: Path) -> dict[str, str]:
    """Per policy, commissions completed of those held (from ``ladder.json``, when written)."""
    try:
        ladder = json.loads((run / "ladder.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {r["policy"]: f"{r['commissionsCompleted']}/{r['commissions']}"
            for r in ladder.get("policies", []) if "commissionsCompleted" in r}


def is_llm(name: str) -> bool:
    """Whether a lineup name is a language-model seat (``llm:...``, or ``trusted:llm:...``)."""
    return name.lower().removeprefix("trusted:").startswith("llm:")


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The lines of ``results.jsonl``; a torn last line (a league stopped mid-write) is left
    out, as the league itself does; any other bad line is a ValueError naming it."""
    lines = [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    rows = []
    for n, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except ValueError:
            if n == len(lines):
                break
            raise ValueError(f"line {n} of {path.name} is not JSON") from None
        if not isinstance(row, dict):
            raise ValueError(f"line {n} of {path.name} is not an object")
        rows.append(row)
    return rows


def row_of(path: Path) -> dict[str, Any]:
    """What a results line would say, from a replay alone (no wall time: it is not there)."""
    payload = json.loads(path.read_text(encoding="utf-8"))
    lineup = payload["policyNames"]
    fallbacks = [0] * len(lineup)
    for rec in payload.get("llm", []):
        fallbacks[rec["seat"]] += bool(rec["scripted"])
    return {"id": path.stem, "lineup": lineup, "scores": payload["results"]["scores"],
            "fallbacks": fallbacks, "wallTime": 0.0}


def main(argv: list[str] | None = None) -> int:
    """Print the figures for each league directory named, as JSON lines."""
    parser = OneLineParser(prog="python -m agents.llm.local_stats",
                           description="How a league's language-model seats did: one JSON "
                                       "line of figures per league folder (docs/llm.md).")
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR",
                        help="a league's --out folder (results.jsonl, ladder.json, replays/)")
    for arg in parser.parse_args(argv).runs:
        try:
            stats = league_stats(Path(arg))
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError,
                RecursionError) as e:  # any malformed file: one line
            why = str(e).splitlines()[0][:200] if str(e) else ""
            print(f"local_stats: cannot read the league in {arg!r} ({type(e).__name__}: "
                  f"{why})", file=sys.stderr)
            return 2
        print(json.dumps({"run": arg, **stats}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
