"""``guild play``: a person at a real pseudo-terminal (pexpect) reads a compact turn, lists the
legal sentences, plays one by its number, gets suggestions for a sentence the town cannot use
(without losing the turn), reads the help, plays a whole game and quits; the printed results
are what the same sentences give when played through ``play_turn`` directly.  In process: the
compact turn carries no model instructions, every listed sentence is one the rules accept, the
verdict on a typed sentence is the environments' mask, and no typed line makes it raise."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import gymnasium
import pytest
from conftest import needs_module
from hypothesis import given, settings
from hypothesis import strategies as st
from scenario import fork, played_game

from agents import is_scripted, make_policy
from league.cli import play_text, terminal
from league.cli.guild import main
from sim import Game, GameConfig, Intent
from sim.codec.action_table import action_table, canonical, legal_mask
from sim.rules.world import MAX_TURNS, SEATS, STANDARD_TOWN

pexpect = needs_module("pexpect", "'guild-game[dev]'")

ROOT = Path(__file__).resolve().parents[1]
PROMPT = re.escape(terminal.PROMPT)
MODEL_WORDS = ("JSON", "Reply with", "NOTES")
MAX_TURN_LINES = 20
# Refusals the mask cannot foresee, being hidden from the seat (legal_mask's docstring).
HIDDEN = {"give": {"carry_limit"}, "accept": {"offer_expired"},
          "rob": {"robbery_failed", "nothing_to_take"}}


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
    ("7", terminal.Line(pick=7)), (" 12 | say hello", terminal.Line(say="hello", pick=12)),
    ('{"action": "3", "notes": "n"}', terminal.Line(notes="n", pick=3)),
    ("٣", terminal.Line(sentence="٣")),  # another script's digit is no number here
    ("QUIT", terminal.Line("quit")), ("exit", terminal.Line("quit")),
    ("help", terminal.Line("help")), ("?", terminal.Line("help")), ("   ", terminal.Line("empty")),
    ("moves", terminal.Line("moves")), ("M", terminal.Line("moves")),
    ("town", terminal.Line("town")), ("t", terminal.Line("town")),
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


# --- the environments show the terminal game's `town` text ---------------------------------------
def test_ansi_render_is_the_town_text() -> None:
    env = gymnasium.make("guild/Guild-v0", seat=3, text_mode=True, render_mode="ansi")
    env.reset(seed=5)
    for sentence in ("I walk to Market Square", "I wait"):
        env.step(sentence)
        text = env.render()
        assert text == terminal.town_text(env.unwrapped.game, 3)
        assert f'YOUR LAST SENTENCE: "{sentence}"' in text


# --- games in process --------------------------------------------------------------------------
def policies_for(names: list[str], seed: int) -> list:
    """The seats' policies as ``guild play`` makes them (None for the person), reset."""
    policies = [None if n == terminal.HUMAN else make_policy(n) for n in names]
    for p in policies:
        if p is not None and callable(getattr(p, "reset", None)):
            p.reset(seed)
    return policies


def step(game: Game, seat: int, policies: list, move: tuple[str, str, str]) -> None:
    """One turn without the terminal: the person's (sentence, say, notes), the others' acts."""
    sentence, say, notes = move
    actions = [sentence if s == seat else p.act(game, s) for s, p in enumerate(policies)]
    game.play_turn(actions, says=[say if s == seat else "" for s in range(SEATS)],
                   notes=[notes if s == seat else "" for s in range(SEATS)],
                   scripted=[p is not None and is_scripted(p) for p in policies])


def replay_by_hand(seed: int, turns: int, seat: int, opponents: list[str],
                   moves: list[tuple[str, str, str]]) -> tuple[Game, list[str]]:
    """The same episode without the terminal, and the compact turns shown on the way (before
    each move, and after the last while the game goes on)."""
    names = terminal.lineup(seat, opponents)
    game = Game(GameConfig(seed=seed, turns=turns, players=tuple(names)))
    policies = policies_for(names, seed)
    shown, before = [], None
    for move in [*moves, None]:
        if game.done:
            break
        view = game.observe(seat)
        shown.append(play_text.turn_text(view, before, game.world))
        if move is None:
            break
        before = view
        step(game, seat, policies, move)
    return game, shown




