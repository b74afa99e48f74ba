"""``guild play``: a person plays one seat in the terminal against five policies.

People learn the game by playing it.  Each turn shows a compact view (``play_text.turn_text``:
what changed since the seat last chose, the room and its shop, the purse, pack and
commissions, the turns left) and reads one line.  What a line may be (:func:`parse_line`):

* a sentence, as any player writes it: ``I buy 2 rope from Smith Bram``.  A quoted part is
  spoken aloud by the town's own rules: ``I walk to the docks "see you there"``;
* a sentence, a bar, and a line to say: ``I walk to the docks | say "see you there"`` (the
  ``say`` and the quotes are optional: ``... | see you there``); a bar inside the quoted part
  is spoken (``I say "meet me | at the docks"``);
* the JSON object a language-model seat replies with:
  ``{"action": "...", "say": "...", "notes": "..."}``;
* a number: that sentence of the ``moves`` list (``7 | say hello`` speaks too);
* ``moves`` (``m``) lists this turn's legal sentences, numbered; ``help`` (``?``) the guide;
  ``town`` (``t``) the full text view a model reads; an empty line asks again;
* ``quit`` (or ``exit``, or Ctrl-D) ends the game and prints the results as they stand.

A sentence the town cannot use this turn (the parser reads no act in it, or the environments'
legal mask refuses the act: ``play_text.judge``) is not played: why, and the closest legal
sentences, are printed and the line is asked for again, so a typo never costs a turn.  The
outcome of a played sentence opens the next turn; after the last turn it is printed before the
results.  ``--replay FILE`` saves the episode for ``guild view`` (its folder, and that a file
already there is a replay, are checked before the game).  ``sb3:`` opponents (model zips,
which are pickles) are loaded in a sandbox unless ``--trust`` (``league.apart.sb3_load``);
``module:Name`` and ``exec:`` opponents run with the player's rights, as in ``guild evaluate``
(``--opponents``' help says so).
The opponents are asked from worker threads that last the whole game (:class:`Opponents`):
a seat that runs as a process dies with the thread that started it.  An opponent whose policy
raises (even ``sys.exit``) or answers what the rules refuse waits that turn, as a league's
fallback does, and the person is told once; one whose own fallback decides for it (an
``llm:`` seat whose server is down plays ``factor``) is told of once, and counted at the end.
Everything printed goes through :func:`show`: what seats say and people type may hold terminal
escape sequences, which are shown, never obeyed; the turn, the moves and the notes are wrapped to
the terminal's width (the results table and the guide are not).
A standard stream that is closed, or cannot be written, is said in one line (exit 2).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import re
import secrets
import sys
import textwrap
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agents import Decision, as_decision, make_policy
from agents.baselines.rules import WAIT
from league.apart.sb3_load import guard
from league.cli.html_viewer import PROTOCOL
from league.cli.play_text import (
    MIN_WIDTH,
    WIDTH,
    guide_text,
    inert,
    judge,
    last_sentence,
    legal_moves,
    moves_text,
    refusal_text,
    suggestions,
    turn_text,
)
from league.core.atomic import write_atomic
from league.core.errors import LeagueError
from league.core.files import check_replaceable, world_option
from sim import Game, GameConfig
from sim.language.textview import example_seats
from sim.language.vocab import QUOTE_MAP
from sim.policies import check_town
from sim.rules.errors import ConfigError
from sim.rules.world import SEATS

DEFAULT_OPPONENTS = "factor,magpie,factor,magpie,factor"
HUMAN = "you"
PROMPT = "Your sentence (or moves, help)> "
RULE = "=" * 78
COMMANDS = {"quit": "quit", "exit": "quit", "q": "quit", "help": "help", "?": "help",
            "h": "help", "moves": "moves", "m": "moves", "town": "town", "t": "town"}
_NUMBER = re.compile(r"[0-9]{1,9}")  # ASCII digits only: int() reads other scripts' digits too
MAX_WHY = 200  # characters of an opponent's error shown to the person
MAX_ECHO = 240  # characters of a piped line echoed back (a 10 MB line is not printed whole)
MAX_LINE = 1 << 20  # characters of a piped line read: a longer one is skipped, unread
# How a replay's file begins: --replay replaces such a file (a replay played before), no other.
REPLAY_HEAD = re.compile(rb'\s*\{\s*"protocol"\s*:\s*"' + re.escape(PROTOCOL.encode()) + rb'"')
WAIT_NOTE_AFTER = 1.0  # seconds the person waits for the other seats before being told why
# Seconds a person who leaves waits, at most, for an opponent still thinking: a network's forward
# pass takes milliseconds; a policy that never answers must not keep the person in the game.
SETTLE_LIMIT = 10.0


@dataclass(frozen=True)
class Line:
    """One line typed by the person: a command (``quit``, ``help``, ``moves``, ``town``,
    ``empty``), or a move: a sentence, or ``pick``, the number of a listed sentence."""

    command: str = ""          # one of COMMANDS' values, "empty", or "" for a move
    sentence: str = ""
    say: str = ""
    notes: str = ""
    pick: int | None = None    # a number typed instead of a sentence (1 is the first)


@dataclass(frozen=True)
class Reply:
    """What the terminal does with a typed line: print ``show`` (when not empty), then play
    ``move`` (when set), end the game (``quit``), or ask again."""

    show: str = ""
    move: Line | None = None
    quit: bool = False


def parse_line(text: str) -> Line:
    """What a typed line means (see the module docstring); never raises."""
    stripped = text.strip()
    command = COMMANDS.get(stripped.lower())
    if command:
        return Line(command)
    if not stripped:
        return Line("empty")
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except (ValueError, RecursionError):  # not JSON, or nested too deep: a sentence
            obj = None
        if isinstance(obj, dict):
            def field(key: str) -> str:
                v = obj.get(key, "")
                return v if isinstance(v, str) else ""
            return _picked(Line(sentence=field("action"), say=field("say"),
                                notes=field("notes")))
    bar = _bar(stripped)
    if bar < 0:
        return _picked(Line(sentence=stripped))
    sentence, said = stripped[:bar], stripped[bar + 1:].strip()
    if said.lower().startswith("say ") or said.lower() == "say":
        said = said[3:].strip()
    if len(said) >= 2 and said[0] == said[-1] == '"':
        said = said[1:-1].strip()
    return _picked(Line(sentence=sentence.strip(), say=said))


def _bar(text: str) -> int:
    """Where the bar that ends the sentence is (-1: none): the first one outside the quoted
    part, which the town speaks aloud (SENTENCES §4: the first pair of quote marks, curly ones
    and guillemets too; an unterminated quote is none), so ``I say "a | b"`` says ``a | b``."""
    marks = text.translate(QUOTE_MAP)  # one character for one: the places are the same
    bar = marks.find("|")
    first = marks.find('"')
    if bar < 0 or first < 0 or bar < first:
        return bar
    last = marks.find('"', first + 1)
    return bar if last < 0 else marks.find("|", last + 1)


def _picked(line: Line) -> Line:
    """A move whose sentence is a number is the pick of that listed sentence."""
    text = line.sentence.strip()
    if _NUMBER.fullmatch(text):
        return replace(line, sentence="", pick=int(text))
    return line


def respond(game: Game, seat: int, text: str, width: int = WIDTH) -> Reply:
    """What to do with one typed line this turn; reads the game, never changes it.

    A move comes back only when the town can use it (``play_text.judge``): a number plays the
    listed sentence (shown, so the person sees what was played); a sentence is played as
    typed.  Anything else is a reply to print (laid out ``width`` wide) before asking again.
    """
    line = parse_line(text)
    if line.command == "quit":
        return Reply(quit=True)
    if line.command == "help":
        others = [game.aliases[(seat + k) % SEATS] for k in range(1, SEATS)]
        cog = (example_seats(game.world, others) or others)[0]  # no word of the town
        return Reply(guide_text(cog, game.world))
    if line.command == "town":
        return Reply(town_text(game, seat))
    if line.command == "empty":
        return Reply()
    moves = legal_moves(game, seat)
    if line.command == "moves":
        return Reply(moves_text(moves, width))
    if line.pick is not None:
        if not 1 <= line.pick <= len(moves):
            return Reply(f"There is no sentence {line.pick} this turn: they are numbered 1 to "
                         f"{len(moves)} (type moves to list them).")
        sentence = moves[line.pick - 1].sentence
        return Reply(f"You: {sentence}", replace(line, sentence=sentence, pick=None))
    verdict = judge(game, seat, line.sentence)
    if verdict.why:
        picks = suggestions(line.sentence, moves, verdict.kind)
        return Reply(refusal_text(verdict.why, picks, moves, width))
    return Reply(move=line)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``guild play`` to the ``guild`` command line."""
    p = sub.add_parser(
        "play", help="play one seat yourself in the terminal against five policies",
        description="Play one seat of the guild game in the terminal against five policies.\n"
                    "Each turn shows what changed, your room, purse and commissions, and reads one "
                    "line: a sentence, or a number from the moves list.",
        epilog=guide_text(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seat", type=int, choices=range(SEATS), default=0, metavar="N",
                   help="your seat, 0 to 5 (0); seats differ in start room and initiative")
    p.add_argument("--seed", type=int, default=None, metavar="S",
                   help="the episode's seed (default: a random one, printed at the start)")
    p.add_argument("--opponents", default=DEFAULT_OPPONENTS, metavar="P1,P2,...",
                   help="policies of the other five seats in seat order: factor, magpie, "
                        "random, champion, ppo:MODEL.pt, sb3:MODEL.zip, llm:MODEL@URL, "
                        "module.path:Name or exec:COMMAND; fewer than five are repeated "
                        f"({DEFAULT_OPPONENTS}). A module.path:Name opponent runs in this "
                        "process and an exec: one as its child, with your rights: play only "
                        "code you trust (a league runs others' code in a sandbox)")
    p.add_argument("--turns", type=int, default=None, metavar="T",
                   help="turns in the episode (at least 6; default: the world file's, else 14)")
    p.add_argument("--world", metavar="FILE", default=None,
                   help="play a world file's town (docs/feasibility.md) instead of the standard "
                        "one; guild view --world FILE shows its replay")
    p.add_argument("--replay", metavar="FILE",
                   help="also save the episode as a replay (for guild view) when it ends; an "
                        "earlier replay there is replaced, any other file kept")
    p.add_argument("--trust", action="store_true",
                   help="load sb3: opponents in this process (a model zip is a pickle: loading "
                   "it runs its code; only for files you trust); by default each is loaded in "
                   "a bubblewrap sandbox and played here from its weights alone")
    p.set_defaults(handler=run)


def opponent_specs(text: str) -> list[str]:
    """Five policy specs from a comma list of one to five (repeated in order to fill five)."""
    specs = [s.strip() for s in text.split(",")]
    if not specs or any(not s for s in specs):
        raise LeagueError(f"--opponents {text!r}: give policy names separated by commas")
    if len(specs) > SEATS - 1:
        raise LeagueError(f"--opponents names {len(specs)} policies; there are only "
                          f"{SEATS - 1} other seats")
    return [specs[i % len(specs)] for i in range(SEATS - 1)]


def lineup(seat: int, opponents: list[str]) -> list[str]:
    """The six players in seat order: the person at ``seat``, the opponents elsewhere."""
    others = iter(opponents)
    return [HUMAN if s == seat else next(others) for s in range(SEATS)]


def run(args: argparse.Namespace) -> int:
    """Handler of ``guild play``: 0 when the game ends or the person quits, 130 on Ctrl-C."""
    check_streams()  # before an opponent is made: a game no one can play or see is refused
    names = lineup(args.seat, opponent_specs(args.opponents))
    seed = args.seed if args.seed is not None else secrets.randbelow(2 ** 31)
    world, turns = world_option(args.world, args.turns)
    try:
        config = GameConfig(seed=seed, turns=turns, players=tuple(names), world=world)
    except ConfigError as e:
        raise LeagueError(str(e).replace("GameConfig.", "--")) from None
    policies: list = [None] * SEATS
    try:  # an sb3: model is loaded now (in a sandbox), before the game starts
        specs = guard(names, args.trust)
    except ValueError as e:
        raise LeagueError(f"--opponents: {e}") from None
    for s, spec in enumerate(specs):
        if s != args.seat:
            try:
                policies[s] = make_policy(spec)
            except ValueError as e:
                raise LeagueError(f"--opponents: {e}") from None
            except Exception as e:  # its own code failed: nothing is played yet
                raise LeagueError(f"--opponents: {spec} could not be made ({_why(e)})"
                                  ) from None
    try:
        check_town([p for p in policies if p is not None], world)
    except ValueError as e:
        raise LeagueError(f"--opponents: {e}") from None
    if args.replay is not None:  # "" too: refused, not taken for no replay
        check_replay_path(args.replay)  # before the game, not after it
    game = Game(config)
    tolerate_bad_bytes()
    opponents = Opponents(args.seat, policies)
    try:
        broken = reset_all(policies, seed, opponents)
        me = game.aliases[args.seat]
        rivals = ", ".join(f"{game.aliases[s]} ({n})" for s, n in enumerate(names)
                           if s != args.seat)
        town = "" if args.world is None else f", the town of {args.world}"
        show_note(f"The guild game: seed {seed}, {turns} turns{town}. You are {me} (seat "
                  f"{args.seat}) against {rivals}.")
        show_note("Type help for how to write a sentence, moves for this turn's legal ones.")
        for s, why in broken.items():
            show_note(failure_text(game, s, f"could not be reset ({why})", "every turn"))
        tally = Tally()
        try:
            code, why = play(game, args.seat, policies, opponents, tally)
        except KeyboardInterrupt:
            print(flush=True)
            code, why = 130, "interrupted"
    finally:
        opponents.close()
    show(results_text(game, why))
    for line in tally.summary(game, policies):
        show_note(line)
    if args.replay is not None:
        save_replay(game, names, Path(args.replay), args.world)
    return code


def play(game: Game, seat: int, policies: list, opponents: Opponents | None = None,
         tally: Tally | None = None) -> tuple[int, str]:
    """The turn loop, asking the opponents on ``opponents``' threads (its own when None), and
    counting their failures and fallbacks in ``tally``; returns the exit code and why the game
    stopped."""
    if opponents is None:
        mine = Opponents(seat, policies)
        try:
            return play(game, seat, policies, mine, tally)
        finally:
            mine.close()
    tally = Tally() if tally is None else tally
    before: Mapping | None = None  # the seat's view when it last chose
    while not game.done:
        width = screen_width()
        view = game.observe(seat)
        show(RULE[:width])
        show(turn_text(view, before, game.world, width))
        deciding = opponents.ask(lambda s, p: p.act(game, s))  # while the person reads, types
        try:
            try:
                line = choose(game, seat, width)
            except EOFError:
                print(flush=True)
                return 0, "you left (end of input)"
            if line is None:
                return 0, "you quit"
            answers = deciding.answers()
        finally:  # the person leaves (or has the answers): no seat thinks here any more
            deciding.settle()
        before = view
        failed = play_turn(game, seat, line, policies, answers, tally)
        for s in tally.first_failures(failed):
            show_note(failure_text(game, s, f"failed ({failed[s]})"))
        for s in tally.first_fallbacks():
            show_note(fallback_text(game, s, policies[s]))
    width = screen_width()
    show(RULE[:width])
    show("\n".join(last_sentence(game.observe(seat), width)))
    return 0, f"the episode ended ({game.results()['reason']})"


def _asked(call: Callable[..., Any], *args: Any) -> tuple[Any, BaseException | None]:
    """``call(*args)``'s answer, or what it raised: whatever a policy raises, ``sys.exit`` and
    ``KeyboardInterrupt`` too, is its failure, and the person's game goes on.  But for the
    person's Ctrl-C: a signal is handled in the main thread only, so a ``KeyboardInterrupt``
    there may be the person's and goes on up (a policy's is its own on a worker thread)."""
    try:
        return call(*args), None
    except KeyboardInterrupt as e:
        if threading.current_thread() is threading.main_thread():
            raise
        return None, e
    except BaseException as e:  # noqa: BLE001 - a policy's failure, even sys.exit: it waits
        return None, e


class _Worker:
    """A daemon thread that runs the calls it is given one after another, for the whole game.

    A seat that runs as a process (``exec:``) is started by the thread that first asks it and
    dies with that thread, not with the process (``league.seat.zygote.die_with_parent``): a
    thread per turn killed such an opponent at each turn's end, and it lost turns restarting.
    A daemon, so that a call that never returns does not keep the person's process alive."""

    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def _run(self) -> None:
        while (call := self._calls.get()) is not None:
            call()

    def put(self, call: Callable[[], None]) -> None:
        self._calls.put(call)

    def stop(self) -> None:
        """End the thread once its calls are done (without waiting for it: one may hang)."""
        self._calls.put(None)


class Opponents:
    """The threads that ask the opponents' policies, for the whole game: one for the seats
    that must be asked one at a time, and one for each seat that may run beside the others
    (``concurrent``: a language-model seat waiting on the network)."""

    def __init__(self, seat: int, policies: list) -> None:
        self._policies = policies
        seats = [s for s, p in enumerate(policies) if s != seat and p is not None]
        self._apart = [s for s in seats if _flag(policies[s], "concurrent")]
        self._in_turn = [s for s in seats if s not in self._apart]
        self._shared = _Worker("guild-play-seats")
        self._own = {s: _Worker(f"guild-play-seat-{s}") for s in self._apart}

    def ask(self, call: Callable[[int, Any], Any]) -> Deciding:
        """Start asking every opponent ``call(seat, policy)`` (the policy as it is now) on
        its thread; the answers come through the :class:`Deciding` returned."""
        deciding = Deciding(len(self._own) + 1)
        for s, worker in self._own.items():
            worker.put(lambda s=s: deciding.run([(s, self._policies[s])], call, False))
        in_turn = [(s, self._policies[s]) for s in self._in_turn]
        self._shared.put(lambda: deciding.run(in_turn, call, True))
        deciding.begun.wait()  # as a new thread's start: a person who leaves at once waits
        return deciding        # for the first seat asked (it may be in torch), none after

    def close(self) -> None:
        """Let the threads end once they are idle; a call still running is left to the exit."""
        self._shared.stop()
        for worker in self._own.values():
            worker.stop()


class Deciding:
    """One question to every opponent (this turn's act, or the game's reset), asked in the
    background: every seat acts on the state at the turn's start (RULES §6), so they need not
    wait for the person's move, and the person waits for the slowest seat, if at all, not for
    each in turn.  A person who leaves mid-turn waits for the seat thinking on the shared
    thread, if any, but asks none after it and does not wait for the concurrent seats
    (:meth:`settle`)."""

    def __init__(self, jobs: int) -> None:
        self._got: dict[int, tuple[Any, BaseException | None]] = {}
        self._lock = threading.Lock()
        self._jobs = jobs  # the threads still asking
        self._done = threading.Event()  # every thread has asked all its seats
        self._leaving = threading.Event()  # the person left: ask no more seats
        self._shared = threading.Event()  # no seat is thinking on the shared thread any more
        self.begun = threading.Event()  # the shared thread asks its first seat, or none

    def run(self, seats: list[tuple[int, Any]], call: Callable[[int, Any], Any],
            shared: bool) -> None:
        """Ask ``seats`` in turn, on a worker thread; never raises (the thread asks on)."""
        try:
            for s, policy in seats:
                if self._leaving.is_set():
                    break
                if shared:  # after the first check: that seat is asked, leave or not
                    self.begun.set()
                self._got[s] = _asked(call, s, policy)
        finally:
            if shared:
                self.begun.set()
                self._shared.set()
            with self._lock:
                self._jobs -= 1
                if self._jobs == 0:
                    self._done.set()

    def answers(self, note: str = "(the other seats are still deciding...)"
                ) -> dict[int, tuple[Any, BaseException | None]]:
        """Each opponent's answer, or what it raised; says ``note`` once when they take a
        while (Ctrl-C leaves)."""
        if not self._done.wait(WAIT_NOTE_AFTER):
            show(note)
            self._done.wait()
        return dict(self._got)

    def settle(self) -> None:
        """Ask no more seats, and wait for the one thinking on the shared thread to answer, as
        a person who leaves mid-turn must: the process may not exit while a policy runs in
        native code with the interpreter's lock released (a network's forward pass in torch).
        The interpreter's exit would stop that thread where it takes the lock back, unwinding
        through C++ frames that may not be unwound, and the process would abort ("terminate
        called without an active exception", exit 134) instead of ending with its status.
        The concurrent seats (a language model's request, waiting on the network in Python)
        are left to the exit, and so is a seat still thinking after :data:`SETTLE_LIMIT`
        seconds: a policy that never answers must not keep the person in the game (Ctrl-C
        leaves at once).  Nothing waits for an abandoned call later: the game has ended."""
        self._leaving.set()
        if not self._shared.wait(WAIT_NOTE_AFTER):
            show(f"(waiting up to {SETTLE_LIMIT:g} s for an opponent to finish thinking; "
                 "Ctrl-C leaves now)")
            self._shared.wait(SETTLE_LIMIT)


@dataclass
class Tally:
    """Per opponent seat, over the game: its decisions, those its policy failed (it waited)
    and those its own fallback played (a decision marked scripted from a policy that is not
    scripted by nature: an ``llm:`` seat whose server is down plays ``factor``), with the
    seats the person has been told of."""

    decisions: dict[int, int] = field(default_factory=dict)
    failures: dict[int, int] = field(default_factory=dict)
    fallbacks: dict[int, int] = field(default_factory=dict)
    told_failed: set[int] = field(default_factory=set)
    told_fallback: set[int] = field(default_factory=set)

    def count(self, seat: int, failed: bool, fallback: bool) -> None:
        self.decisions[seat] = self.decisions.get(seat, 0) + 1
        if failed:
            self.failures[seat] = self.failures.get(seat, 0) + 1
        if fallback:
            self.fallbacks[seat] = self.fallbacks.get(seat, 0) + 1

    def first_failures(self, failed: Mapping[int, str]) -> list[int]:
        """The seats in ``failed`` the person has not been told of yet (now told)."""
        new = [s for s in failed if s not in self.told_failed]
        self.told_failed.update(new)
        return new

    def first_fallbacks(self) -> list[int]:
        """The seats whose fallback has played that the person has not been told of yet."""
        new = [s for s in sorted(self.fallbacks) if s not in self.told_fallback]
        self.told_fallback.update(new)
        return new

    def summary(self, game: Game, policies: list) -> list[str]:
        """What the person is told after the results: how many decisions each opponent's
        fallback played, or its policy failed, as ``guild evaluate`` tells of a model's."""
        out = []
        for s in sorted(self.decisions):
            cog, spec, n = game.aliases[s], game.config.players[s], self.decisions[s]
            if self.fallbacks.get(s):
                k = self.fallbacks[s]
                out.append(f"{cog}'s fallback{_fallback_name(policies[s])} played {k} of its "
                           f"{n} decisions ({100 * k / n:.0f}%), not its policy ({spec}).")
            if self.failures.get(s):
                k = self.failures[s]
                out.append(f"{cog}'s policy ({spec}) failed {k} of its {n} decisions; {cog} "
                           "waited instead.")
        return out


def _fallback_name(policy: Any) -> str:
    """`` (factor)``: the policy's fallback, when it names one (``llm:`` seats), else ""."""
    name = getattr(policy, "fallback", None)
    return f" ({name[:40]})" if isinstance(name, str) and name else ""


def play_turn(game: Game, seat: int, line: Line, policies: list,
              decided: Mapping[int, tuple[Any, BaseException | None]] | None = None,
              tally: Tally | None = None) -> dict[int, str]:
    """One turn: the person's move and each opponent's answer (a sentence, an intent or a
    decision with its spoken line and notes, as ``agents.play_episode`` takes it), asked here
    unless ``decided`` holds them (:class:`Deciding`).  An opponent whose policy raises (even
    ``sys.exit``) or answers what the rules refuse waits instead (marked scripted, as a
    league's fallback is), so the person's game goes on; the seats that did, with why.
    ``tally`` counts each opponent's decisions, failures and fallbacks."""
    failed: dict[int, str] = {}
    answers: list[Decision | None] = []
    for s, p in enumerate(policies):
        if s == seat:
            answers.append(None)
            continue
        if decided is None:
            got, error = _asked(p.act, game, s)
        else:
            got, error = decided.get(s, (None, RuntimeError("it gave no answer")))
        try:
            if error is not None:  # stored, not raised: a SystemExit would end the game here
                failed[s] = _why(error)
                answer = Decision(WAIT, scripted=True)
            else:
                answer = as_decision(got)
                game.intent_for(answer.action, s)  # the rules' own check of an action
                if not (isinstance(answer.say, str) and isinstance(answer.notes, str)):
                    raise TypeError("its say and notes must be text")
                answer = replace(answer, scripted=bool(answer.scripted))  # it may raise
        except Exception as e:
            failed[s] = _why(e)
            answer = Decision(WAIT, scripted=True)
        if tally is not None:
            tally.count(s, s in failed, s not in failed and answer.scripted
                        and not _flag(p, "scripted"))
        answers.append(answer)
    actions = [line.sentence if a is None else a.action for a in answers]
    says = [line.say if a is None else a.say for a in answers]
    notes = [line.notes if a is None else a.notes for a in answers]
    scripted = [a is not None and (_flag(p, "scripted") or a.scripted)
                for a, p in zip(answers, policies)]
    game.play_turn(actions, says=says, notes=notes, scripted=scripted)
    return failed


def _flag(policy: Any, name: str) -> bool:
    """A policy's class flag (``scripted``, ``concurrent``: ``agents.Policy``); False when
    reading it fails (a property of someone else's code that raises)."""
    try:
        return bool(getattr(policy, name, False))
    except Exception:
        return False


def reset_all(policies: list, seed: int, opponents: Opponents | None = None
              ) -> dict[int, str]:
    """Reset each opponent's policy, on the thread that will ask it (``opponents``; here when
    None); one whose reset fails, even by ``sys.exit`` or a ``KeyboardInterrupt`` of its own,
    waits all game (a league's seat whose reset fails falls back too): the seats that did,
    with why.  The person's Ctrl-C meanwhile goes on up."""
    def reset(s: int, p: Any) -> None:
        if callable(getattr(p, "reset", None)):
            p.reset(seed)

    if opponents is None:
        got = {s: _asked(reset, s, p) for s, p in enumerate(policies) if p is not None}
    else:
        deciding = opponents.ask(reset)
        try:
            got = deciding.answers("(the other seats are getting ready...)")
        finally:  # Ctrl-C: none still resetting in torch when the process exits
            deciding.settle()
    broken: dict[int, str] = {}
    for s, (_, error) in sorted(got.items()):
        if error is not None:
            broken[s] = _why(error)
            policies[s] = Waiting()
    return broken


class Waiting:
    """Stands in for an opponent whose policy could not start: it waits every turn."""

    scripted = True

    def act(self, game: Game, seat: int) -> str:
        return WAIT


def _why(e: BaseException) -> str:
    """An opponent's error in one short line (its text shown inert by :func:`show`)."""
    try:
        said = str(e)
    except Exception:  # its own __str__ failed
        said = "(its message could not be read)"
    return _short(f"{type(e).__name__}: {said}" if said else type(e).__name__)


def failure_text(game: Game, seat: int, what: str, when: str = "whenever it fails") -> str:
    """What the person is told, once, of an opponent whose policy fails."""
    cog = game.aliases[seat]
    return (f"Note: {cog}'s policy ({game.config.players[seat]}) {what}; {cog} waits {when}, "
            "and the game goes on.")


def fallback_text(game: Game, seat: int, policy: Any) -> str:
    """What the person is told, once, of an opponent whose own fallback played for it (its
    first failure when the policy tells it, as ``llm:`` seats do)."""
    cog = game.aliases[seat]
    first = getattr(policy, "first_failure", None)
    why = f" ({_short(first)})" if isinstance(first, str) and first.strip() else ""
    return (f"Note: {cog}'s policy ({game.config.players[seat]}) did not decide this turn"
            f"{why}; its fallback{_fallback_name(policy)} played for it, as it will whenever "
            "the policy does not decide (counted at the end).")


def _short(text: str) -> str:
    """``text`` on one line, at most :data:`MAX_WHY` characters."""
    text = " ".join(text.split())
    return text if len(text) <= MAX_WHY else text[:MAX_WHY - 3] + "..."


def check_streams() -> None:
    """``LeagueError`` (one line) when the game could not be played: standard input or output
    was closed when the command started (``<&-``, ``>&-``; Python then holds None for it)."""
    if sys.stdin is None:
        raise LeagueError("standard input is closed; the game reads your sentences from it")
    if sys.stdout is None:
        raise LeagueError("standard output is closed; the game is shown there")


def show_note(text: str) -> None:
    """Print a note (prose, one paragraph) wrapped to the terminal's width."""
    show(textwrap.fill(text, screen_width(), break_long_words=False, break_on_hyphens=False))


def show(text: str) -> None:
    """Print ``text`` inert (:func:`play_text.inert`): what seats say and people type may hold
    terminal escape sequences."""
    _write(inert(text) + "\n")


def _write(text: str) -> None:
    """Write ``text`` to standard output now; ``LeagueError`` (one line) when it cannot be
    written (opened for reading only: ``1</dev/null``).  A reader that left (a broken pipe)
    is the command line's own exit."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        with contextlib.suppress(OSError, ValueError):  # the exit's flush must not fail again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise LeagueError(f"cannot write to standard output ({e.strerror or e})") from None


def screen_width() -> int:
    """The terminal's width, from ``MIN_WIDTH`` to ``WIDTH`` columns (``WIDTH`` when the
    output is not a terminal), read each turn: the window may have been resized.  Asked of
    the terminal itself, not of ``$COLUMNS``, which may be stale (readline exports the width
    it saw when it started)."""
    try:
        columns = os.get_terminal_size(sys.stdout.fileno()).columns
    except (AttributeError, ValueError, OSError):  # a pipe or a file: no width of its own
        return WIDTH
    return max(MIN_WIDTH, min(WIDTH, columns)) if columns > 0 else WIDTH


def choose(game: Game, seat: int, width: int = WIDTH) -> Line | None:
    """Read lines until one is a move the town can use (None for ``quit``); raises
    ``EOFError`` at the end of input."""
    while True:
        reply = respond(game, seat, read_line(), width)
        if reply.show:
            show(reply.show)
        if reply.quit:
            return None
        if reply.move is not None:
            return reply.move


def read_line() -> str:
    """One line from the person.  Piped input is echoed, as a terminal would show it (its
    first :data:`MAX_ECHO` characters), and read :data:`MAX_LINE` characters at most: a longer
    line is skipped, said so, and read as an empty one (the turn is asked again)."""
    try:
        if sys.stdin.isatty():
            return input(PROMPT)
        _write(PROMPT)
        text = sys.stdin.readline(MAX_LINE + 1)
        if not text:
            raise EOFError
        if len(text) > MAX_LINE and not text.endswith("\n"):
            while (more := sys.stdin.readline(MAX_LINE)) and not more.endswith("\n"):
                pass
            show(f"{text[:MAX_ECHO]}...")
            show(f"Not read: the line is over {MAX_LINE:,} characters; write one sentence.")
            return ""
    except OSError as e:  # opened for writing only (0>/dev/null): no line can ever come
        if isinstance(e, BrokenPipeError):
            raise
        raise LeagueError(f"cannot read standard input ({e.strerror or e})") from None
    text = text.removesuffix("\n")
    show(text if len(text) <= MAX_ECHO else f"{text[:MAX_ECHO]}... ({len(text):,} characters)")
    return text


def tolerate_bad_bytes() -> None:
    """Read bytes that are not text (a stray key, a binary pipe) as U+FFFD: such a line is one
    the town cannot use, said so and asked again, instead of a traceback that ends the game.
    And write what the output's encoding cannot hold (a typed é under ``PYTHONIOENCODING=
    ascii``) as ``\\xe9``, not a traceback."""
    for stream, errors in ((sys.stdin, "replace"), (sys.stdout, "backslashreplace")):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            reconfigure(errors=errors)


def town_text(game: Game, seat: int) -> str:
    """The full text view of the seat (``town``): what a language-model seat reads, and the
    environments' ``render_mode="ansi"``, with the map and the room's whole log."""
    return game.observation_text(seat)


def results_text(game: Game, why: str) -> str:
    """The results table (scores to three places, which is exact: scores are k/40)."""
    r = game.results()
    out = [f"RESULTS after {r['turns']} of {r['maxTurns']} turns: {why}.",
           f"{'seat':>4}  {'cog':<9} {'player':<10} {'score':>7} {'coin':>5} {'wealth':>6} "
           f"{'points':>6} {'delivered':>9} {'robberies':>9} {'robbed':>6}"]
    for s in range(SEATS):
        out.append(f"{s:>4}  {game.aliases[s]:<9} {r['names'][s]:<10} {r['scores'][s]:>+7.3f} "
                   f"{r['coin'][s]:>5} {r['wealth'][s]:>6} {r['questPoints'][s]:>6} "
                   f"{r['delivered'][s]:>9} {r['robberies'][s]:>9} {r['robbed'][s]:>6}")
    return "\n".join(out)


def check_replay_path(path: Path | str) -> None:
    """``LeagueError`` when ``--replay`` cannot be written, or would replace a file that is
    not a replay (a person's notes, a link, a device), said before the person plays."""
    if str(path) == "":  # Path("") is ".": the game would be played, and no replay saved
        raise LeagueError("--replay is empty; give the replay's file name")
    if "\0" in str(path):
        raise LeagueError("--replay: a path cannot hold a NUL character")
    path = Path(path)
    if path.is_dir():
        raise LeagueError(f"--replay {path} is a directory; give the replay's file name")
    parent = path.parent
    if not parent.is_dir():
        raise LeagueError(f"--replay {path}: there is no folder {parent}")
    if not os.access(parent, os.W_OK):
        raise LeagueError(f"--replay {path}: the folder {parent} is not writable")
    check_replaceable(path, _is_replay, "a replay", "--replay")


def _is_replay(head: bytes) -> bool:
    """Whether ``head``, the start of a file, is that of a replay (its protocol comes first)."""
    return REPLAY_HEAD.match(head) is not None


def save_replay(game: Game, names: list[str], path: Path, world: str | None = None) -> None:
    """Write the episode's replay payload (RULES §15.5) for ``guild view``, atomically: an
    interruption leaves the old file or the whole replay.  The path is checked again (the game
    took a while: a file made there meanwhile is kept, as before the game)."""
    check_replaceable(path, _is_replay, "a replay", "--replay")
    try:
        write_atomic(path, json.dumps(game.replay_payload(names)))
    except OSError as e:
        raise LeagueError(f"cannot write {path} ({e.strerror or e})") from None
    view = f"guild view {path}" if world is None else f"guild view --world {world} {path}"
    show(f"play: replay saved to {path} (watch it with: {view})")
