"""``guild play``: a person plays one seat in the terminal against five policies.

People learn the game by playing it.  Each turn shows a compact view (``play_text.turn_text``:
what changed since the seat last chose, the room and its shop, the purse, pack and
commissions, the turns left) and reads one line.  What a line may be (:func:`parse_line`):

* a sentence, as any player writes it: ``I buy 2 rope from Smith Bram``.  A quoted part is
  spoken aloud by the town's own rules: ``I walk to the docks "see you there"``;
* a sentence, a bar, and a line to say: ``I walk to the docks | say "see you there"`` (the
  ``say`` and the quotes are optional: ``... | see you there``);
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
An opponent whose policy raises or answers what the rules refuse waits that turn, as a
league's fallback does, and the person is told once.
Everything printed goes through :func:`show`: what seats say and people type may hold terminal
escape sequences, which are shown, never obeyed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agents import Decision, as_decision, is_scripted, make_policy
from agents.baselines.rules import WAIT
from league.apart.sb3_load import guard
from league.cli.html_viewer import PROTOCOL
from league.cli.play_text import (
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
    sentence, bar, said = stripped.partition("|")
    if not bar:
        return _picked(Line(sentence=stripped))
    said = said.strip()
    if said.lower().startswith("say ") or said.lower() == "say":
        said = said[3:].strip()
    if len(said) >= 2 and said[0] == said[-1] == '"':
        said = said[1:-1].strip()
    return _picked(Line(sentence=sentence.strip(), say=said))


def _picked(line: Line) -> Line:
    """A move whose sentence is a number is the pick of that listed sentence."""
    text = line.sentence.strip()
    if _NUMBER.fullmatch(text):
        return replace(line, sentence="", pick=int(text))
    return line


def respond(game: Game, seat: int, text: str) -> Reply:
    """What to do with one typed line this turn; reads the game, never changes it.

    A move comes back only when the town can use it (``play_text.judge``): a number plays the
    listed sentence (shown, so the person sees what was played); a sentence is played as
    typed.  Anything else is a reply to print before asking again.
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
        return Reply(moves_text(moves))
    if line.pick is not None:
        if not 1 <= line.pick <= len(moves):
            return Reply(f"There is no sentence {line.pick} this turn: they are numbered 1 to "
                         f"{len(moves)} (type moves to list them).")
        sentence = moves[line.pick - 1].sentence
        return Reply(f"You: {sentence}", replace(line, sentence=sentence, pick=None))
    verdict = judge(game, seat, line.sentence)
    if verdict.why:
        picks = suggestions(line.sentence, moves, verdict.kind)
        return Reply(refusal_text(verdict.why, picks, moves))
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
                   help="also save the episode as a replay (for guild view) when it ends")
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
    broken = reset_all(policies, seed)
    tolerate_bad_bytes()
    me = game.aliases[args.seat]
    rivals = ", ".join(f"{game.aliases[s]} ({n})" for s, n in enumerate(names) if s != args.seat)
    town = "" if args.world is None else f", the town of {args.world}"
    show(f"The guild game: seed {seed}, {turns} turns{town}. You are {me} (seat {args.seat}) "
         f"against {rivals}.")
    show("Type help for how to write a sentence, moves for this turn's legal ones.")
    for s, why in broken.items():
        show(failure_text(game, s, f"could not be reset ({why})", "every turn"))
    try:
        code, why = play(game, args.seat, policies)
    except KeyboardInterrupt:
        print(flush=True)
        code, why = 130, "interrupted"
    show(results_text(game, why))
    if args.replay is not None:
        save_replay(game, names, Path(args.replay), args.world)
    return code


