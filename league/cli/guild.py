"""The ``guild`` command line: ``guild league`` and ``guild verify`` (docs/api.md §5); more commands
(``evaluate``, ``train``...) register from their own modules (``EXTRA_COMMANDS``).

Exit codes: 0 done; 1 ``verify`` found a claim that does not hold, or a worker died;
2 a user mistake (bad option, unknown policy, unusable or foreign directory), reported in one
line on stderr without a traceback; 130 interrupted by Ctrl-C, 143 stopped by SIGTERM (finished
episodes are kept; run the same command again to resume); 141 the reader of its output left
(``| head``).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from league.apart.isolated import DEFAULT_MEMORY_MB
from league.cli.progress import Progress, note
from league.core.errors import LeagueError
from league.core.ladder import table
from league.core.lineups import parse_policies
from league.core.store import shown
from league.core.verify import verify_dir
from league.core.verify_signature import public_key_arg
from league.procs.backends import WorkerDiedError
from league.tournament import MAX_SECONDS, LeagueOptions, default_workers, run_league
from sim.commandline import OneLineParser, broken_pipe, caught_signals, printable
from sim.rules.world import MAX_TURNS, MIN_TURNS

EPILOG_LEAGUE = """\
Episodes come in groups of six: one seed and one lineup under all six cyclic seat rotations.
Group g's lineup is the next six entries of the policy list repeated (p[(6g+j) mod k]),
shuffled; its seed comes from sha256 of --seed and g (see league/core/lineups.py). Re-running the
same command resumes an interrupted league; a larger --episodes extends a finished one.
Outputs in --out: league.json, results.jsonl, replays/<id>.json, ladder.json, signature.json,
secret.json (a secret draw's secrets, mode 0600); with --plot ladder.png, with --report
report.html and view/<id>.html.

No free rides: a decision a policy does not make (it raised, returned garbage or an action
the rules refuse, overran --decision-timeout, crashed, or its reset failed) is played by the
seat's fallback, marked scripted and counted. By default llm: seats fall back to factor and
every other seat waits ("I wait and watch the road."); --fallback wait or --fallback factor
sets it for every seat (it is part of the league's configuration). A policy more than 10% of
whose decisions were not its own is unranked: listed below the ranked policies, with rank
null in ladder.json and the reason. So is a policy that held no seat; equal mean scores (as
ladder.json records them) share a rank (1, 1, 3).

Signed: at the end of every run the league signs signature.json (the sha256 of league.json,
results.jsonl, ladder.json and every replay) with its Ed25519 key, kept outside --out:
--signing-key FILE, else $XDG_CONFIG_HOME/guild/league-key.pem (~/.config/guild/...),
created on first use with mode 0600. league.json holds the public key (signedBy);
resuming with another key is refused. Publish that key (64 hex digits) apart from the
league, so that readers can run guild verify --public-key HEX (verify prints its fingerprint).
"""

EPILOG_VERIFY = """\
Checks every replay (it re-derives from its seed and acts, and gives its results line), the
lineups, fallbacks, faults and ladder against league.json, and plays again every seat whose
policy is deterministic: each act of a factor, magpie, random or champion seat (and of a ppo:
seat whose model file is here with the sha256 league.json records) must be the one that policy
chooses.
Then the signature: signature.json must be signed by the key in league.json (signedBy) and
every file must have the digest it signed. Without --public-key that proves only that whoever
holds that key signed it (verify prints its fingerprint: compare it with the publisher's); with
--public-key HEX any other key fails. A league without signature.json from before leagues
were signed verifies as before, noted as unsigned. Exit 1 if anything fails.
"""


# What a ladder measures, said beside it (guild evaluate says its own: league.cli.evaluate).
MEASURES = ("ladder: each policy's mean score over the seats it held at mixed tables drawn from "
            "the whole list (guild evaluate instead plays one policy in factor's place, paired)")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, at most "
                                         f"{MAX_SECONDS:g}; got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="guild",
                           description="Run, rank and verify leagues of the guild game.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    lg = sub.add_parser("league", help="play a league, write results and replays, print the "
                        "ladder", epilog=EPILOG_LEAGUE,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    lg.add_argument("--policies", required=True, metavar="P1,P2,...",
                    help="policies: factor, magpie, random, champion, ppo:MODEL.pt, sb3:MODEL.zip, "
                    "llm:MODEL@URL, module.path:Name or exec:PROGRAM (any program that "
                    "answers the seat protocol on stdin and stdout)")
    lg.add_argument("--episodes", type=int, required=True, metavar="N",
                    help="episodes in the league (groups of six rotations)")
    lg.add_argument("--seed", type=int, default=None, metavar="S",
                    help="draw the towns in public from S, reproducibly (whoever knows S "
                    "knows every town; with seats that run apart it needs --public-draw); "
                    "default: a secret draw, committed to in league.json and revealed there "
                    "when the league ends")
    lg.add_argument("--public-draw", action="store_true",
                    help="accept --seed's public draw in a league with seats that run apart")
    lg.add_argument("--workers", type=int, default=None, metavar="W",
                    help="worker processes or Ray tasks in flight (default: the CPUs here; 1 "
                         "when a seat is llm:local, whose model server takes them all; with "
                         "more, each one's server takes its share)")
    lg.add_argument("--out", required=True, metavar="DIR", help="output directory")
    lg.add_argument("--turns", type=int, default=14,
                    help=f"turns per episode (14; {MIN_TURNS}..{MAX_TURNS})")
    lg.add_argument("--honest-town", action="store_true",
                    help="the honest-town variant: every robbery is forbidden")
    lg.add_argument("--no-speech", action="store_true", help="blank every spoken line")
    lg.add_argument("--decision-timeout", type=_positive_float, metavar="SEC",
                    help="a decision taking longer is discarded and the fallback plays it "
                    "(default: none for our in-process seats; 10 s for seats that run apart, "
                    "which also get an episode deadline of --start-timeout (60 s) + turns x "
                    "(timeout + 1 s) unless --episode-timeout is given)")
    lg.add_argument("--fallback", choices=("wait", "factor"), default=None,
                    help="what plays a decision a policy fails to make, for every seat: wait "
                    "(the do-nothing sentence) or factor (default: factor for llm: seats, "
                    "wait for the others)")
    lg.add_argument("--seat-memory", type=_seat_memory, default=DEFAULT_MEMORY_MB, metavar="MB",
                    help=f"address-space cap of each seat process ({DEFAULT_MEMORY_MB})")
    lg.add_argument("--trust", action="store_true",
                    help="run every policy in the league's process (your own code only; "
                    "or prefix one spec with trusted:)")
    lg.add_argument("--sandbox", choices=("bwrap", "none"), default="bwrap",
                    help="how seats that run apart (module:, sb3:, exec:) run: bwrap (default: "
                    "a bubblewrap sandbox each, no view of the machine, the league or the "
                    "others; needs bubblewrap) or none (a plain process of your user: only "
                    "for code you trust)")
    lg.add_argument("--episode-timeout", type=_positive_float, metavar="SEC",
                    help="end an episode between turns after SEC seconds (reason deadline)")
    lg.add_argument("--start-timeout", type=_positive_float, metavar="SEC",
                    help="seconds a seat that runs apart has to start, build its policy and "
                    "reset it for an episode (60; within --episode-timeout); one that takes "
                    "longer is a timeout and its fallback plays its episode")
    lg.add_argument("--plot", action="store_true", help="also write ladder.png (matplotlib)")
    lg.add_argument("--report", action="store_true",
                    help="also write report.html: the league's page (ladder, score "
                    "distributions, head-to-head, seat positions, every replay; guild report)")
    lg.add_argument("--backend", choices=("local", "ray"), default="local",
                    help="worker processes here (local) or Ray tasks (ray)")
    lg.add_argument("--address", metavar="ADDR", help="Ray cluster address (with --backend ray)")
    lg.add_argument("--signing-key", metavar="FILE",
                    help="the league's Ed25519 private key (PEM), created there if missing; "
                    "never inside --out (default: $XDG_CONFIG_HOME/guild/league-key.pem, else "
                    "~/.config/guild/league-key.pem)")
    vf = sub.add_parser("verify", help="re-derive every replay and check the results",
                        epilog=EPILOG_VERIFY,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    vf.add_argument("dir", metavar="DIR", help="a league's --out directory")
    vf.add_argument("--public-key", type=public_key_arg, metavar="HEX",
                    help="require the league to be signed by this Ed25519 public key (the 64 "
                    "hex digits its publisher gives; league.json's signedBy.publicKey)")
    for module in _extra_commands():
        module.register(sub)
    return parser


# More commands live in their own modules, each with ``register(sub)`` that adds its parser
# and sets ``handler=`` (a function of the parsed args returning the exit code) as a default.
EXTRA_COMMANDS = ("html_viewer", "terminal", "train", "export_sft", "evaluate", "report")


def _commands(parser: argparse.ArgumentParser) -> list[str]:
    """The names of ``parser``'s subcommands, in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


def _extra_commands() -> list:
    import importlib
    import importlib.util

    return [importlib.import_module(f"league.cli.{name}") for name in EXTRA_COMMANDS
            if importlib.util.find_spec(f"league.cli.{name}") is not None]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``guild`` script; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage mistake (2, already reported)
        return e.code if isinstance(e.code, int) else 2
    stop = _Stop()
    try:
        if args.command == "league":
            with stop.on_signals():
                return _league(args, stop)
        if args.command == "verify":
            return _verify(args)
        handler = getattr(args, "handler", None)
        if handler is not None:
            return handler(args)
        print(f"guild: error: choose a command: {', '.join(_commands(parser))} (guild COMMAND "
              "--help says more)", file=sys.stderr)
        return 2
    except LeagueError as e:  # its paths and names come from anyone: none may act on a terminal
        print(f"guild {args.command}: error: {printable(str(e))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of our output left (guild verify DIR | head -1)
        return broken_pipe()
    except KeyboardInterrupt:
        return stop.report(args.command)
    except WorkerDiedError as e:
        if stop.terminated:  # SIGTERM to the whole group: the workers went first
            return stop.report(args.command)
        print(f"guild {args.command}: error: {e}; finished episodes are kept, run the same "
              "command again to resume", file=sys.stderr)
        return 1
    except OSError as e:
        if e.errno == errno.EBADF and not _writable(sys.stdout):  # guild verify D 1</dev/null
            print(f"guild {args.command}: error: cannot write the output: standard output is "
                  "closed or not open for writing", file=sys.stderr)
            broken_pipe()  # no final flush to raise again
            return 2
        if e.errno not in STORAGE_ERRORS:
            raise
        print(f"guild {args.command}: error: {storage_problem(e)}"
              + ("; finished episodes are kept, run the same command again to resume"
                 if args.command == "league" else ""), file=sys.stderr)
        return 1


def _writable(stream: object) -> bool:
    """Whether ``stream``'s file can be written (a descriptor opened read-only cannot)."""
    try:
        return os.write(stream.fileno(), b"") == 0  # type: ignore[attr-defined]
    except (OSError, ValueError, AttributeError):
        return False


# a disk that is full, read-only, failing or out of quota: the machine's state, not a bug, so
# one line, not a traceback (a league's written lines and replays stay whole: store.py)
STORAGE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG})


def storage_problem(e: OSError) -> str:
    """``e`` in a few words: its reason and, when known, the file (shown inert)."""
    where = f" ({shown(str(e.filename), 200)})" if e.filename else ""
    return f"{e.strerror or type(e).__name__}{where}"


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a scheduler's stop) during a league: it stops as Ctrl-C does."""


class _Stop:
    """How a run was stopped: SIGTERM raises :class:`Terminated` once, and is remembered;
    Ctrl-C raises ``KeyboardInterrupt``. Inside :meth:`held` (a library's critical section)
    either waits to the section's end: raised there, it would leave the library's lock held,
    and the progress bar's close would wait for it forever."""

    def __init__(self) -> None:
        self.terminated = False
        self._held = 0
        self._pending: KeyboardInterrupt | None = None

    @contextlib.contextmanager
    def on_signals(self) -> Iterator[None]:
        """SIGTERM and Ctrl-C handled as the class says (a Ctrl-C ignored when the league
        began stays ignored: ``sim.commandline.caught_signals``); the previous handlers come
        back after."""
        if threading.current_thread() is not threading.main_thread():
            yield  # signals reach only the main thread: nothing to catch here
            return

        def stop(signum: int, frame: Any) -> None:
            if signum == signal.SIGTERM:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second must not cut the save
                self.terminated = True
                raised: KeyboardInterrupt = Terminated()
            else:  # a second Ctrl-C raises wherever it lands, as Python's own handler does
                signal.signal(signal.SIGINT, signal.default_int_handler)
                raised = KeyboardInterrupt()
            if not self._held:
                raise raised
            if self._pending is None:
                self._pending = raised

        previous = {s: signal.signal(s, stop) for s in caught_signals()}
        try:
            yield
        finally:
            for s, handler in previous.items():  # (None: set outside Python: the default)
                signal.signal(s, signal.SIG_DFL if handler is None else handler)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """A section no stop may cut: one that comes inside raises at its end."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held and self._pending is not None:
                raised, self._pending = self._pending, None
                raise raised

    def report(self, command: str) -> int:
        """One line on stderr; the exit code (143 for SIGTERM, 130 for Ctrl-C)."""
        how = "terminated (SIGTERM)" if self.terminated else "interrupted"
        resume = ("; finished episodes are kept, run the same command again to resume"
                  if command == "league" else "")
        print(f"guild {command}: {how}{resume}", file=sys.stderr)
        return 128 + signal.SIGTERM if self.terminated else 130


class _ProgressBar:
    """``run_league``'s progress callback: a ``Progress`` on stderr, closed when all are done.
    Its calls are held from stops (:meth:`_Stop.held`): tqdm takes a pair of locks."""

    def __init__(self, stop: _Stop) -> None:
        self.bar: Progress | None = None
        self.stop = stop

    def __call__(self, done: int, total: int) -> None:
        with self.stop.held():
            if self.bar is None:
                self.bar = Progress(total)
            if done:
                self.bar.update()
        if done >= total:
            self.close()

    def close(self) -> None:
        with self.stop.held():
            if self.bar is not None:
                self.bar.close()
                self.bar = None


def _seat_memory(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected megabytes, got {text!r}") from None
    if not 64 <= value <= 1 << 20:
        raise argparse.ArgumentTypeError(f"expected 64..{1 << 20} megabytes, got {text!r}")
    return value


def _league(args: argparse.Namespace, stop: _Stop) -> int:
    policies = tuple(parse_policies(args.policies))
    options = LeagueOptions(
        policies=policies, episodes=args.episodes, out=args.out,
        seed=args.seed, public_draw=args.public_draw,
        workers=args.workers if args.workers is not None else default_workers(policies),
        turns=args.turns, honest_town=args.honest_town, no_speech=args.no_speech,
        decision_timeout=args.decision_timeout, episode_timeout=args.episode_timeout,
        start_timeout=args.start_timeout,
        plot=args.plot, backend=args.backend, address=args.address, trust=args.trust,
        seat_memory=args.seat_memory, fallback=args.fallback, sandbox=args.sandbox,
        signing_key=args.signing_key)
    progress = _ProgressBar(stop)
    try:
        run = run_league(options, on_note=note, on_progress=progress)
    finally:
        progress.close()  # before an interruption or error is reported
    report = None
    if args.report:  # written before anything is printed: a reader that left loses no file
        from league.cli.report import write_report

        report = write_report(args.out)
    rate = f", {run.new / run.seconds:.1f} episodes/s" if run.new and run.seconds > 0 else ""
    print(f"league: {run.new} new episodes in {run.seconds:.1f} s{rate}; {len(run.rows)} "
          f"episodes in {args.out}")
    print(MEASURES)
    print(table(run.ladder))
    if report is not None:
        print(f"report: {report}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    report = verify_dir(args.dir, public_key=args.public_key)
    if report.torn:
        print(f"verify: ignoring the unfinished last line of {printable(args.dir)}/results.jsonl "
              "(an interrupted run)", file=sys.stderr)
    print("\n".join(report.lines()))
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
