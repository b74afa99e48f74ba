"""``guild evaluate SPEC``: a paired, seat-rotated comparison of a policy with factor.

The figures come from :func:`agents.learn.evaluation.paired_evaluation` (the same code training
uses for its before/after figures); this module only adds the options, the readable lines and
the JSON file.  ``sb3:`` models (pickles) are loaded in a sandbox unless ``--trust``
(``league.apart.sb3_load``).
"""

from __future__ import annotations

import argparse
import json
import sys
import sysconfig
import traceback
from pathlib import Path
from typing import Any

from agents.learn.evaluation import (
    DEFAULT_SEEDS,
    RESERVED_SEEDS,
    EvaluationError,
    PairedResult,
    is_result_json,
)
from agents.learn.evaluation import paired_evaluation as evaluate
from feasibility.cli import (  # the one A..B parser of the command line
    accept_negative_seeds,
    parse_seeds,
)
from league.apart.sb3_load import guard
from league.core.atomic import write_atomic
from league.core.errors import LeagueError
from league.core.files import check_replaceable, world_option
from league.core.ladder import UNRANKED_ABOVE
from sim.commandline import printable


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``guild evaluate`` to the ``guild`` subcommands."""
    p = sub.add_parser(
        "evaluate", help="compare a policy with factor: same seeds, same tables, every seat",
        description="Play SPEC in every seat of every seed's game, the other seats filled from "
        "--against cycling in seat order, and the same games with --baseline in its place; "
        "print both mean scores and the paired difference with its 95% interval (Student t "
        "over the per-seed means). Batched engine when every policy has a batched form, "
        "else the scalar one.")
    accept_negative_seeds(p)  # --seeds -5..-1 as well as --seeds=-5..-1
    p.add_argument("spec", metavar="SPEC",
                   help="the policy: factor, magpie, random, champion, module.path:Name, "
                   "llm:..., ... (a module: policy runs in this process, an exec: program as "
                   "its child, with your rights and no time limit: for your own code; a league "
                   "sandboxes others')")
    p.add_argument("--against", default="factor,magpie", metavar="P1,P2,...",
                   help="the other seats, cycling in seat order (factor,magpie)")
    p.add_argument("--seeds", type=parse_seeds, metavar="A..B",
                   default=DEFAULT_SEEDS,
                   help=f"game seeds A to B inclusive ({DEFAULT_SEEDS[0]}.."
                   f"{DEFAULT_SEEDS[-1]}; guild train never plays seeds below 2**32)")
    p.add_argument("--baseline", default="factor", metavar="SPEC",
                   help="what SPEC is compared with (factor)")
    p.add_argument("--turns", type=int, default=None, metavar="N",
                   help="turns per game (default: the world file's, else 14)")
    p.add_argument("--world", metavar="FILE", default=None,
                   help="play a world file's town (docs/feasibility.md) instead of the standard "
                        "one; its turn count unless --turns is given")
    p.add_argument("--json", metavar="PATH", help="also write the figures to PATH as JSON")
    p.add_argument("--trust", action="store_true",
                   help="load sb3: models in this process (a model zip is a pickle: loading "
                   "it runs its code; only for files you trust); by default each is loaded in "
                   "a bubblewrap sandbox and played here from its weights alone")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Evaluate, print the figures, write ``--json``; 2 (one line on stderr) for bad input."""
    against = [s.strip() for s in args.against.split(",")]
    try:
        if args.json is not None:
            _check_writable(args.json)
        if any(not s for s in against):
            raise EvaluationError(f"--against has an empty name: {args.against!r}")
        try:  # an sb3: model is loaded now (in a sandbox), before any game
            roles = guard([args.spec, args.baseline, *against], args.trust)
            models = language_models(roles)
            spec, baseline, *others = [models.get(r, r) if isinstance(r, str) else r
                                       for r in roles]
        except ValueError as e:
            raise EvaluationError(str(e)) from None
        try:
            world, turns = world_option(args.world, args.turns)
        except LeagueError as e:
            raise EvaluationError(str(e)) from None
        result = evaluate(spec, against=others, seeds=args.seeds, baseline=baseline,
                          turns=turns, world=world)
    except EvaluationError as e:
        return _error(str(e))
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 - a policy's own code failed (even sys.exit):
        return _error(policy_failure(e))  # say where, in one line
    print(report(result))
    if args.world is not None:
        print(f"town: the world file {args.world}, not the standard town")
    failed = False
    for name, model in models.items():
        if model.fallbacks:
            share = 100 * model.fallbacks / model.decisions
            failed |= share > UNRANKED_ABOVE
            first = printable(' '.join(model.first_failure.split())[:200])  # a server's words
            print(f"evaluate: {'error' if share > UNRANKED_ABOVE else 'note'}: "
                  f"{printable(name)}: its fallback ({model.fallback}) played "
                  f"{model.fallbacks:,} of its {model.decisions:,} decisions ({share:.1f}%; the "
                  f"first: {first}), not the model"
                  + (f"; over {UNRANKED_ABOVE}%, the figures measure the fallback (a league "
                     "leaves such a policy unranked)" if share > UNRANKED_ABOVE else ""),
                  file=sys.stderr)
    if args.seeds[-1] >= RESERVED_SEEDS.stop:
        print(f"evaluate: note: seeds from {RESERVED_SEEDS.stop:,} up are where guild train "
              "draws its towns; a trained policy may have met these ones", file=sys.stderr)
    if args.json is not None:
        try:
            figures = {**result.to_dict(), "world": args.world}  # None: the standard town
            _check_writable(args.json)  # again: the games took a while
            write_atomic(args.json, json.dumps(figures, indent=2) + "\n")
        except OSError as e:
            return _error(f"cannot write {args.json}: {e.strerror or e}")
        except EvaluationError as e:
            return _error(str(e))
    return 1 if failed else 0


