"""Language-model seat speed: decisions of ``llm:local`` (the packaged SmolLM2-135M) per second.

Each turn of a 14-turn game asks all six seats at once, in threads, as a league does with six
language-model seats; the seats queue in this process for the servers (``agents.llm.local``).
Prints, per mode (``choose``: the choosing mode, the default; ``free``: sentences, on
request since a reply takes seconds):

- ``llm_<mode>_decisions_per_s``: decisions over the wall time of the timed turns;
- ``llm_<mode>_decision_median_s`` and ``_p95_s``: one decision, from the seat's call to its
  answer, queue and retry included;
- ``llm_<mode>_first_token_median_s``: from sending to the first streamed piece (the prompt's
  reading);
- ``llm_<mode>_fallbacks``: decisions the model did not make.

``python -m bench.llm [--turns N] [--free] [--spec SPEC]``; needs the ``local-llm`` extra.
The first decision (the server reads the shared rules and town) is not timed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from agents.llm.local_stats import quantiles


def bench_llm(spec: str, turns: int) -> dict[str, float]:
    """The figures of ``turns`` turns of six concurrent seats of the policy ``spec``."""
    from agents import make_policy
    from sim import Game, GameConfig
    from sim.rules.world import SEATS

    policy = make_policy(spec)
    game = Game(GameConfig(seed=11))
    policy.act(game, 0)  # not timed: the server reads the shared prefix
    policy.take_records()
    start = time.perf_counter()
    with ThreadPoolExecutor(SEATS) as pool:
        for _ in range(turns):
            decisions = list(pool.map(lambda seat: policy.act(game, seat), range(SEATS)))
            game.play_turn([d.action for d in decisions], [d.say for d in decisions],
                           [d.notes for d in decisions], [d.scripted for d in decisions])
    wall = time.perf_counter() - start
    records = policy.take_records()
    seconds = quantiles([r["seconds"] for r in records])
    first = [a["first_token"] for r in records for a in r["attempts"]
             if isinstance(a.get("first_token"), float)]
    return {"decisions_per_s": len(records) / wall, "decision_median_s": seconds["median"],
            "decision_p95_s": seconds["p95"],
            "first_token_median_s": statistics.median(first) if first else float("nan"),
            "fallbacks": sum(r["scripted"] for r in records)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.llm", description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=6, help="timed turns of six seats (6)")
    ap.add_argument("--free", action="store_true", help="also the free-sentence mode (slow)")
    ap.add_argument("--spec", default="llm:local", help="the choosing policy (llm:local)")
    args = ap.parse_args(argv)
    runs = [("choose", args.spec)]
    if args.free:
        runs.append(("free", "llm:local#choose=free"))
    for mode, spec in runs:
        figures = bench_llm(spec, args.turns)
        for name, value in figures.items():
            unit = {"decisions_per_s": "decisions/s", "fallbacks": "decisions"}.get(name, "s")
            print(f"llm_{mode}_{name}: {value:.2f} {unit}" if name != "fallbacks"
                  else f"llm_{mode}_{name}: {value:.0f} {unit}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
