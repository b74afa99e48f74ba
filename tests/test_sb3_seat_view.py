"""An ``sb3:`` model plays from a seat's own view as it plays from the game: in a league's
sandbox it holds no state, only what the seat is sent (``league.seat.host.SeatGame``), and
builds its observation with ``sim.codec.encode.encode_view``.

The same model, in the same states, chooses the same act from either; a league that runs it
in its sandbox (the default) plays the episodes it plays trusted, in the league's process, act
for act, with no fault.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import needs, needs_module
from test_sb3 import _trained

from agents import Factor, Magpie
from league.cli.guild import main
from league.seat.host import SeatGame
from league.seat.protocol import act_request
from sim import Game, GameConfig

needs_module("sb3_contrib", "torch==2.13.0, then pip install -e '.[train]'")

from agents.learn.sb3 import SB3Policy  # noqa: E402


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return _trained(tmp_path_factory.mktemp("sb3"))


def test_the_seat_view_gives_the_games_choice(model) -> None:
    """Every seat of three games of factor and magpie, every turn: the model's act from the
    seat's view is its act from the game."""
    policy = SB3Policy(model)
    seen = 0
    for seed in range(3):
        game = Game(GameConfig(seed=seed))
        players = [Factor() if s % 2 else Magpie() for s in range(6)]
        while not game.done:
            for seat in range(6):
                view = SeatGame(act_request(game, seat), speech=True)
                assert policy.act(view, seat) == policy.act(game, seat)
                seen += 1
            game.play_turn([p.act(game, s) for s, p in enumerate(players)])
    assert seen == 3 * 14 * 6


def _league(out: Path, model: Path, *extra: str) -> list[dict]:
    # One episode: the model holds three of its six seats, each a sandboxed seat process of
    # its own (a start costs an import of torch), and their acts over every turn make the
    # scores.
    code = main(["league", "--policies", f"sb3:{model},factor", "--episodes", "1", "--out",
                 str(out), "--workers", "1", "--seed", "5", "--public-draw", *extra])
    assert code == 0
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_a_league_plays_it_in_its_sandbox_as_in_its_own_process(model, tmp_path) -> None:
    from league.apart import sandbox

    why = sandbox.problem()
    needs(why is None, f"a bubblewrap sandbox ({why}; apt-get install bubblewrap)")
    apart = _league(tmp_path / "apart", model)
    trusted = _league(tmp_path / "trusted", model, "--trust")
    assert [r["trusted"] for r in apart][0] != [r["trusted"] for r in trusted][0]
    for a, t in zip(apart, trusted, strict=True):
        assert sum(a["fallbacks"]) == 0 and not any(any(f.values()) for f in a["faults"])
        assert a["scores"] == t["scores"] and a["lineup"] == t["lineup"]