def language_models(specs: list[Any]) -> dict[str, Any]:
    """The ``llm:`` policies among ``specs``, built once here, so that the evaluation plays
    them and they can tell afterwards how many decisions their fallback played; a ValueError
    when nothing listens at an endpoint (every act would be the fallback's, and the figures
    would measure it, not the model)."""
    from agents import make_policy

    names = [s for s in specs if isinstance(s, str)]  # not an sb3: model loaded by guard
    models = {name: make_policy(name) for name in dict.fromkeys(names)
              if name.strip().lower().startswith("llm:")}
    for name, model in models.items():
        model.probe()
        model.name = name  # what the figures call it (paired_evaluation reads ``name``)
    return models


def report(r: PairedResult) -> str:
    """The readable lines of a result."""
    cycle = ", ".join(r.against)
    seats = "  ".join(f"{k} {d:+.3f}" for k, d in enumerate(r.per_seat))
    return "\n".join([
        f"evaluate: {r.spec} in {r.baseline}'s place against {cycle}, paired on the same seeds "
        "and seats (a league instead ranks everyone at mixed tables)",
        f"lineup: {r.spec} in each seat in turn, the others {cycle} cycling in seat order; "
        f"seeds {r.seeds[0]}..{r.seeds[1]}, {r.turns} turns",
        f"mean score {r.spec} {r.mean:+.3f}, {r.baseline} {r.baseline_mean:+.3f}",
        f"paired difference {r.diff:+.3f} (95% interval [{r.low:+.3f}, {r.high:+.3f}]) over "
        f"{r.games} games per side, seat-rotated",
        f"per seat: {seats}",
        f"time {r.seconds:.1f} s ({r.engine} engine, {2 * r.games / max(r.seconds, 1e-9):,.0f} "
        "games/s)",
    ])


def policy_failure(e: BaseException) -> str:
    """One line for an exception a policy's code raised mid-evaluation: what, and where (the
    deepest frame outside this package: the policy's own line). A league would count it as a
    fault and play the seat's fallback; an evaluation has no fallback, so it stops."""
    frames = traceback.extract_tb(e.__traceback__)
    ours = str(Path(__file__).resolve().parents[2])
    libraries = tuple({sysconfig.get_path(k) for k in ("stdlib", "purelib", "platlib")})
    theirs = ([f for f in frames if not f.filename.startswith((ours, *libraries))]
              or [f for f in frames if not f.filename.startswith(ours)] or frames[-1:])
    where = f" at {theirs[-1].filename}:{theirs[-1].lineno} in {theirs[-1].name}" if theirs else ""
    what = " ".join(f"{type(e).__name__}: {e}".split())[:300]
    return f"a policy raised {what}{where} (no figures: fix it, or rank it in a guild league, " \
           "which plays a failed decision with its fallback)"


JSON_BYTES = 1 << 20  # the figures are a few kB; a larger file is not ours


def _check_writable(text: str) -> None:
    """Refuse a --json path that cannot be written, or whose file is not figures this command
    wrote (a user's file, the replay, a link or device), before playing thousands of games."""
    if not text:  # Path("") is "."
        raise EvaluationError("--json is empty; give the file's name")
    path = Path(text)
    if path.is_dir():
        raise EvaluationError(f"--json {path} is a directory")
    if not (path.parent if str(path.parent) else Path(".")).is_dir():
        raise EvaluationError(f"--json {path}: no directory {path.parent}")
    try:
        check_replaceable(path, is_result_json, "a result file guild evaluate wrote", "--json",
                          JSON_BYTES)
    except LeagueError as e:
        raise EvaluationError(str(e)) from None


def _error(message: str) -> int:
    """One inert line: a policy's or a server's words may hold escape sequences."""
    print(f"guild evaluate: error: {printable(message)}", file=sys.stderr)
    return 2
