"""``guild play`` (and its neighbours) against a hostile review: an ``exec:`` opponent keeps its
process for the whole game, an opponent's ``sys.exit`` or ``KeyboardInterrupt`` ends only its
own turn, an opponent played by its fallback is said so, closed or ASCII-only standard streams
are one line, a bar inside quoted speech is spoken, the text follows the terminal's width, the
guide's score is the printed one, empty and league-owned paths are refused, and piped input is
echoed and read bounded."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs_module
from scenario import played_game

from league.cli import play_text, terminal
from league.cli.guild import main
from league.core.errors import LeagueError
from sim import Game, GameConfig

ROOT = Path(__file__).resolve().parents[1]
TURNS = 6

PID_BOT = '''
import json, os, sys

for line in sys.stdin:
    request = json.loads(line)
    if request["type"] == "act":
        with open(sys.argv[1], "a") as f:
            f.write(f"{os.getpid()}\\n")
        print(json.dumps({"action": "I wait."}), flush=True)
    else:
        print("{}", flush=True)
'''

EXITS = '''
import sys

from agents import Decision


class ActExit:
    def act(self, game, seat):
        sys.exit(4)


class ResetExit:
    def reset(self, seed):
        sys.exit("bye")

    def act(self, game, seat):
        return "I wait."


class ActInterrupt:
    def act(self, game, seat):
        raise KeyboardInterrupt


class ResetInterrupt:
    def reset(self, seed):
        raise KeyboardInterrupt

    def act(self, game, seat):
        return "I wait."


class ModelDown:
    """As an llm: seat whose server is down: its fallback (factor's wait here) decides."""

    fallback = "factor"
    first_failure = "request failed: ConnectError: [Errno 111] Connection refused"

    def act(self, game, seat):
        return Decision("I wait.", scripted=True)


class Baseline:
    """A scripted policy: its acts are marked scripted and are its own, no fallback's."""

    scripted = True

    def act(self, game, seat):
        return Decision("I wait.", scripted=True)
'''


def play_in_process(monkeypatch, capsys, tmp_path: Path, *args: str, typed: str
                    ) -> tuple[int, str, str]:
    """``guild play`` in this process with ``typed`` as its input and the policies of
    :data:`EXITS` importable as ``exits:Name``; the exit code, stdout and stderr."""
    (tmp_path / "exits.py").write_text(EXITS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "stdin", io.StringIO(typed))
    code = main(["play", "--seed", "3", "--turns", str(TURNS), *args])
    got = capsys.readouterr()
    return code, got.out, got.err


# --- 1. an exec: opponent keeps its process -------------------------------------------------

def test_an_exec_opponent_plays_the_whole_game_in_one_process(tmp_path: Path) -> None:
    """Each turn's opponents were asked in a thread of their own, and an exec: seat's process
    dies with the thread that started it: it was killed at each turn's end and restarted,
    losing turns ("exited (killed by signal 9)").  Fast typed input, one pid for the game."""
    (tmp_path / "bot.py").write_text(PID_BOT, encoding="utf-8")
    pids = tmp_path / "pids.txt"
    bot = f"exec:{sys.executable} {tmp_path / 'bot.py'} {pids}"
    done = subprocess.run(
        [sys.executable, "-m", "league", "play", "--seed", "3", "--turns", str(TURNS),
         "--opponents", f"factor,magpie,factor,magpie,{bot}"],
        input="I wait\n" * TURNS, capture_output=True, text=True, cwd=str(ROOT), timeout=120,
        check=False)
    assert done.returncode == 0, done.stderr[-500:]
    assert "Note:" not in done.stdout, done.stdout
    assert f"RESULTS after {TURNS} of {TURNS} turns: the episode ended" in done.stdout
    asked = pids.read_text().split()
    assert len(asked) == TURNS and len(set(asked)) == 1, asked


def test_the_opponents_are_asked_on_the_same_threads_all_game(monkeypatch) -> None:
    """The seats asked one at a time share one thread, a concurrent seat has its own, and
    neither changes from the reset to the last turn."""
    import threading

    seen: dict[int, set[int]] = {}

    class Where:
        def __init__(self, concurrent: bool) -> None:
            self.concurrent = concurrent

        def reset(self, seed: int) -> None:
            self.act(None, -1)

        def act(self, game, seat):
            seen.setdefault(id(self), set()).add(threading.get_ident())
            return "I wait."

    monkeypatch.setattr(terminal, "read_line", lambda: "I wait")
    policies = [None, Where(False), Where(False), Where(True), Where(True), Where(False)]
    game = Game(GameConfig(seed=3, turns=TURNS))
    opponents = terminal.Opponents(0, policies)
    try:
        assert terminal.reset_all(policies, 3, opponents) == {}
        code, _ = terminal.play(game, 0, policies, opponents)
    finally:
        opponents.close()
    assert code == 0 and game.done
    threads = {k: next(iter(v)) for k, v in seen.items() if len(v) == 1}
    assert len(threads) == 5, seen  # one thread each, all game
    ident = [threads[id(p)] for p in policies[1:]]
    assert ident[0] == ident[1] == ident[4]
    assert len({ident[0], ident[2], ident[3]}) == 3
    assert threading.main_thread().ident not in ident


# --- 2. sys.exit and KeyboardInterrupt of an opponent -----------------------------------------

@pytest.mark.parametrize("policy, why, when", [
    ("ActExit", "failed (SystemExit: 4)", "whenever it fails"),
    ("ActInterrupt", "failed (KeyboardInterrupt)", "whenever it fails"),
    ("ResetExit", "could not be reset (SystemExit: bye)", "every turn"),
    ("ResetInterrupt", "could not be reset (KeyboardInterrupt)", "every turn"),
])
def test_an_opponents_exit_or_interrupt_is_its_failure_not_the_games_end(
        monkeypatch, capsys, tmp_path: Path, policy: str, why: str, when: str) -> None:
    """sys.exit(4) in an opponent's act ended the game with exit 4, sys.exit("bye") in its
    reset with exit 1, and neither printed results nor saved the replay."""
    replay = tmp_path / "r.json"
    code, out, err = play_in_process(
        monkeypatch, capsys, tmp_path, "--opponents", f"exits:{policy},factor",
        "--replay", str(replay), typed="I wait\nI wait\nquit\n")
    assert code == 0, err
    out = " ".join(out.split())  # the notes' words, unwrapped
    game = Game(GameConfig(seed=3))
    cog = game.aliases[1]
    assert out.count(f"Note: {cog}'s policy (exits:{policy}) {why}; {cog} waits {when}") == 1
    assert "RESULTS after 2 of 6 turns: you quit." in out
    assert json.loads(replay.read_text())["policyNames"][1] == f"exits:{policy}"


def test_a_ctrl_c_in_the_main_thread_is_the_persons() -> None:
    """A KeyboardInterrupt raised on a worker thread is the policy's; in the main thread (a
    reset asked there) it may be the person's Ctrl-C, and is not swallowed."""
    class Interrupted:
        def reset(self, seed: int) -> None:
            raise KeyboardInterrupt

        def act(self, game, seat):
            return "I wait."

    policies = [None, Interrupted(), *(Interrupted() for _ in range(4))]
    with pytest.raises(KeyboardInterrupt):
        terminal.reset_all(policies, 1)
    opponents = terminal.Opponents(0, policies)
    try:
        broken = terminal.reset_all(policies, 1, opponents)
    finally:
        opponents.close()
    assert broken == {s: "KeyboardInterrupt" for s in range(1, 6)}
    assert all(isinstance(p, terminal.Waiting) for p in policies[1:])


# --- 3. an opponent played by its own fallback ------------------------------------------------

def test_an_opponent_whose_fallback_decides_is_told_once_and_counted(
        monkeypatch, capsys, tmp_path: Path) -> None:
    """An llm: seat whose server is down was played by factor all game, and nothing said so."""
    code, out, err = play_in_process(
        monkeypatch, capsys, tmp_path, "--opponents", "exits:ModelDown,exits:Baseline",
        typed="I wait\nI wait\nI wait\nquit\n")
    assert code == 0, err
    out = " ".join(out.split())  # the notes' words, unwrapped
    game = Game(GameConfig(seed=3))
    down = [game.aliases[s] for s in (1, 3, 5)]
    for cog in down:
        assert out.count(f"Note: {cog}'s policy (exits:ModelDown) did not decide this turn "
                         "(request failed: ConnectError: [Errno 111] Connection refused); its "
                         "fallback (factor) played for it") == 1
        assert (f"{cog}'s fallback (factor) played 3 of its 3 decisions (100%), not its "
                "policy (exits:ModelDown).") in out.split("RESULTS after", 1)[1]
    for s in (2, 4):  # a scripted policy's scripted acts are its own
        assert f"{game.aliases[s]}'s fallback" not in out
        assert f"Note: {game.aliases[s]}'s" not in out


def test_a_note_is_wrapped_to_the_terminals_width(monkeypatch, capsys) -> None:
    """The notes ran to 330 characters on a terminal of 80 columns, where the turn is wrapped."""
    monkeypatch.setattr(terminal, "screen_width", lambda: 40)
    game = Game(GameConfig(seed=3, players=["you", *["factor"] * 5]))
    terminal.show_note(terminal.failure_text(game, 1, "failed (" + "x " * 150 + ")"))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 5 and max(map(len, lines)) <= 40
    assert " ".join(lines).startswith(f"Note: {game.aliases[1]}'s policy")


# --- 4. closed and narrow standard streams ----------------------------------------------------

@pytest.mark.parametrize("redirect, error", [
    (">&- </dev/null", "standard output is closed; the game is shown there"),
    ("<&- >/dev/null", "standard input is closed; the game reads your sentences from it"),
    ("1</dev/null </dev/null", "cannot write to standard output (Bad file descriptor)"),
    ("0>/dev/null >/dev/null", "cannot read standard input (Bad file descriptor)"),
])
def test_a_closed_or_unusable_standard_stream_is_one_line(redirect: str, error: str) -> None:
    """They ended in tracebacks: input() lost sys.stdout (or sys.stdin), or an OSError."""
    done = subprocess.run(
        ["sh", "-c", f"exec {sys.executable} -m league play --seed 1 --turns 6 {redirect}"],
        capture_output=True, text=True, cwd=str(ROOT), timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert done.stderr.splitlines()[-1] == f"guild play: error: {error}"


def test_view_to_a_closed_standard_output_is_one_line(tmp_path: Path) -> None:
    game = played_game(2, 3, TURNS, True)
    replay = tmp_path / "r.json"
    replay.write_text(json.dumps(game.replay_payload()),
                      encoding="utf-8")
    for redirect, error in ((">&-", "standard output is closed"),
                            ("1</dev/null", "cannot write to standard output")):
        done = subprocess.run(
            ["sh", "-c", f"exec {sys.executable} -m league view {replay} -o - {redirect}"],
            capture_output=True, text=True, cwd=str(ROOT), timeout=120, check=False)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
        assert done.stderr.splitlines()[-1].startswith(f"guild view: error: -o -: {error}")


def test_an_ascii_only_terminal_shows_what_it_cannot_encode_escaped() -> None:
    """A typed é (and the U+FFFD it reads as under ASCII) ended the game in a
    UnicodeEncodeError."""
    done = subprocess.run(
        [sys.executable, "-m", "league", "play", "--seed", "1", "--turns", "6"],
        input='I say "caf\u00e9"\nquit\n'.encode(), capture_output=True, cwd=str(ROOT),
        timeout=120, check=False, env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr.decode()[-500:]
    out = done.stdout.decode("ascii")  # nothing but ASCII was written
    assert 'I say "caf\\ufffd\\ufffd"' in out
    assert "RESULTS after 1 of 6 turns: you quit." in out


# --- 5. a bar inside quoted speech ------------------------------------------------------------

def test_a_bar_splits_the_line_only_outside_the_quoted_part() -> None:
    """The first pair of quote marks is the spoken part (SENTENCES §4): a bar in it is said; a
    bar before or after it, or with an unterminated quote, still ends the sentence."""
    cases = {
        'I say "meet me | at the docks"': terminal.Line(
            sentence='I say "meet me | at the docks"'),
        "I say \u201cmeet me | at the docks\u201d": terminal.Line(
            sentence="I say \u201cmeet me | at the docks\u201d"),
        'I walk to the docks "see | you" | say bye': terminal.Line(
            sentence='I walk to the docks "see | you"', say="bye"),
        'I wait | say "a | b"': terminal.Line(sentence="I wait", say="a | b"),
        'I say "unterminated | speech': terminal.Line(sentence='I say "unterminated',
                                                      say="speech"),
        '7 "x" | hi': terminal.Line(sentence='7 "x"', say="hi"),
    }
    assert {text: terminal.parse_line(text) for text in cases} == cases


def test_a_bar_inside_quotes_is_spoken() -> None:
    """It was played as the sentence 'I say "meet me' with the say 'at the docks"'."""
    game = Game(GameConfig(seed=5, turns=TURNS))
    reply = terminal.respond(game, 0, 'I say "meet me | at the docks"')
    assert reply.move is not None
    policies = [None, *(terminal.Waiting() for _ in range(5))]
    assert terminal.play_turn(game, 0, reply.move, policies) == {}
    assert game.observe(0)["heard"] == [f'{game.aliases[0]} says: "meet me | at the docks"']


# --- 6. the terminal's width ------------------------------------------------------------------

@pytest.mark.parametrize("columns, width", [(60, 60), (20, 40), (300, 100)])
def test_the_width_is_the_terminals_within_bounds(monkeypatch, columns: int, width: int
                                                  ) -> None:
    class Screen(io.StringIO):
        def fileno(self) -> int:
            return 1

    monkeypatch.setattr(sys, "stdout", Screen())
    monkeypatch.setattr(terminal.os, "get_terminal_size",
                        lambda fd: os.terminal_size((columns, 24)))
    assert terminal.screen_width() == width


def test_output_not_to_a_terminal_is_the_widest(monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.setenv("COLUMNS", "50")  # readline's, maybe stale: the terminal is asked
    assert terminal.screen_width() == play_text.WIDTH


def test_a_narrow_terminal_gets_the_turn_and_the_moves_its_width() -> None:
    """The text was wrapped at 100 columns whatever the terminal's width."""
    pexpect = needs_module("pexpect", "'guild-game[dev]'")
    child = pexpect.spawn(sys.executable, ["-m", "league", "play", "--seed", "11", "--turns",
                                           "6", "--seat", "2"], cwd=str(ROOT),
                          encoding="utf-8", timeout=60, dimensions=(50, 60))
    prompt = re.escape(terminal.PROMPT)
    child.expect(prompt)
    first = child.before.replace("\r\n", "\n")
    child.sendline("moves")
    child.expect(prompt)
    listed = child.before.replace("\r\n", "\n")
    child.sendline("quit")
    child.expect(pexpect.EOF)
    child.close()
    names = terminal.lineup(2, terminal.opponent_specs(terminal.DEFAULT_OPPONENTS))
    game = Game(GameConfig(seed=11, turns=6, players=tuple(names)))
    turn = play_text.turn_text(game.observe(2), None, game.world, 60)
    assert turn in first and turn != play_text.turn_text(game.observe(2), None, game.world)
    assert terminal.RULE[:60] + "\n" in first and terminal.RULE not in first
    assert max(map(len, turn.splitlines())) <= 60
    legal = play_text.legal_moves(game, 2)
    moves = play_text.moves_text(legal, 60)
    assert moves in listed and moves != play_text.moves_text(legal)


# --- 7. the guide's score ---------------------------------------------------------------------

def test_the_guides_score_is_the_one_results_prints() -> None:
    """It said coin + goods + 3 x points "from 40 coin", not divided by 40."""
    text = play_text.guide_text()
    assert "Score (as RESULTS prints it): (wealth + 3 x commission points - 40) / 40" in text
    assert "from 40 coin" not in text
    r = played_game(7, 10, 14, True).results()
    for s in range(6):
        assert r["scores"][s] == (r["wealth"][s] + 3 * r["questPoints"][s] - 40) / 40


# --- 8. empty paths ---------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["play", "--world", ""], ["evaluate", "factor", "--world", ""],
    ["view", "--world", "", "r.json"],
])
def test_an_empty_world_is_refused_by_name(argv: list[str], capsys, tmp_path: Path) -> None:
    """It was "bad world file: .: not a regular file" (or, for view, the standard town)."""
    if argv[0] == "view":
        game = played_game(2, 2, TURNS, True)
        (tmp_path / "r.json").write_text(json.dumps(game.replay_payload()))
        argv = [*argv[:-1], str(tmp_path / "r.json")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"guild {argv[0]}: error: --world is empty; give a world file's name"


# --- 9. export-sft into a league's own folders ------------------------------------------------

@pytest.fixture(scope="module")
def small_league(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sft") / "lg"
    assert main(["league", "--policies", "factor,magpie", "--episodes", "6", "--turns", "6",
                 "--workers", "1", "--seed", "2", "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("where", ["replays", "replays/sub", "view", "link"])
def test_export_sft_refuses_a_leagues_own_folders(small_league: Path, tmp_path: Path,
                                                  capsys, where: str) -> None:
    """--out LEAGUE/replays wrote train.jsonl and the rest among the league's replays."""
    if where == "link":
        out = tmp_path / "elsewhere"
        out.symlink_to(small_league / "replays")
    else:
        out = small_league / where
    before = sorted(p.name for p in (small_league / "replays").iterdir())
    assert main(["export-sft", str(small_league), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"guild export-sft: error: --out {out}: ") and "league's own" in err
    assert sorted(p.name for p in (small_league / "replays").iterdir()) == before
    assert not (small_league / "view").exists() and not (small_league / "replays/sub").exists()


def test_check_outside_tells_inside_from_beside(tmp_path: Path) -> None:
    from league.core.files import check_outside

    folder = tmp_path / "lg" / "replays"
    folder.mkdir(parents=True)
    for inside in (folder, folder / "a", folder / "a" / "b", tmp_path / "lg" / "x" / ".."
                   / "replays"):
        with pytest.raises(LeagueError, match="holds the league's own files"):
            check_outside(inside, [folder], "--out")
    for beside in (tmp_path / "lg", tmp_path / "lg" / "replays2", tmp_path / "lg" / "sft"):
        check_outside(beside, [folder], "--out")


# --- 10. piped input: the echo and the read are bounded ---------------------------------------

def test_a_huge_piped_line_is_echoed_cut(monkeypatch, capsys, tmp_path: Path) -> None:
    """Four 1 MB lines were echoed whole: 4 MB of output."""
    code, out, _ = play_in_process(monkeypatch, capsys, tmp_path,
                                   typed=("y" * 1_000_000 + "\n") * 4 + "quit\n")
    assert code == 0
    assert len(out) < 50_000
    assert out.count("y" * terminal.MAX_ECHO + "... (1,000,000 characters)") == 4
    assert "y" * (terminal.MAX_ECHO + 1) not in out


def test_a_line_longer_than_read_is_skipped_unread(monkeypatch, capsys, tmp_path: Path) -> None:
    """A piped line with no end was read whole into memory; over MAX_LINE characters it is
    skipped (its end too, which is not taken for the next line) and the turn asked again."""
    monkeypatch.setattr(terminal, "MAX_LINE", 1000)
    code, out, _ = play_in_process(monkeypatch, capsys, tmp_path,
                                   typed="z" * 5000 + " I wait\nI wait\nquit\n")
    assert code == 0
    assert out.count("Not read: the line is over 1,000 characters; write one sentence.") == 1
    assert "RESULTS after 1 of 6 turns: you quit." in out
    assert "z" * (terminal.MAX_ECHO + 1) not in out and "Not played" not in out