def play(game: Game, seat: int, policies: list) -> tuple[int, str]:
    """The turn loop; returns the exit code and why the game stopped."""
    before: Mapping | None = None  # the seat's view when it last chose
    told: set[int] = set()  # seats whose failing policy the person has been told of
    while not game.done:
        view = game.observe(seat)
        show(RULE)
        show(turn_text(view, before, game.world))
        deciding = Deciding(game, seat, policies)  # while the person reads and types
        try:
            try:
                line = choose(game, seat)
            except EOFError:
                print(flush=True)
                return 0, "you left (end of input)"
            if line is None:
                return 0, "you quit"
            answers = deciding.answers()
        finally:  # the person leaves (or has the answers): no seat thinks here any more
            deciding.settle()
        before = view
        for s, why in play_turn(game, seat, line, policies, answers).items():
            if s not in told:
                told.add(s)
                show(failure_text(game, s, f"failed ({why})"))
    show(RULE)
    show("\n".join(last_sentence(game.observe(seat))))
    return 0, f"the episode ended ({game.results()['reason']})"


class Deciding:
    """The opponents' answers to this turn, asked in the background as soon as the turn
    opens: every seat acts on the state at the turn's start (RULES §6), so they need not wait
    for the person's move, and the person waits for the slowest seat, if at all, not for each
    in turn. Seats that may run at once (``concurrent``, language-model seats) get a thread
    each. The threads are daemons: a person who leaves mid-turn waits for the seat that is
    thinking in the background thread, if any, but asks none after it and does not wait for
    the concurrent seats (:meth:`settle`)."""

    def __init__(self, game: Game, seat: int, policies: list) -> None:
        self._got: dict[int, tuple[Any, BaseException | None]] = {}
        self._leaving = threading.Event()  # the person left: ask no more seats here
        self._here = threading.Event()  # no seat is thinking in this thread any more
        self._thread = threading.Thread(target=self._all, args=(game, seat, policies),
                                        name="guild-play-seats", daemon=True)
        self._thread.start()

    def _all(self, game: Game, seat: int, policies: list) -> None:
        others = [s for s in range(len(policies)) if s != seat]
        apart = [threading.Thread(target=self._one, args=(game, s, policies[s]), daemon=True)
                 for s in others if getattr(policies[s], "concurrent", False)]
        for t in apart:
            t.start()
        try:
            for s in others:
                if self._leaving.is_set():
                    break
                if not getattr(policies[s], "concurrent", False):
                    self._one(game, s, policies[s])
        finally:
            self._here.set()
        for t in apart:
            t.join()

    def _one(self, game: Game, s: int, policy: Any) -> None:
        try:
            self._got[s] = (policy.act(game, s), None)
        except BaseException as e:  # noqa: BLE001 - a policy's failure, even sys.exit: it waits
            self._got[s] = (None, e)

    def answers(self) -> dict[int, tuple[Any, BaseException | None]]:
        """Each opponent's answer, or what it raised; says once that the person waits for
        them when they take a while."""
        self._thread.join(WAIT_NOTE_AFTER)
        if self._thread.is_alive():
            show("(the other seats are still deciding...)")
            self._thread.join()
        return self._got

    def settle(self) -> None:
        """Ask no more seats, and wait for the one thinking in the background thread to
        answer, as a person who leaves mid-turn must: the process may not exit while a policy
        runs in native code with the interpreter's lock released (a network's forward pass in
        torch).  The interpreter's exit would stop that thread where it takes the lock back,
        unwinding through C++ frames that may not be unwound, and the process would abort
        ("terminate called without an active exception", exit 134) instead of ending with its
        status.  The concurrent seats (a language model's request, waiting on the network in
        Python) are left to the exit, and so is a seat still thinking after
        :data:`SETTLE_LIMIT` seconds: a policy that never answers must not keep the person in
        the game (Ctrl-C leaves at once)."""
        self._leaving.set()
        if not self._here.wait(WAIT_NOTE_AFTER):
            show(f"(waiting up to {SETTLE_LIMIT:g} s for an opponent to finish thinking; "
                 "Ctrl-C leaves now)")
            self._here.wait(SETTLE_LIMIT)


