"""``guild play``: a person at a real pseudo-terminal (pexpect) plays, quits, and the printed
results are what the same sentences give when played through ``play_turn`` directly; the
environments' ``render_mode="ansi"`` text is the terminal game's text."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import gymnasium
import pytest
from conftest import needs_module

from agents import is_scripted, make_policy
from league.cli import terminal
from league.cli.guild import main
from sim import Game, GameConfig
from sim.language.phrasing import outcome_text
from sim.rules.world import MAX_TURNS, SEATS

pexpect = needs_module("pexpect", "'guild-game[dev]'")

ROOT = Path(__file__).resolve().parents[1]
PROMPT = re.escape(terminal.PROMPT)


# --- what a typed line means ---------------------------------------------------------------------
@pytest.mark.parametrize("text, want", [
    ("I buy 2 rope from Smith Bram", terminal.Line(sentence="I buy 2 rope from Smith Bram")),
    ('  I walk to the docks "see you"  ', terminal.Line(sentence='I walk to the docks "see you"')),
    ('I walk to the docks | say "see you there"',
     terminal.Line(sentence="I walk to the docks", say="see you there")),
    ("I wait | evening, all", terminal.Line(sentence="I wait", say="evening, all")),
    ('{"action": "I wait", "say": "hi", "notes": "n"}',
     terminal.Line(sentence="I wait", say="hi", notes="n")),
    ('{"action": 3}', terminal.Line(sentence="")),
    ("{not json", terminal.Line(sentence="{not json")),
    ("QUIT", terminal.Line("quit")), ("exit", terminal.Line("quit")),
    ("help", terminal.Line("help")), ("?", terminal.Line("help")), ("   ", terminal.Line("empty")),
])
def test_parse_line(text: str, want: terminal.Line) -> None:
    assert terminal.parse_line(text) == want


def test_opponents_repeat_to_five_and_fill_the_other_seats() -> None:
    assert terminal.opponent_specs("factor,magpie") == ["factor", "magpie", "factor", "magpie",
                                                    "factor"]
    assert terminal.lineup(2, ["a", "b", "c", "d", "e"]) == ["a", "b", "you", "c", "d", "e"]


@pytest.mark.parametrize("argv, words", [
    (["play", "--seat", "6"], "invalid choice"),
    (["play", "--opponents", "nobody"], "unknown policy"),
    (["play", "--opponents", "factor,,magpie"], "separated by commas"),
    (["play", "--opponents", "factor,factor,factor,factor,factor,factor"], "only 5"),
    (["play", "--turns", "2"], f"from 6 to {MAX_TURNS}"),
    (["play", "--turns", str(MAX_TURNS + 1)], f"from 6 to {MAX_TURNS}"),
])
def test_bad_options_give_one_line_and_exit_2(argv, words, capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err


# --- the environments show the terminal game's text ----------------------------------------------
def test_ansi_render_is_the_terminal_text() -> None:
    env = gymnasium.make("guild/Guild-v0", seat=3, text_mode=True, render_mode="ansi")
    env.reset(seed=5)
    for sentence in ("I walk to Market Square", "I wait"):
        env.step(sentence)
        text = env.render()
        assert text == terminal.turn_text(env.unwrapped.game, 3)
        assert f'YOUR LAST SENTENCE: "{sentence}"' in text


# --- end to end through a pseudo-terminal ---------------------------------------------------------
def spawn(*args: str):
    child = pexpect.spawn(sys.executable, ["-m", "league", "play", *args], cwd=str(ROOT),
                          encoding="utf-8", timeout=30, dimensions=(60, 200))
    return child


def screen(text: str) -> str:
    return text.replace("\r\n", "\n")


def parse_results(text: str) -> dict:
    """The printed results table back into lists keyed like ``Game.results()``."""
    lines = screen(text).split("RESULTS after", 1)[1].splitlines()
    rows = [ln.split() for ln in lines[2:2 + SEATS]]
    cols = ("scores", "coin", "wealth", "questPoints", "delivered", "robberies", "robbed")
    got = {"names": [r[2] for r in rows]}
    for k, col in enumerate(cols):
        got[col] = [float(r[3 + k]) if col == "scores" else int(r[3 + k]) for r in rows]
    turns, max_turns = re.match(r" (\d+) of (\d+) turns", lines[0]).groups()
    got["turns"], got["maxTurns"] = int(turns), int(max_turns)
    return got


def replay_by_hand(seed: int, turns: int, seat: int, opponents: list[str],
                   moves: list[tuple[str, str, str]]) -> Game:
    """The same episode without the terminal: the same policies, the same sentences."""
    names = terminal.lineup(seat, opponents)
    game = Game(GameConfig(seed=seed, turns=turns, players=tuple(names)))
    policies = [None if s == seat else make_policy(n) for s, n in enumerate(names)]
    for p in policies:
        if p is not None and callable(getattr(p, "reset", None)):
            p.reset(seed)
    scripted = [p is not None and is_scripted(p) for p in policies]
    for sentence, say, notes in moves:
        actions = [sentence if s == seat else p.act(game, s) for s, p in enumerate(policies)]
        game.play_turn(actions, says=[say if s == seat else "" for s in range(SEATS)],
                       notes=[notes if s == seat else "" for s in range(SEATS)],
                       scripted=scripted)
    return game


def expected(game: Game) -> dict:
    r = game.results()
    return {k: r[k] for k in ("names", "scores", "coin", "wealth", "questPoints", "delivered",
                              "robberies", "robbed", "turns", "maxTurns")}


def test_a_person_plays_three_sentences_quits_and_the_results_match_a_replay(
        tmp_path: Path) -> None:
    seed, turns, seat = 11, 8, 2
    opponents = terminal.opponent_specs("factor,magpie")
    typed = ['I walk to Market Square | say "good morning"',
             'say "anyone selling rope?"',
             "",  # an empty line asks again
             "help",
             '{"action": "I buy 1 hide from Tanner Oda", "say": "", "notes": "rope next"}']
    moves = [("I walk to Market Square", "good morning", ""),
             ('say "anyone selling rope?"', "", ""),
             ("I buy 1 hide from Tanner Oda", "", "rope next")]
    game = replay_by_hand(seed, turns, seat, opponents, moves)
    first_view = Game(GameConfig(seed=seed, turns=turns)).observation_text(seat)

    child = spawn("--seat", str(seat), "--seed", str(seed), "--turns", str(turns),
                  "--opponents", "factor,magpie", "--replay", str(tmp_path / "r.json"))
    child.expect(PROMPT)
    assert first_view in screen(child.before)  # the seat's own text view, word for word
    outcomes = [e for e in game.events if e["kind"] == "act" and e["seat"] == seat]
    shown = 0
    for line in typed:
        child.sendline(line)
        child.expect(PROMPT)
        if terminal.parse_line(line).command:
            continue
        # The next turn's view tells how the sentence went.
        act = outcomes[shown]
        room = game.world.rooms[act["room"]].name
        assert (f'YOUR LAST SENTENCE: "{moves[shown][0]}" - '
                f'{outcome_text(act["reason"], room)}') in screen(child.before)
        shown += 1
    child.sendline("quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    out = screen(child.before)
    assert "RESULTS after 3 of 8 turns: you quit." in out
    assert parse_results(out) == expected(game)
    # Every recorded event (sentences, spoken lines, notes, snapshots) is the same episode.
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["events"] == game.events
    assert saved["policyNames"] == ["factor", "magpie", "you", "factor", "magpie", "factor"]


def test_ctrl_d_ends_cleanly_with_the_results() -> None:
    child = spawn("--seed", "4", "--turns", "6", "--seat", "5")
    child.expect(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    out = screen(child.before)
    assert "RESULTS after 0 of 6 turns: you left (end of input)." in out
    assert "Traceback" not in out
    opponents = terminal.opponent_specs(terminal.DEFAULT_OPPONENTS)
    assert parse_results(out) == expected(replay_by_hand(4, 6, 5, opponents, []))


def test_a_whole_game_to_the_end_then_guild_view_shows_it(tmp_path: Path) -> None:
    from league.cli import html_viewer as viewer

    moves = [("I walk to Market Square", "", ""), ("I wait", "", "")] * 3
    saved = tmp_path / "mine.json"
    child = spawn("--seed", "21", "--turns", "6", "--seat", "0", "--opponents", "magpie",
                  "--replay", str(saved))
    for sentence, _, _ in moves:
        child.expect(PROMPT)
        child.sendline(sentence)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    out = screen(child.before)
    game = replay_by_hand(21, 6, 0, ["magpie"] * 5, moves)
    assert "RESULTS after 6 of 6 turns: the episode ended (complete)." in out
    last = [e for e in game.events if e["kind"] == "act" and e["seat"] == 0][-1]
    assert f'YOUR LAST SENTENCE: "I wait" - {outcome_text(last["reason"], "x")}' in out
    assert parse_results(out) == expected(game)
    # The saved replay re-derives and its last frame has the same scores.
    model = viewer.view_model(viewer.load_replay(saved))
    assert [c["score"] for c in model["frames"][-1]["cogs"]] == game.results()["scores"]