def alone(game: Game, seat: int, sentence: str) -> str:
    """The reason ``sentence`` gets when ``seat`` plays it on a copy while the others wait."""
    acts: list = [Intent("wait")] * SEATS
    acts[seat] = sentence
    return fork(game).play_turn(acts)[seat]["reason"]


@cache
def reached(seed: int, played: int) -> Game:
    """A game after ``played`` turns of baselines and random legal sentences (seeded), shared
    by the tests that read it (each changes a fork)."""
    return played_game(seed, played, MAX_TURNS_PLAYED + 1, seed % 4 != 0)


MAX_TURNS_PLAYED = 13
states = st.tuples(st.integers(0, 30), st.integers(0, MAX_TURNS_PLAYED), st.integers(0, 5))
STATE_SETTINGS = settings(max_examples=40, deadline=None)


@STATE_SETTINGS
@given(states)
def test_the_compact_turn_is_short_and_for_people(place: tuple[int, int, int]) -> None:
    seed, played, seat = place
    game = reached(seed, played)
    before = reached(seed, played - 1).observe(seat) if played else None
    view = game.observe(seat)
    text = play_text.turn_text(view, before, game.world)
    assert not any(word in text for word in MODEL_WORDS)
    assert len(text.splitlines()) <= MAX_TURN_LINES
    assert max(map(len, text.splitlines())) <= play_text.WIDTH
    assert f"Turn {game.turn + 1} of {game.state.turns}" in text
    assert f"You are in {view['room']['name']}." in text
    assert f"You carry {view['coin']} coin" in text
    assert all(f"{q['count']} " in text for q in view["quests"])
    if played:
        assert text.splitlines()[1].startswith("Your last sentence:")


def test_the_compact_turn_reads_only_the_seats_view() -> None:
    """Whatever the seat cannot see (another room's cog, its purse and pack) leaves the turn,
    the moves and the verdicts as they were."""
    game = fork(reached(3, 4))
    seat = 0
    elsewhere = next(s for s in range(SEATS) if game.state.room[s] != game.state.room[seat])
    rob = f"I rob {game.aliases[elsewhere]}"

    def seen() -> tuple:
        return (play_text.turn_text(game.observe(seat), None, game.world),
                play_text.legal_moves(game, seat), play_text.judge(game, seat, rob))

    before = seen()
    game.state.coin[elsewhere] += 17
    game.state.items[elsewhere][5] += 1
    assert seen() == before


@STATE_SETTINGS
@given(states)
def test_every_listed_sentence_is_one_the_rules_accept(place: tuple[int, int, int]) -> None:
    seed, played, seat = place
    game = reached(seed, played)
    moves = play_text.legal_moves(game, seat)
    assert [m.group for m in moves] == sorted((m.group for m in moves),
                                              key=list(play_text.GROUPS.values()).index)
    for m in moves:
        assert play_text.judge(game, seat, m.sentence).why == ""
        reason = alone(game, seat, m.sentence)
        assert reason in ("ok", "waited") or reason in HIDDEN.get(m.kind, ()), (m, reason)


@STATE_SETTINGS
@given(states)
def test_the_verdict_on_a_sentence_is_the_environments_mask(place: tuple[int, int, int]) -> None:
    """Every row of the action table, written as its sentence, is judged usable exactly when
    its mask bit is set; a refused one gets a reason of its own, never the catch-all."""
    seed, played, seat = place
    game = reached(seed, played)
    mask = legal_mask(game.state, seat)
    here = game.state.room[seat]
    for i, row in enumerate(action_table(game.world)):
        sentence = canonical(i, game.world, game.aliases, seat, here)
        verdict = play_text.judge(game, seat, sentence)
        assert (verdict.why == "") == mask[i], (row, sentence, verdict)
        assert "would refuse it" not in verdict.why


