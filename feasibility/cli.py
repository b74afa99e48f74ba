"""``python -m feasibility``: the CI gate for every rule constant (RULES §18).

Exit status: 0 when every plan fits, 1 when any does not, 2 for bad arguments or a bad world
file (one line on stderr, no traceback).  Each plan is one seat's alone on the keepers' opening
stock, and the help says so: 0 does not promise that six seats at once finish, and 1 means "not
provably feasible on the opening stock", not "impossible" (:mod:`feasibility.gate`).

The turn count is ``--turns``, else the world file's ``turns``, else 14; it is
6..``MAX_TURNS`` (1000), the bound on every game.  ``--seeds -5..-1`` and ``--seeds=-5..-1`` are
the same.  ``--search-steps`` bounds the optimal plans' search (the verdict is the greedy
plans'); ``--json`` is written one failure at a time.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

from sim.commandline import broken_pipe
from sim.rules.setup import seed_in_range
from sim.rules.world import MAX_TURNS, MIN_TURNS
from sim.rules.worldfile import WorldFileError, world_and_turns

from .gate import DEFAULT_SEARCH_STEPS, DEFAULT_SEEDS, run_gate
from .report import format_text

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as the shell says of Ctrl-C
MAX_SEEDS = 1_000_000
MAX_SEARCH_STEPS = 10**12  # far past any search a machine finishes


class UsageError(Exception):
    """Bad command-line arguments (exit 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting, so errors are one line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def parse_seeds(text: str) -> range:
    """``"A..B"`` (inclusive) or a single ``"N"`` -> a range of seeds."""
    m = re.fullmatch(r"\s*(-?\d+)\s*(?:\.\.\s*(-?\d+)\s*)?", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected A..B (e.g. 0..199) or one seed; got {text!r}")
    a = int(m.group(1))
    b = int(m.group(2)) if m.group(2) is not None else a
    if b < a:
        raise argparse.ArgumentTypeError(f"empty seed range {a}..{b} (A must be <= B)")
    if b - a + 1 > MAX_SEEDS:
        raise argparse.ArgumentTypeError(f"at most {MAX_SEEDS} seeds at once; got {b - a + 1}")
    if not (seed_in_range(a) and seed_in_range(b)):
        raise argparse.ArgumentTypeError("seeds must keep seed * 7919 + 17 inside a signed "
                                         "64-bit integer")
    return range(a, b + 1)


def parse_turns(text: str) -> int:
    """A turn count from 6 to ``MAX_TURNS`` (RULES §1 MinTurns; the one bound on a game)."""
    digits = text.strip().lstrip("+-")
    if len(digits) > len(str(MAX_TURNS)) + 2 and digits.isdigit():
        raise argparse.ArgumentTypeError(f"must be {MIN_TURNS}..{MAX_TURNS}; got a number of "
                                         f"{len(digits)} digits")
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of turns, {MIN_TURNS}.."
                                         f"{MAX_TURNS}; got {text[:40]!r}") from None
    if not MIN_TURNS <= n <= MAX_TURNS:
        raise argparse.ArgumentTypeError(f"must be {MIN_TURNS}..{MAX_TURNS}; got {n}")
    return n


# ASCII digits, grouped by thousands with "," or "_" or not at all: "20,000,000", "20_000_000"
_STEPS = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+|[0-9]{1,3}(?:_[0-9]{3})+|[0-9]{1,20}")


def parse_search_steps(text: str) -> int | None:
    """``--search-steps``: a whole number 0..10**12 in ASCII digits (grouped by thousands with
    ``,`` or ``_``, or not), or ``none``."""
    word = text.strip()
    if word.lower() == "none":
        return None
    if not _STEPS.fullmatch(word) or int(word.replace(",", "")) > MAX_SEARCH_STEPS:
        raise argparse.ArgumentTypeError(f"expected a whole number 0..{MAX_SEARCH_STEPS:,} or "
                                         f"'none'; got {text[:40]!r}")
    return int(word.replace(",", ""))


# argparse takes any word that starts with "-" and is not a plain negative number for an
# option, so "--seeds -5..-1" would read as "--seeds" with no value.  A parser that also takes
# a negative "A..B" for a value accepts both spellings.
_SEEDS_OR_NUMBER = re.compile(r"^-\d+(\.\.-?\d+)?$|^-\d*\.\d+$")


def accept_negative_seeds(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Let ``parser`` read ``--seeds -5..-1`` as it reads ``--seeds=-5..-1`` (returned as is).

    Safe while the parser has no option spelled like a negative number (none does).
    """
    parser._negative_number_matcher = _SEEDS_OR_NUMBER  # type: ignore[attr-defined]
    return parser


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m feasibility",
                description="Check that every seat, alone, can finish both commissions within "
                            "the turn horizon and its purse (RULES §18), by a plan priced on the "
                            "keepers' opening stock.  Exit 0 pass, 1 fail, 2 error.",
                epilog="Each plan is one seat's alone: the other five seats wait and the shops "
                       "hold their opening stock.  A pass does not say that six seats at once "
                       "all finish (they compete for the same shelves; RULES §18's 2 suppliers "
                       "of every commission good are the only guard).  A fail says no fitting "
                       "plan on the opening stock: restock (RULES §6.2), goods handed to "
                       "keepers (§9.4) and loose goods are not counted, so the town may still "
                       "be playable (docs/feasibility.md).")
    p.add_argument("--turns", type=parse_turns, default=None,
                   help=f"episode length, {MIN_TURNS}..{MAX_TURNS} (default: the world file's, "
                        "else 14)")
    p.add_argument("--seeds", type=parse_seeds, default=DEFAULT_SEEDS, metavar="A..B",
                   help="seeds to draw seats from, inclusive (default 0..199)")
    p.add_argument("--world", metavar="FILE", default=None,
                   help="a world file (.json, or .toml) overriding the standard town")
    p.add_argument("--search-steps", type=parse_search_steps, default=DEFAULT_SEARCH_STEPS,
                   metavar="N", help="steps the optimal plans' search may take in all (default "
                   f"{DEFAULT_SEARCH_STEPS:,}, about a minute at most; 'none': no bound). The "
                   "verdict is the greedy plans' and does not depend on it: a case the search "
                   "did not reach is reported as not searched")
    p.add_argument("--json", action="store_true", help="print the full report as JSON")
    return accept_negative_seeds(p)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the gate; returns the exit status.  Ctrl-C at any point, the writing of the report
    included (its outcomes are read while it is written), gives one line and no verdict."""
    try:
        return _run(argv)
    except KeyboardInterrupt:
        print("python -m feasibility: interrupted; no verdict", file=sys.stderr)
        return EXIT_INTERRUPTED


def _run(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except UsageError as e:
        print(f"python -m feasibility: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        world, turns = world_and_turns(args.world, args.turns)
    except WorldFileError as e:
        print(f"python -m feasibility: {e}", file=sys.stderr)
        return EXIT_USAGE
    if not MIN_TURNS <= turns <= MAX_TURNS:  # a world file's own turns, checked here too
        print(f"python -m feasibility: error: turns must be {MIN_TURNS}..{MAX_TURNS}; got "
              f"{turns}", file=sys.stderr)
        return EXIT_USAGE
    if sys.stdout is None:  # started with standard output closed: Python gives no stream
        return _unwritten("standard output is closed")
    report = run_gate(world, turns, args.seeds, search_steps=args.search_steps,
                      world_file=args.world)
    try:
        if args.json:
            report.write_json(sys.stdout)  # streamed: one failure at a time
            print()
        else:
            print(format_text(report))
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left (| head): not the gate's verdict
        return broken_pipe()
    except OSError as e:  # a full disk, a closed output: not the gate's verdict either
        return _unwritten(e.strerror or str(e))
    except UnicodeEncodeError as e:  # an output that cannot take "§" or a keeper's name
        return _unwritten(f"standard output's encoding {e.encoding} cannot write "
                          f"{e.object[e.start:e.end]!r}")
    return EXIT_PASS if report.ok else EXIT_FAIL


def _unwritten(why: str) -> int:
    """The report cannot be written: one line, and no verdict (exit 2, never CI's FAIL)."""
    print(f"python -m feasibility: cannot write the report ({why}); no verdict",
          file=sys.stderr)
    return EXIT_USAGE
