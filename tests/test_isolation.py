"""Fair play: a policy that is not ours runs in a process of its own, sees only its
seat, and cannot cheat, stop the league or touch another seat; ``exec:`` programs in any
language speak the same protocol."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from leagues import ROOT, league_args, rows

from league.apart.isolated import hosted
from league.cli.guild import main
from league.seat.protocol import act_request
from sim import Game, GameConfig

C = "cheats:"  # tests/cheats.py
CHEATS = {  # cheat -> the fault kinds its decisions are counted as
    "PlaysEveryone": {"raised"}, "Peeks": {"raised"}, "Edits": {"raised"},
    "LooksAhead": {"raised"}, "EndsEarly": {"raised"}, "Interrupts": {"crashed"},
    "Exits": {"crashed"}, "SleepsPastSignals": {"timeout"}, "Hogs": {"raised", "crashed"},
}


def _league(out: Path, policies: str, *extra: str, timeout: float = 2.0) -> list[dict]:
    code = main(league_args(out, 6, "--turns", "6", "--decision-timeout", str(timeout),
                            "--seat-memory", "1024", *extra, policies=policies, workers=1))
    assert code == 0
    return rows(out)


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_a_cheat_gains_nothing_and_the_league_finishes(cheat: str, tmp_path: Path) -> None:
    out = tmp_path / cheat
    # the sleeper costs a timeout and a restart per decision: a short limit keeps it quick;
    # factor plays the cheat's failed decisions, so its games are all-factor games
    results = _league(out, f"factor,{C}{cheat}", "--fallback", "factor",
                      timeout=0.2 if cheat == "SleepsPastSignals" else 2.0)
    mine, theirs = [], []
    for r in results:
        for seat, name in enumerate(r["lineup"]):
            if name == "factor":
                assert r["faults"][seat] == {} and r["fallbacks"][seat] == 0
                theirs.append(r["scores"][seat])
            else:
                assert set(r["faults"][seat]) <= CHEATS[cheat] and r["faults"][seat], r
                assert r["fallbacks"][seat] == 6  # factor played every decision
                assert r["trusted"][seat] is False
                mine.append(r["scores"][seat])
    # every decision of the cheat was factor's: the games are all-factor games
    assert sum(mine) / len(mine) == pytest.approx(sum(theirs) / len(theirs))
    assert main(["verify", str(out)]) == 0


def test_patching_factor_in_its_process_leaves_factor_untouched(tmp_path: Path) -> None:
    """A seat that replaces ``agents.Factor.act`` in its own process (in the league's process it
    would make every factor seat wait) leaves the league's factor seats playing as before."""
    patched = _league(tmp_path / "patched", f"factor,{C}PatchesFactor")
    control = _league(tmp_path / "control", f"factor,{C}Waits")
    for a, b in zip(patched, control):
        for seat, name in enumerate(a["lineup"]):
            if name == "factor":
                assert a["scores"][seat] == b["scores"][seat]
                assert a["delivered"][seat] == b["delivered"][seat]
    assert sum(r["delivered"][s] for r in patched for s, n in enumerate(r["lineup"])
               if n == "factor") > 0


@pytest.mark.parametrize("policy", ["Forks", "Floods"])
def test_forks_and_floods_are_contained(policy: str, tmp_path: Path, capsys) -> None:
    results = _league(tmp_path / policy, f"factor,{C}{policy}")
    out = capsys.readouterr().out
    assert "xxxx" not in out  # the seat's output never mixes into the ladder
    for r in results:
        for seat, name in enumerate(r["lineup"]):
            if name != "factor":
                assert r["faults"][seat] == {}  # both answer, and in time
    probe = subprocess.run(["pgrep", "-f", "cheats:Forks"], capture_output=True, text=True)
    assert probe.stdout.strip() == ""  # no fork outlives the league


def test_trusted_seats_run_in_process_and_are_marked(tmp_path: Path) -> None:
    results = _league(tmp_path / "t", f"factor,trusted:{C}Waits,{C}Waits")
    for r in results:
        for seat, name in enumerate(r["lineup"]):
            assert r["trusted"][seat] == (name != f"{C}Waits")
        payload = json.loads((tmp_path / "t" / "replays" / f"{r['id']}.json").read_text())
        assert payload["trusted"] == r["trusted"]


def test_the_javascript_example_bot_plays_a_league_with_zero_faults(tmp_path: Path) -> None:
    if shutil.which("node") is None:
        pytest.fail("node is needed for the exec: example bot (examples/bots/trader.js)")
    bot = ROOT / "examples" / "bots" / "trader.js"
    results = _league(tmp_path / "js", f"exec:node {bot},factor,magpie")
    seats = [(r, s) for r in results for s, n in enumerate(r["lineup"]) if n.startswith("exec:")]
    assert seats and all(r["faults"][s] == {} and r["fallbacks"][s] == 0 for r, s in seats)
    assert main(["verify", str(tmp_path / "js")]) == 0


def test_a_seat_sees_only_its_own_view() -> None:
    game = Game(GameConfig(seed=4))
    seat = hosted(f"{C}Waits", timeout=30)
    seat.reset(4)
    request = act_request(game, 2)
    assert request["commissions"] == game.commissions(2)
    assert request["observation"] == json.loads(json.dumps(game.observe(2)))
    # exactly the documented fields: nothing of the state, the seed or the other seats
    assert set(request) == {"type", "turn", "seat", "turns", "aliases", "commissions",
                            "observation", "text", "legal", "admissible"}
    assert request["text"] == game.observation_text(2)
    assert seat.act(game, 2).action == "I wait and watch the road."
    seat.close()