@pytest.mark.parametrize("sentence, why", [
    ("I walk to the moon", "an action, but nothing to do it to."),
    ("I contemplate my options", "it names no action the town knows; say what you do."),
    ("I buy 2 rope from Smith Bram", "there is no such shopkeeper in The Guildhall."),
    ("I buy 0 rope", "you would buy nothing (a quantity of 0)."),
    ("I sell 1 lamp", "you are not carrying that."),
    ("I hand Guildmaster Vell 1 hide", "you are not carrying that."),
    ("I walk to The Docks", "there is no road from The Guildhall to that place."),
    ("I rob Piston", "that cog is not here in The Guildhall."),
    ("I accept the offer", "no such offer is open to you this turn."),
])
def test_a_sentence_the_town_cannot_use_is_refused_with_one_line(sentence: str, why: str) -> None:
    game = Game(GameConfig(seed=11))
    assert game.state.room[2] == 8  # seat 2 opens in The Guildhall, alone
    assert play_text.judge(game, 2, sentence).why == why


def test_usable_sentences_outside_the_table_are_played_as_typed() -> None:
    """Quantities, prices and fees the table does not list, speech, and the say-only form."""
    game = Game(GameConfig(seed=11))
    for sentence in ("I buy 3 rope from Guildmaster Vell", "I buy all the lamps",
                     'I say "rope for sale"', "say anyone selling rope?",
                     'I walk to the chapel "see you there"', "I wait by the well"):
        assert play_text.judge(game, 2, sentence).why == "", sentence
        reply = terminal.respond(game, 2, sentence)
        assert reply.move == terminal.Line(sentence=sentence) and not reply.show


def test_suggestions_prefer_the_same_kind_of_act() -> None:
    game = Game(GameConfig(seed=11))
    moves = play_text.legal_moves(game, 2)
    picks = play_text.suggestions("I buy 3 lamps from Smith Bram", moves, "buy")
    assert [moves[k - 1].sentence for k in picks] == [
        "I buy 2 lamps from Guildmaster Vell.", "I buy 1 lamp from Guildmaster Vell.",
        "I buy 2 rope from Guildmaster Vell."]
    reply = terminal.respond(game, 2, "I walk to the chapell please")
    assert reply.move is None
    assert reply.show.splitlines()[1].startswith("  did you mean: 2 I walk to The Chapel.")


def test_the_guide_examples_are_sentences_the_town_reads() -> None:
    """Each example of ``help`` parses to the act it stands for, in a game where its names
    exist (the example cog is another seat's alias)."""
    game = Game(GameConfig(seed=11))
    cog = game.aliases[3]
    text = play_text.guide_text(cog)
    for group, example, _, kind in play_text.EXAMPLES:
        sentence = example.format(cog=cog)
        assert sentence in text
        assert game.intent_for(sentence, 2)[0].kind == kind, (group, sentence)
    for command in ("moves", "help", "town", "quit"):
        assert command in text


lines = st.one_of(
    st.text(max_size=300),
    st.sampled_from(["moves", "m", "town", "help", "?", "0", "1", "999999999", "1 | say hi",
                     "|", "| say", '{"action": "2"}', '{"action": 1}',
                     '{"action": ' + "[" * 100_000]),  # too deep for json: a sentence
    st.builds(lambda verb, rest, n: f"I {verb} {n} {rest}",
              st.sampled_from(["buy", "sell", "walk to", "give", "offer", "hire", "rob",
                               "accept", "hand", "take", "drop", "ask"]),
              st.sampled_from(["rope", "the docks", "Gizmo", "Guildmaster Vell", "lamps",
                               "Rivet 2 hides for 9 coins", "nothing", "Tinker's offer"]),
              st.integers(0, 10 ** 20)),
)


@settings(max_examples=300, deadline=None)
@given(lines, st.integers(0, 6), st.integers(0, 5))
def test_no_typed_line_raises_or_changes_the_game(text: str, played: int, seat: int) -> None:
    game = reached(7, played)
    state = game.snapshot()
    line = terminal.parse_line(text)
    reply = terminal.respond(game, seat, text)
    assert game.snapshot() == state
    assert isinstance(reply, terminal.Reply)
    if reply.move is not None:  # only what the town can use is ever played
        assert play_text.judge(game, seat, reply.move.sentence).why == ""
        assert reply.move.say == line.say and reply.move.notes == line.notes
    elif not reply.quit and line.command == "":
        assert reply.show.startswith(("Not played: ", "There is no sentence"))
        assert len(reply.show.splitlines()) <= 2 + play_text.MAX_SUGGESTIONS


