"""The feasibility gate's words: which town a report is of, and why a town fails on its pack.

A report names its town for two readers: the text table for a person (``world FILE``) and
``--json`` for a program (the path as given, ``null`` for the standard town).  A town that
fails only on its carry limit has turns and coin to spare, so the table shows the carry limit
beside them and the failure lines name it.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from towns import play_plan, write_town

from feasibility import Case, Checker, greedy_plan, optimal_plan, run_gate
from feasibility.cli import main
from feasibility.report import format_text
from sim.rules.world import STANDARD_TOWN

W = STANDARD_TOWN
HIDE, NAILS = 0, 1
ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("worst turns", "worst coin", "worst carry", "slack turns", "slack coin",
           "slack carry")


def _oracle_rows(text: str) -> list[dict[str, object]]:
    """Every oracle row of the text table as ``{"oracle": .., column: int | None}``."""
    header = re.compile(r"^  oracle +" + " +".join(COLUMNS) + "  plan lengths$")
    lines = text.splitlines()
    rows = []
    for i, line in enumerate(lines):
        if header.match(line):
            for row in lines[i + 1:i + 3]:
                name, *figures = row.split()[:1 + len(COLUMNS)]
                rows.append({"oracle": name, **{c: None if v == "-" else int(v)
                                                for c, v in zip(COLUMNS, figures, strict=True)}})
    return rows


@pytest.fixture
def small_packs(tmp_path: Path, monkeypatch) -> str:
    """A world file whose only change is a pack of 3 units (the greedy plan carries 4), by a
    relative path with a space, as a user types it."""
    monkeypatch.chdir(tmp_path)
    write_town(tmp_path, 'name = "Small packs"\ncarry_limit = 3\n', "small packs.toml")
    return "small packs.toml"


# --- which town ------------------------------------------------------------------------------

def test_json_world_is_the_path_as_given_and_null_for_the_standard_town(small_packs,
                                                                       capsys) -> None:
    assert main(["--world", small_packs, "--seeds", "0..1", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["world"] == "small packs.toml"
    assert main(["--world", "./" + small_packs, "--seeds", "0..1", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["world"] == "./small packs.toml"
    assert main(["--seeds", "0..1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["world"] is None
    # the text table keeps its words: "world FILE", "standard town"
    assert main(["--world", small_packs, "--seeds", "0..1"]) == 1
    assert capsys.readouterr().out.startswith(
        "feasibility gate (RULES §18): world small packs.toml; 14 turns")
    assert main(["--seeds", "0..1"]) == 0
    assert capsys.readouterr().out.startswith("feasibility gate (RULES §18): standard town; ")


def test_run_gate_names_its_town_from_the_file_or_the_world(tmp_path: Path) -> None:
    path = write_town(tmp_path, {"carry_limit": 3})
    from_file = run_gate(replace(W, carry_limit=3), seeds=range(1), world_file=path)
    assert from_file.world_file == str(path) and from_file.world_name == f"world {path}"
    assert from_file.to_json()["world"] == str(path)  # a Path is written as its text
    standard = run_gate(seeds=range(1), exhaustive=False)
    assert standard.world_name == "standard town" and standard.to_json()["world"] is None
    # a town built in Python is no file, and not the standard town either
    variant = run_gate(replace(W, carry_limit=3), seeds=range(1), exhaustive=False)
    assert variant.world_name == "variant town" and variant.to_json()["world"] is None
    named = run_gate(seeds=range(1), exhaustive=False, world_name="my town")
    assert format_text(named).startswith("feasibility gate (RULES §18): my town; ")


# --- why a town fails ------------------------------------------------------------------------

def test_a_town_failing_on_its_pack_alone_shows_it_in_the_table(small_packs, capsys) -> None:
    assert main(["--world", small_packs]) == 1
    out = capsys.readouterr().out
    rows = _oracle_rows(out)
    assert [r["oracle"] for r in rows] == ["greedy", "optimal"] * 2  # seeded, exhaustive
    for greedy in rows[0::2]:
        # turns and coin to spare: the carry column is the one that is negative
        assert greedy["slack turns"] > 0 and greedy["slack coin"] > 0
        assert greedy["worst carry"] == 4 and greedy["slack carry"] == 3 - 4
    for optimal in rows[1::2]:
        assert optimal["worst carry"] <= 3 and optimal["slack carry"] >= 0
    fails = [line for line in out.splitlines() if line.startswith("  seed ")]
    assert fails and all(": carries 4 units at once > carry limit 3; " in f for f in fails)
    assert out.splitlines()[-1] == "FAIL: 1308 of 1308 plans do not fit"


def test_a_town_failing_on_its_pack_alone_says_so_in_json(small_packs, capsys) -> None:
    assert main(["--world", small_packs, "--json"]) == 1
    r = json.loads(capsys.readouterr().out)
    assert r["carry_limit"] == 3
    for scope in ("seeded", "exhaustive"):
        g, o = r[scope]["greedy"], r[scope]["optimal"]
        assert g["slack_turns"] > 0 and g["slack_coin"] > 0
        assert (g["worst_carry"], g["slack_carry"]) == (4, -1)
        assert o["worst_carry"] <= 3 and o["slack_carry"] == 3 - o["worst_carry"]
    assert len(r["failures"]) == 1308
    for f in r["failures"]:
        assert (f["carry_needed"], f["carry_limit"]) == (4, 3)
        assert f["turns_needed"] <= f["turns_allowed"] and f["coin_needed"] <= f["coin_held"]
        assert f["reason"] == "carries 4 units at once > carry limit 3"
        assert f["greedy"]["carry"] == 4 and f["optimal"]["carry"] <= 3


def test_the_standard_town_has_carry_to_spare(capsys) -> None:
    assert main(["--seeds", "0..9"]) == 0
    for row in _oracle_rows(capsys.readouterr().out):
        assert (row["worst carry"], row["slack carry"]) == (4, 8 - 4)
    assert main(["--seeds", "0..9", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["seeded"]["greedy"]["slack_carry"] == 4 and r["failures"] == []


def test_a_failure_without_a_greedy_plan_needs_no_carry(capsys, tmp_path: Path) -> None:
    # no keeper holds 2 rope: no greedy plan, so nothing it needs to carry
    keepers = tuple(replace(k, opening=tuple(min(s, 1) if g == 2 else s
                                             for g, s in zip(k.trade, k.opening, strict=True)))
                    for k in W.keepers)
    r = run_gate(replace(W, keepers=keepers), seeds=range(1), exhaustive=False)
    f = next(f for f in r.to_json()["failures"] if "rope" in f["goods"])
    assert f["carry_needed"] is None and f["carry_limit"] == W.carry_limit
    assert f["reason"].startswith("no keeper holds 2 rope")


@pytest.mark.parametrize("limit", [2, 3, 4, 8])
def test_plan_carry_is_what_the_engine_lets_a_pack_hold(limit: int) -> None:
    """Played in the engine with that carry limit (RULES §9.14), a plan whose ``carry`` fits
    completes both commissions; the greedy plan's 4 units do not fit a pack of 3 or fewer:
    its purchases fill in part there or are refused, and a commission is left short."""
    w = replace(W, carry_limit=limit)
    case = next(c for c in Checker(w).seeded_cases(range(200)) if c.goods == (HIDE, NAILS))
    greedy = greedy_plan(w, case.start, case.goods)
    best = optimal_plan(w, case.start, case.goods)
    assert not isinstance(greedy, str) and best is not None
    assert greedy.carry == 4 and best.carry <= limit  # the search keeps to the limit
    game = play_plan(w, case.seed, case.seat, best)  # asserts every step is accepted
    assert all(c["delivered"] == 2 for c in game.commissions(case.seat))
    try:  # a buy past the limit fills in part, or is refused with a full pack
        game = play_plan(w, case.seed, case.seat, greedy)
        done = all(c["delivered"] == 2 for c in game.commissions(case.seat))
    except AssertionError as e:
        assert "'reason': 'carry_limit'" in str(e)
        done = False
    assert done == (greedy.carry <= limit)


def test_the_docs_show_what_the_gate_prints_for_small_packs(small_packs, capsys) -> None:
    # docs/feasibility.md, "What the gate reports": its table and failure line are the gate's
    page = (ROOT / "docs" / "feasibility.md").read_text(encoding="utf-8")
    section = page.split("## What the gate reports", 1)[1].split("\n## ", 1)[0]
    fenced = re.findall(r"^```(\w*)\n(.*?)^```$", section, re.S | re.M)
    blocks = [text for lang, text in fenced if not lang]  # "text": another town's lines
    assert len(blocks) == 2
    assert main(["--world", small_packs]) == 1
    out = capsys.readouterr().out
    for block in blocks:
        for line in block.splitlines():
            assert line in out.splitlines() or f"  {line}" in out.splitlines(), line


# --- the seeded outcomes, held compactly ----------------------------------------------------

@given(st.integers(-10**9, 10**9), st.integers(1, 40))
@settings(max_examples=25, deadline=None)
def test_seeded_outcomes_read_as_the_list_of_their_cases(first, n) -> None:
    """Each seeded outcome is the draw's case (RULES §4: seed, seat, start, commissions) with
    the checker's verdict on it, by index, slice, from the end, and iterated."""
    from sim.rules.setup import draw_town

    report = run_gate(seeds=range(first, first + n), exhaustive=False)
    checker = Checker()
    want = [checker.check(Case(starts[seat], tuple(goods[seat]), seed, seat))
            for seed in range(first, first + n)
            for starts, goods, _ in [draw_town(seed, STANDARD_TOWN)] for seat in range(6)]
    got = report.seeded
    assert len(got) == 6 * n and list(got) == want and got == want
    assert got[-1] == want[-1] and got[2:7] == want[2:7] and got[::5] == want[::5]
    assert got + [] == want and [] + got == want
    with pytest.raises(IndexError):
        got[6 * n]


def test_many_seeds_take_little_memory() -> None:
    """20,000 seeds (120,000 cases) share the standard town's few (room, goods): a few bytes a
    case, where an object each took over 20 MB."""
    import tracemalloc

    tracemalloc.start()
    try:
        report = run_gate(seeds=range(20_000), exhaustive=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(report.seeded) == 120_000 and report.ok
    assert peak < 8 << 20, f"{peak / 2**20:.1f} MB"
