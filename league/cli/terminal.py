"""``guild play``: a person plays one seat in the terminal against five policies.

People learn the game by playing it.  Each turn the seat's text view is printed, exactly the
text ``game.observation_text(seat)`` gives (and the environments' ``render_mode="ansi"``), and
one line is read.  What a line may be (:func:`parse_line`):

* a sentence, as any player writes it: ``I buy 2 rope from Smith Bram``.  A quoted part is
  spoken aloud by the town's own rules: ``I walk to the docks "see you there"``;
* a sentence, a bar, and a line to say: ``I walk to the docks | say "see you there"`` (the
  ``say`` and the quotes are optional: ``... | see you there``);
* the JSON object the text view's last line asks for:
  ``{"action": "...", "say": "...", "notes": "..."}``;
* ``help`` (or ``?``) prints this guide; an empty line asks again;
* ``quit`` (or ``exit``, or Ctrl-D) ends the game and prints the results as they stand.

The outcome of a sentence is shown at the start of the next turn (the view's ``YOUR LAST
SENTENCE`` line); after the last turn it is printed before the results.  ``--replay FILE``
saves the episode for ``guild view``.  ``sb3:`` opponents (model zips, which are pickles) are
loaded in a sandbox unless ``--trust`` (``league.apart.sb3_load``).
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path

from agents import is_scripted, make_policy
from league.apart.sb3_load import guard
from league.core.errors import LeagueError
from sim import Game, GameConfig
from sim.language.phrasing import outcome_text
from sim.rules.errors import ConfigError
from sim.rules.world import SEATS

DEFAULT_OPPONENTS = "factor,magpie,factor,magpie,factor"
HUMAN = "you"
PROMPT = "Your sentence> "
RULE = "=" * 78

GUIDE = """\
Write one sentence for your cog, e.g.  I buy 2 rope from Smith Bram
  a quoted part is spoken aloud:       I walk to the docks "see you there"
  or add a line to say after a bar:    I walk to the docks | say "see you there"
  or the JSON the view asks for:       {"action": "I wait", "say": "hello", "notes": "..."}
  help prints this, an empty line asks again; quit (or Ctrl-D) ends the game and
  prints the results."""


@dataclass(frozen=True)
class Line:
    """One line typed by the person: a command (``quit``, ``help``, ``empty``) or a move."""

    command: str = ""          # "quit", "help", "empty" or "" for a move
    sentence: str = ""
    say: str = ""
    notes: str = ""


def parse_line(text: str) -> Line:
    """What a typed line means (see the module docstring); never raises."""
    stripped = text.strip()
    low = stripped.lower()
    if low in ("quit", "exit", "q"):
        return Line("quit")
    if low in ("help", "?", "h"):
        return Line("help")
    if not stripped:
        return Line("empty")
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            def field(key: str) -> str:
                v = obj.get(key, "")
                return v if isinstance(v, str) else ""
            return Line(sentence=field("action"), say=field("say"), notes=field("notes"))
    sentence, bar, said = stripped.partition("|")
    if not bar:
        return Line(sentence=stripped)
    said = said.strip()
    if said.lower().startswith("say ") or said.lower() == "say":
        said = said[3:].strip()
    if len(said) >= 2 and said[0] == said[-1] == '"':
        said = said[1:-1].strip()
    return Line(sentence=sentence.strip(), say=said)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``guild play`` to the ``guild`` command line."""
    p = sub.add_parser(
        "play", help="play one seat yourself in the terminal against five policies",
        description="Play one seat of the guild game in the terminal against five policies.\n"
                    "Each turn shows your seat's text view and reads one line.",
        epilog=GUIDE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seat", type=int, choices=range(SEATS), default=0, metavar="N",
                   help="your seat, 0 to 5 (0); seats differ in start room and initiative")
    p.add_argument("--seed", type=int, default=None, metavar="S",
                   help="the episode's seed (default: a random one, printed at the start)")
    p.add_argument("--opponents", default=DEFAULT_OPPONENTS, metavar="P1,P2,...",
                   help="policies of the other five seats in seat order: factor, magpie, "
                        "random, ppo:MODEL.pt, sb3:MODEL.zip, llm:MODEL@URL or module.path:Name; "
                        "fewer than five are repeated "
                        f"({DEFAULT_OPPONENTS})")
    p.add_argument("--turns", type=int, default=14, metavar="T",
                   help="turns in the episode (14, at least 6)")
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
    try:
        config = GameConfig(seed=seed, turns=args.turns, players=tuple(names))
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
    for p in policies:
        if p is not None and callable(getattr(p, "reset", None)):
            p.reset(seed)
    game = Game(config)
    me = game.aliases[args.seat]
    rivals = ", ".join(f"{game.aliases[s]} ({n})" for s, n in enumerate(names) if s != args.seat)
    print(f"The guild game: seed {seed}, {args.turns} turns. You are {me} (seat {args.seat}) "
          f"against {rivals}.", flush=True)
    print(GUIDE, flush=True)
    try:
        code, why = play(game, args.seat, policies)
    except KeyboardInterrupt:
        print(flush=True)
        code, why = 130, "interrupted"
    print(results_text(game, why), flush=True)
    if args.replay:
        save_replay(game, names, Path(args.replay))
    return code


def play(game: Game, seat: int, policies: list) -> tuple[int, str]:
    """The turn loop; returns the exit code and why the game stopped."""
    scripted = [p is not None and is_scripted(p) for p in policies]
    while not game.done:
        print(RULE, flush=True)
        print(turn_text(game, seat), flush=True)
        try:
            line = ask()
        except EOFError:
            print(flush=True)
            return 0, "you left (end of input)"
        if line.command == "quit":
            return 0, "you quit"
        actions = [line.sentence if s == seat else p.act(game, s)
                   for s, p in enumerate(policies)]
        says = [line.say if s == seat else "" for s in range(SEATS)]
        notes = [line.notes if s == seat else "" for s in range(SEATS)]
        acts = game.play_turn(actions, says=says, notes=notes, scripted=scripted)
        if game.done:
            mine = acts[seat]
            room = game.world.rooms[mine["room"]].name
            print(RULE, flush=True)
            print(f'YOUR LAST SENTENCE: "{mine.get("sentence", "")}" - '
                  f'{outcome_text(mine["reason"], room)}', flush=True)
    return 0, f"the episode ended ({game.results()['reason']})"


def ask() -> Line:
    """Read lines until one is a move or ``quit``; ``help`` and empty lines ask again."""
    while True:
        text = input(PROMPT)
        if not sys.stdin.isatty():  # piped input: echo it, as a terminal would
            print(text, flush=True)
        line = parse_line(text)
        if line.command == "help":
            print(GUIDE, flush=True)
        elif line.command != "empty":
            return line


def turn_text(game: Game, seat: int) -> str:
    """What the terminal shows a seat each turn: the game's own text view of that seat."""
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


def save_replay(game: Game, names: list[str], path: Path) -> None:
    """Write the episode's replay payload (RULES §15.5) for ``guild view``."""
    try:
        path.write_text(json.dumps(game.replay_payload(names)), encoding="utf-8")
    except OSError as e:
        raise LeagueError(f"cannot write {path} ({e.strerror or e})") from None
    print(f"play: replay saved to {path} (watch it with: guild view {path})", flush=True)