# --- end to end through a pseudo-terminal ---------------------------------------------------------
def spawn(*args: str):
    """``guild play`` at a pseudo-terminal; ``transcript(child)`` is all it printed so far."""
    child = pexpect.spawn(sys.executable, ["-m", "league", "play", *args], cwd=str(ROOT),
                          encoding="utf-8", timeout=30, dimensions=(60, 200))
    child.logfile_read = io.StringIO()
    return child


def transcript(child) -> str:
    return screen(child.logfile_read.getvalue())


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


def expected(game: Game) -> dict:
    r = game.results()
    return {k: r[k] for k in ("names", "scores", "coin", "wealth", "questPoints", "delivered",
                              "robberies", "robbed", "turns", "maxTurns")}


def finish(child) -> str:
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    out = screen(child.before)
    assert "Traceback" not in out
    return out


def test_a_person_plays_three_sentences_quits_and_the_results_match_a_replay(
        tmp_path: Path) -> None:
    seed, turns, seat = 11, 8, 2
    opponents = terminal.opponent_specs("factor,magpie")
    typed = ['I walk to The Chapel | say "good morning"',
             'say "anyone selling rope?"',
             "",  # an empty line asks again
             "town",
             '{"action": "I wait", "say": "", "notes": "rope next"}']
    moves = [("I walk to The Chapel", "good morning", ""),
             ('say "anyone selling rope?"', "", ""),
             ("I wait", "", "rope next")]
    game, shown = replay_by_hand(seed, turns, seat, opponents, moves)

    child = spawn("--seat", str(seat), "--seed", str(seed), "--turns", str(turns),
                  "--opponents", "factor,magpie", "--replay", str(tmp_path / "r.json"))
    child.expect(PROMPT)
    first = screen(child.before)
    assert shown[0] in first  # the compact turn, word for word
    turn = first.split(terminal.RULE + "\n", 1)[1]
    assert not any(word in turn for word in MODEL_WORDS)
    assert len(turn.splitlines()) <= MAX_TURN_LINES
    played = 0
    for line in typed:
        child.sendline(line)
        child.expect(PROMPT)
        if line == "town":
            then = replay_by_hand(seed, turns, seat, opponents, moves[:played])[0]
            assert then.observation_text(seat) in screen(child.before)
        if terminal.parse_line(line).command:
            assert terminal.RULE not in child.before  # the same turn: asked again
            continue
        played += 1
        assert shown[played] in screen(child.before)  # the next turn tells how it went
        assert f'Your last sentence: "{moves[played - 1][0]}"' in shown[played]
    child.sendline("quit")
    out = finish(child)
    assert "RESULTS after 3 of 8 turns: you quit." in out
    assert parse_results(out) == expected(game)
    # Every recorded event (sentences, spoken lines, notes, snapshots) is the same episode.
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["events"] == game.events
    assert saved["policyNames"] == ["factor", "magpie", "you", "factor", "magpie", "factor"]


