"""A policy's own fallbacks (``Decision(..., scripted=True)``) count against it wherever it runs.

In the league's process such a decision is played, recorded scripted and counted in the seat's
``fallbacks`` (so a policy that answers only with them is unranked).  A seat that runs apart
must count the same: ``league.seat.host`` says ``"scripted": true`` in its answer, and an
``exec:`` program may too; the mark reaches only the seat that sent it.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from leagues import league_args, policy_module, rows

from agents import Decision
from league.cli.guild import main
from league.seat.host import as_answer
from league.seat.protocol import ProtocolError, parse_answer
from sim import Game, GameConfig

POLICIES = textwrap.dedent("""
    from agents.policy import Decision

    class OwnFallback:
        def act(self, game, seat):
            return Decision("I wait and watch the road.", scripted=True)

    class Waits:
        def act(self, game, seat):
            return "I wait and watch the road."
""")
MODULE = "scripted_marks"
OWN, WAITS = f"{MODULE}:OwnFallback", f"{MODULE}:Waits"
TURNS = 6


def _league(out: Path, policies: str, *extra: str) -> list[dict]:
    assert main(league_args(out, 6, "--turns", str(TURNS), "--seat-memory", "1024", *extra,
                            policies=policies, workers=1)) == 0
    return rows(out)


def _marks(out: Path, policy: str) -> list[bool]:
    """The scripted mark of every act of ``policy``'s seats, in replay order."""
    found = []
    for r in rows(out):
        payload = json.loads((out / "replays" / f"{r['id']}.json").read_text(encoding="utf-8"))
        mine = {s for s, name in enumerate(payload["policyNames"]) if name == policy}
        found += [e["scripted"] for e in payload["events"]
                  if e.get("kind") == "act" and e["seat"] in mine]
    return found


def _entry(out: Path, policy: str) -> dict:
    ladder = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
    return next(p for p in ladder["policies"] if p["policy"] == policy)


@pytest.mark.parametrize("apart", [["--sandbox", "none"], []])
def test_a_policys_own_fallbacks_count_the_same_apart_as_trusted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, apart: list[str]) -> None:
    policy_module(tmp_path, monkeypatch, MODULE, POLICIES, apart)
    policies = f"{WAITS},{OWN},factor"
    trusted = _league(tmp_path / "trusted", policies, "--trust")
    out = tmp_path / "apart"
    got = _league(out, policies, *apart)
    assert all(r["trusted"][s] == (n == "factor") for r in got for s, n in enumerate(r["lineup"]))
    own = [(r, s) for r in got for s, n in enumerate(r["lineup"]) if n == OWN]
    assert own and all(r["fallbacks"][s] == TURNS and r["faults"][s] == {} for r, s in own)
    assert [r["fallbacks"] for r in got] == [r["fallbacks"] for r in trusted]
    assert _marks(out, OWN) == _marks(tmp_path / "trusted", OWN) == [True] * len(own) * TURNS
    # the mark is the seat's own: the other policy's acts stay its own
    waits = [(r, s) for r in got for s, n in enumerate(r["lineup"]) if n == WAITS]
    assert all(r["fallbacks"][s] == 0 for r, s in waits)
    assert _marks(out, WAITS) == [False] * len(waits) * TURNS
    entry = _entry(out, OWN)
    assert entry["ranked"] is False and entry["fallbacks"] == entry["decisions"] > 0
    assert entry["unranked"] == _entry(tmp_path / "trusted", OWN)["unranked"]
    assert _entry(out, WAITS)["ranked"] is True
    assert main(["verify", str(out)]) == 0


def test_the_host_says_scripted_only_for_a_policys_own_fallback() -> None:
    class View:
        world, aliases = None, []

    assert as_answer(Decision("I wait and watch the road.", scripted=True), View()) == {
        "action": "I wait and watch the road.", "say": "", "notes": "", "scripted": True}
    assert "scripted" not in as_answer("I wait and watch the road.", View())


def test_an_answer_carries_scripted_and_refuses_a_mark_that_is_not_a_bool() -> None:
    game = Game(GameConfig(seed=3))
    wait = "I wait and watch the road."
    assert parse_answer({"action": wait, "scripted": True}, game, 0).scripted is True
    assert parse_answer({"action": wait, "scripted": False}, game, 0).scripted is False
    assert parse_answer({"action": wait}, game, 0).scripted is False
    for bad in ("yes", 1, None, [True]):
        with pytest.raises(ProtocolError, match="scripted"):
            parse_answer({"action": wait, "scripted": bad}, game, 0)


def test_an_exec_program_may_mark_its_own_fallbacks(tmp_path: Path) -> None:
    bot = tmp_path / "bot.py"
    bot.write_text(textwrap.dedent("""
        import json, sys
        for line in sys.stdin:
            r = json.loads(line)
            answer = {} if r["type"] != "act" else {"action": "I wait and watch the road.",
                                                    "scripted": r["turn"] % 2 == 0}
            sys.stdout.write(json.dumps(answer) + "\\n"); sys.stdout.flush()
    """), encoding="utf-8")
    out = tmp_path / "league"
    spec = f"exec:{sys.executable} {bot}"
    got = _league(out, f"{spec},factor", "--sandbox", "none")
    seats = [(r, s) for r in got for s, n in enumerate(r["lineup"]) if n == spec]
    assert seats and all(r["fallbacks"][s] == TURNS // 2 and r["faults"][s] == {}
                         for r, s in seats)
    assert _marks(out, spec).count(True) == len(seats) * TURNS // 2
    assert main(["verify", str(out)]) == 0