def play_turn(game: Game, seat: int, line: Line, policies: list,
              decided: Mapping[int, tuple[Any, BaseException | None]] | None = None
              ) -> dict[int, str]:
    """One turn: the person's move and each opponent's answer (a sentence, an intent or a
    decision with its spoken line and notes, as ``agents.play_episode`` takes it), asked here
    unless ``decided`` holds them (:class:`Deciding`).  An opponent whose policy raises or
    answers what the rules refuse waits instead (marked scripted, as a league's fallback is),
    so the person's game goes on; the seats that did, with why."""
    failed: dict[int, str] = {}
    answers: list[Decision | None] = []
    for s, p in enumerate(policies):
        if s == seat:
            answers.append(None)
            continue
        try:
            if decided is None:
                answer = as_decision(p.act(game, s))
            else:
                got, error = decided.get(s, (None, RuntimeError("it gave no answer")))
                if error is not None:
                    raise error
                answer = as_decision(got)
            game.intent_for(answer.action, s)  # the rules' own check of an action
            if not (isinstance(answer.say, str) and isinstance(answer.notes, str)):
                raise TypeError("its say and notes must be text")
        except Exception as e:
            failed[s] = _why(e)
            answer = Decision(WAIT, scripted=True)
        answers.append(answer)
    actions = [line.sentence if a is None else a.action for a in answers]
    says = [line.say if a is None else a.say for a in answers]
    notes = [line.notes if a is None else a.notes for a in answers]
    scripted = [a is not None and (is_scripted(p) or a.scripted)
                for a, p in zip(answers, policies)]
    game.play_turn(actions, says=says, notes=notes, scripted=scripted)
    return failed


def reset_all(policies: list, seed: int) -> dict[int, str]:
    """Reset each opponent's policy; one whose reset raises waits all game (a league's seat
    whose reset fails falls back too): the seats that did, with why."""
    broken: dict[int, str] = {}
    for s, p in enumerate(policies):
        if p is not None and callable(getattr(p, "reset", None)):
            try:
                p.reset(seed)
            except Exception as e:
                broken[s] = _why(e)
                policies[s] = Waiting()
    return broken


class Waiting:
    """Stands in for an opponent whose policy could not start: it waits every turn."""

    scripted = True

    def act(self, game: Game, seat: int) -> str:
        return WAIT


def _why(e: BaseException) -> str:
    """An opponent's error in one short line (its text shown inert by :func:`show`)."""
    text = " ".join(f"{type(e).__name__}: {e}".split())
    return text if len(text) <= MAX_WHY else text[:MAX_WHY - 3] + "..."


def failure_text(game: Game, seat: int, what: str, when: str = "whenever it fails") -> str:
    """What the person is told, once, of an opponent whose policy fails."""
    cog = game.aliases[seat]
    return (f"Note: {cog}'s policy ({game.config.players[seat]}) {what}; {cog} waits {when}, "
            "and the game goes on.")


def show(text: str) -> None:
    """Print ``text`` inert (:func:`play_text.inert`): what seats say and people type may hold
    terminal escape sequences."""
    print(inert(text), flush=True)


def choose(game: Game, seat: int) -> Line | None:
    """Read lines until one is a move the town can use (None for ``quit``); raises
    ``EOFError`` at the end of input."""
    while True:
        reply = respond(game, seat, read_line())
        if reply.show:
            show(reply.show)
        if reply.quit:
            return None
        if reply.move is not None:
            return reply.move


def read_line() -> str:
    """One line from the person; piped input is echoed, as a terminal would show it."""
    text = input(PROMPT)
    if not sys.stdin.isatty():
        show(text)
    return text


def tolerate_bad_bytes() -> None:
    """Read bytes that are not text (a stray key, a binary pipe) as U+FFFD: such a line is one
    the town cannot use, said so and asked again, instead of a traceback that ends the game."""
    reconfigure = getattr(sys.stdin, "reconfigure", None)
    if callable(reconfigure):
        reconfigure(errors="replace")


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