def test_moves_lists_the_legal_sentences_and_a_number_plays_one(tmp_path: Path) -> None:
    seed, turns, seat = 11, 6, 2
    opponents = terminal.opponent_specs(terminal.DEFAULT_OPPONENTS)
    game, _ = replay_by_hand(seed, turns, seat, opponents, [])
    moves = play_text.legal_moves(game, seat)
    assert {m.group for m in moves} >= {"walk", "buy", "ask", "wait"}
    pick = next(k for k, m in enumerate(moves, 1) if m.group == "buy")

    child = spawn("--seat", str(seat), "--seed", str(seed), "--turns", str(turns),
                  "--replay", str(tmp_path / "r.json"))
    child.expect(PROMPT)
    child.sendline("m")
    child.expect(PROMPT)
    listed = screen(child.before)
    assert play_text.moves_text(moves) in listed
    numbered = re.findall(r"(\d+) (I [^\n]*?\.)(?= {2,}|\n)", listed)
    assert [(int(k), s) for k, s in numbered] == [(k, m.sentence)
                                                 for k, m in enumerate(moves, 1)]
    for m in moves:  # each listed sentence is one the rules accept
        assert alone(game, seat, m.sentence) in ("ok", "waited"), m
    child.sendline(f"{pick} | say fresh rope")
    child.expect(PROMPT)
    assert f"You: {moves[pick - 1].sentence}" in screen(child.before)
    child.sendline("quit")
    out = finish(child)
    direct, _ = replay_by_hand(seed, turns, seat, opponents,
                               [(moves[pick - 1].sentence, "fresh rope", "")])
    assert parse_results(out) == expected(direct)
    events = json.loads((tmp_path / "r.json").read_text())["events"]
    assert events == direct.events
    mine = [e for e in events if e["kind"] == "act" and e["seat"] == seat]
    assert mine[0]["sentence"] == moves[pick - 1].sentence and mine[0]["reason"] == "ok"


def test_an_unusable_sentence_gets_suggestions_and_keeps_the_turn() -> None:
    seed, turns, seat = 11, 6, 2
    opponents = terminal.opponent_specs(terminal.DEFAULT_OPPONENTS)
    game, _ = replay_by_hand(seed, turns, seat, opponents, [])
    child = spawn("--seat", str(seat), "--seed", str(seed), "--turns", str(turns))
    child.expect(PROMPT)
    for typo in ("I walk to the moon", "I buy 3 lamps from Smith Bram", "42"):
        child.sendline(typo)
        child.expect(PROMPT)
        said = screen(child.before)
        reply = terminal.respond(game, seat, typo)
        assert reply.move is None and reply.show in said
        assert terminal.RULE not in said  # not played: the same turn asks again
        if typo != "42":  # the echo, why in one line, then the suggestions
            assert said.splitlines()[1].startswith("Not played: ")
            assert said.splitlines()[2].startswith("  did you mean:")
    child.sendline("I wait")
    child.expect(PROMPT)
    assert "Turn 2 of 6" in child.before
    child.sendline("quit")
    out = finish(child)
    assert "RESULTS after 1 of 6 turns: you quit." in out
    direct, _ = replay_by_hand(seed, turns, seat, opponents, [("I wait", "", "")])
    assert parse_results(out) == expected(direct)


def test_help_shows_the_grammar_and_the_commands() -> None:
    child = spawn("--seed", "3", "--turns", "6", "--seat", "1")
    child.expect(PROMPT)
    child.sendline("?")
    child.expect(PROMPT)
    shown = screen(child.before)
    alias = Game(GameConfig(seed=3)).aliases[2]
    assert play_text.guide_text(alias) in shown
    for _, example, _, _ in play_text.EXAMPLES:
        assert example.format(cog=alias) in shown
    child.sendeof()
    assert "RESULTS after 0 of 6 turns" in finish(child)


def test_ctrl_d_ends_cleanly_with_the_results() -> None:
    child = spawn("--seed", "4", "--turns", "6", "--seat", "5")
    child.expect(PROMPT)
    child.sendeof()
    out = finish(child)
    assert "RESULTS after 0 of 6 turns: you left (end of input)." in out
    opponents = terminal.opponent_specs(terminal.DEFAULT_OPPONENTS)
    assert parse_results(out) == expected(replay_by_hand(4, 6, 5, opponents, [])[0])


def test_piped_input_is_echoed() -> None:
    """Lines from a pipe are printed as typed, so a transcript reads like a terminal's."""
    done = subprocess.run([sys.executable, "-m", "league", "play", "--seed", "2", "--turns", "6"],
                          input="moves\nI walk nowhere\n1\n", capture_output=True, text=True,
                          cwd=str(ROOT), timeout=60, check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    prompts = done.stdout.split(terminal.PROMPT)[1:]
    assert [p.splitlines()[0] for p in prompts] == ["moves", "I walk nowhere", "1", ""]
    assert "RESULTS after 1 of 6 turns: you left (end of input)." in done.stdout


def plan(seed: int, turns: int, seat: int, opponents: list[str]
         ) -> tuple[list[str], list[tuple[str, str, str]]]:
    """What a person types in a whole game, and the moves it makes: by turns a number from the
    moves list, the factor's sentence, and that sentence with a line to say; one unusable
    sentence (refused, the turn kept) on the second turn."""
    names = terminal.lineup(seat, opponents)
    game = Game(GameConfig(seed=seed, turns=turns, players=tuple(names)))
    policies = policies_for(names, seed)
    mine = make_policy("factor")
    typed, moves = [], []
    while not game.done:
        t = game.turn
        legal = play_text.legal_moves(game, seat)
        sentence = str(mine.act(game, seat))
        if t == 1:
            typed.append("I sell the moon to nobody")
        if t % 3 == 0 or play_text.judge(game, seat, sentence).why:
            k = 1 + t % len(legal)
            typed.append(str(k))
            move = (legal[k - 1].sentence, "", "")
        elif t % 3 == 1:
            typed.append(sentence)
            move = (sentence, "", "")
        else:
            typed.append(f'{sentence} | say "turn {t}"')
            move = (sentence, f"turn {t}", "")
        moves.append(move)
        step(game, seat, policies, move)
    return typed, moves


def test_a_whole_game_to_the_end_then_guild_view_shows_it(tmp_path: Path) -> None:
    from league.cli import html_viewer as viewer
    from league.core import files

    seed, turns, seat = 21, 14, 0
    opponents = terminal.opponent_specs(terminal.DEFAULT_OPPONENTS)
    typed, moves = plan(seed, turns, seat, opponents)
    assert len(moves) == turns and len(typed) == turns + 1
    game, shown = replay_by_hand(seed, turns, seat, opponents, moves)
    saved = tmp_path / "mine.json"
    child = spawn("--seed", str(seed), "--turns", str(turns), "--seat", str(seat),
                  "--replay", str(saved))
    for line in typed:
        child.expect(PROMPT)
        child.sendline(line)
    out = finish(child)
    whole = transcript(child)
    for text in shown:  # every turn, word for word
        assert text in whole
    assert whole.count("Not played: ") == 1 and whole.count(terminal.RULE) == turns + 1
    assert "RESULTS after 14 of 14 turns: the episode ended (complete)." in out
    final = "\n".join(play_text.last_sentence(game.observe(seat)))
    assert out.split("RESULTS after", 1)[0].rstrip().endswith(final)
    assert parse_results(out) == expected(game)
    assert json.loads(saved.read_text())["events"] == game.events
    # The saved replay re-derives and its last frame has the same scores.
    model = viewer.view_model(files.load_replay(saved))
    assert [c["score"] for c in model["frames"][-1]["cogs"]] == game.results()["scores"]


def test_standard_town_is_what_the_guide_names() -> None:
    """The guide's rooms and keepers are the standard town's (``guild play`` plays it)."""
    text = play_text.guide_text()
    dark = [r.name for r in STANDARD_TOWN.rooms if r.dark]
    assert f"only in the dark: {', '.join(dark)}" in text


def test_ctrl_c_before_the_game_says_interrupted_and_nothing_of_leagues(monkeypatch,
                                                                        capsys) -> None:
    """Ctrl-C while the opponents load (before any turn) is exit 130 and one line; resuming is
    a league's matter, not a game's."""
    def interrupted(text: str) -> list[str]:
        raise KeyboardInterrupt

    monkeypatch.setattr(terminal, "opponent_specs", interrupted)
    assert main(["play", "--seed", "1"]) == 130
    assert capsys.readouterr().err.strip() == "guild play: interrupted"


# --- the other seats decide while the person types ------------------------------------------

def test_the_other_seats_decide_while_the_person_types(monkeypatch, capsys) -> None:
    """Every seat acts on the turn's starting state, so the opponents are asked as the turn
    opens: the person's line is read only once all five have answered, here (were they asked
    after it, as they were, each slow model seat would add its wait to the person's)."""
    import threading

    answered: list[threading.Event] = []

    class Slow:
        concurrent = True  # as a language-model seat: a thread of its own

        def __init__(self) -> None:
            self.done = threading.Event()
            answered.append(self.done)

        def act(self, game, seat):
            self.done.set()
            return "I wait."

    def person() -> str:
        assert all(e.wait(30) for e in answered), "the person was asked first"
        for e in answered:
            e.clear()
        return "I wait."

    monkeypatch.setattr(terminal, "read_line", person)
    policies = [None, *(Slow() for _ in range(SEATS - 1))]
    game = Game(GameConfig(seed=3, turns=6))
    code, why = terminal.play(game, 0, policies)
    assert (code, game.turn) == (0, 6) and why.startswith("the episode ended")
    acts = [e for e in game.events if e["kind"] == "act"]
    assert len(acts) == 6 * SEATS and not any(a["scripted"] for a in acts)


def test_a_world_files_help_names_its_own_town(tmp_path: Path, capsys) -> None:
    # guild play --world: the help's examples are the town's acts in its own words (the
    # standard ones name the Docks, Smith Bram and Guildmaster Vell)
    from sim import load_config

    town = tmp_path / "town.json"
    town.write_text(json.dumps({
        "turns": 8, "start_coin": 33, "goods": {"salt": {"name": "pepper"},
                                                 "hide": {"name": "pelt"}},
        "keepers": {"Guildmaster Vell": {"name": "Provost Ilsa", "keywords": ["ilsa"]}},
        "rooms": {"The Docks": {"name": "The Wharf", "keywords": ["wharf"], "dark": False}}}),
        encoding="utf-8")
    game = Game(load_config(town, seed=11))
    cog = game.aliases[3]
    text = play_text.guide_text(cog, game.world)
    for group, example, _, kind in play_text.town_examples(game.world):
        sentence = example.format(cog=cog)
        assert sentence in text
        assert game.intent_for(sentence, 2)[0].kind == kind, (group, sentence)
    for old in ("Docks", "Vell", "hides", "points - 40)"):
        assert old not in text, old
    assert "only in the dark: Cutpurse Alley)" in text
    assert "(wealth + 3 x commission points - 33) / 40" in text  # the town's start coin
    assert play_text.town_examples(STANDARD_TOWN) is play_text.EXAMPLES
    assert main(["play", "--world", str(town), "--opponents", "champion"]) == 2
    assert "champion: it was trained in the standard town" in capsys.readouterr().err
    assert main(["play", "--world", str(tmp_path / "none.toml")]) == 2
    assert "bad world file: " in capsys.readouterr().err
    # at the terminal: the header names the town and its turns, help its words, the replay
    # is the town's (guild view --world shows it)
    saved = tmp_path / "mine.json"
    child = spawn("--world", str(town), "--seed", "5", "--replay", str(saved))
    child.expect(PROMPT)
    child.sendline("help")
    child.expect(PROMPT)
    child.sendline("quit")
    out = finish(child)
    whole = transcript(child)
    assert f"The guild game: seed 5, 8 turns, the town of {town}." in " ".join(whole.split())
    assert "I hand Provost Ilsa 2 pelts" in whole and "Guildmaster Vell" not in whole
    assert "RESULTS after" in out
    assert f"(watch it with: guild view --world {town} {saved})" in whole  # the command works:
    assert main(["view", "--world", str(town), str(saved), "-o", str(tmp_path / "v.html")]) == 0


def test_a_room_without_exits_is_told_in_words_at_the_terminal(tmp_path: Path) -> None:
    from sim import load_config

    town = tmp_path / "town.json"  # Cutpurse Alley cut off
    town.write_text(json.dumps({"rooms": {"Cutpurse Alley": {"exits": []},
                                          "The Docks": {"exits": [0, 4]},
                                          "The Chapel": {"exits": [0, 8]}}}), encoding="utf-8")
    game = Game(load_config(town, seed=2))
    game.state.room[2] = next(r.id for r in game.world.rooms if r.name == "Cutpurse Alley")
    text = play_text.turn_text(game.observe(2), None, game.world)
    assert "There is no way out." in text and "Roads to ." not in text
