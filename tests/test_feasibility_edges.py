"""The feasibility gate at its edges: odd names, a closed or interrupted output, what RULES §18
also asserts, the words of a failure, and what the Python API refuses.

Each is a way the gate once gave the wrong answer to CI: a traceback (exit 1, read as FAIL) for
a valid town, a verdict it could not write, a pass for a town §18 refuses, or a reason that
blamed the wrong thing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from towns import write_town

from feasibility import run_gate
from feasibility.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _gate(*argv: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "feasibility", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, **kwargs)


def _lines(err: str) -> list[str]:
    """stderr without the engine's note that it runs as pure Python (a build detail)."""
    return [line for line in err.splitlines() if not line.startswith("guild-game:")]


# --- a good whose name holds "+" -------------------------------------------------------------

PLUS = '[goods.salt]\nname = "salt+pepper"\n'


def test_a_good_named_with_a_plus_gates_like_any_other(tmp_path: Path, capsys) -> None:
    # Pairs were keyed by "a+b" and split on "+" again: KeyError 'salt', exit 1 (FAIL)
    town = str(write_town(tmp_path, PLUS, "plus.toml"))
    assert main(["--world", town]) == 0
    out = capsys.readouterr().out
    assert "rope+salt+pepper 36" in out and "PASS: every plan fits" in out
    assert main(["--world", town, "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["ok"] and r["seeded"]["greedy"]["pair_coin"]["rope+salt+pepper"] == 36
    assert r["exhaustive"]["optimal"]["pair_turns"]["hide+salt+pepper"] == 9


def test_pairs_whose_names_read_alike_keep_a_key_each(tmp_path: Path, capsys) -> None:
    # hide+nails and rope+salt both read "x+y+z": one JSON key held both, so the report lost
    # a pair's figures, and the text table printed two rows of one name
    alike = ''.join(f'[goods.{key}]\nname = "{name}"\n'
                    for key, name in (("hide", "x+y"), ("nails", "z"), ("rope", "x"),
                                      ("salt", "y+z")))
    town = str(write_town(tmp_path, alike, "alike.toml"))
    assert main(["--world", town, "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    standard = run_gate(seeds=range(200)).summary("seeded", "greedy").pair_coin
    coin = r["seeded"]["greedy"]["pair_coin"]
    assert len(coin) == 6 and coin["x+y+z (ids 0,1)"] == standard[0, 1]
    assert coin["x+y+z (ids 2,3)"] == standard[2, 3] and coin["z+x"] == standard[1, 2]
    assert main(["--world", town]) == 0
    out = capsys.readouterr().out
    assert f"x+y+z (ids 0,1) {standard[0, 1]}, " in out and "x+y+z (ids 2,3)" in out


def test_pair_figures_are_keyed_by_the_goods_ids() -> None:
    g = run_gate(seeds=range(1)).summary("exhaustive", "greedy")
    assert g.pair_coin == {(0, 1): 20, (0, 2): 26, (0, 3): 28, (1, 2): 28, (1, 3): 30,
                           (2, 3): 36}
    assert list(g.pair_turns) == list(g.pair_coin)


# --- a report that cannot be written, or is interrupted ----------------------------------------

@pytest.mark.parametrize("argv", [[], ["--json"]])
def test_a_closed_standard_output_gives_no_verdict(monkeypatch, capsys, argv) -> None:
    # Python gives sys.stdout = None when fd 1 is closed: AttributeError, exit 1 (FAIL)
    monkeypatch.setattr("sys.stdout", None)
    assert main(["--seeds", "0..1", *argv]) == 2
    assert capsys.readouterr().err == ("python -m feasibility: cannot write the report "
                                       "(standard output is closed); no verdict\n")


def test_a_closed_standard_output_from_the_shell() -> None:
    r = _gate("--seeds", "0..1", preexec_fn=lambda: os.close(1))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert _lines(r.stderr) == ["python -m feasibility: cannot write the report (standard "
                                "output is closed); no verdict"]


@pytest.mark.parametrize("where", ["feasibility.gate.GateReport.write_json",
                                   "feasibility.cli.format_text",
                                   "feasibility.cli.world_and_turns"])
def test_ctrl_c_at_any_point_is_one_line_and_no_verdict(monkeypatch, capsys, where) -> None:
    # The outcomes are read while the report is written (most of a long run): Ctrl-C there
    # was a KeyboardInterrupt traceback
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(where, interrupted)
    argv = ["--seeds", "0..1"] + (["--json"] if where.endswith("write_json") else [])
    try:
        code = main(argv)
    except KeyboardInterrupt:  # a traceback on the command line; here, a stopped test run
        pytest.fail("Ctrl-C escaped main")
    assert code == 130
    assert capsys.readouterr().err == "python -m feasibility: interrupted; no verdict\n"


# --- RULES §18: every commission good has 2 or more suppliers ----------------------------------

# Dockmaster Fen no longer trades hide: Tanner Oda (who holds 2) is its one supplier, and every
# plan still fits
ONE_SUPPLIER = ('[keepers."Dockmaster Fen"]\ntrade = ["relic", "nails"]\nopening = [3, 6]\n'
                '[keepers."Tanner Oda"]\nopening = [2, 5]\n')
HIDE_ALONE = "commission good hide has one supplier (Tanner Oda); RULES §18 asks for 2 or more"


def test_a_commission_good_with_one_supplier_fails_the_gate(tmp_path: Path, capsys) -> None:
    # It passed: every plan fits, though one shop's empty shelf closes every hide commission
    town = str(write_town(tmp_path, ONE_SUPPLIER, "one.toml"))
    assert main(["--world", town]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:4] == ["suppliers (2 or more a commission good): hide 1, nails 2, rope 3, "
                          "salt 2", f"  {HIDE_ALONE}"]
    assert lines[-2:] == ["failures: none", "FAIL: every plan fits, but 1 commission good "
                                            "with fewer than 2 suppliers (hide)"]
    assert main(["--world", town, "--json"]) == 1
    r = json.loads(capsys.readouterr().out)
    assert r["ok"] is False and r["failures"] == []
    assert r["supply_failures"] == [{"good": "hide", "suppliers": ["Tanner Oda"],
                                     "reason": HIDE_ALONE}]
    assert r["suppliers"]["hide"] == ["Tanner Oda"]
    assert r["suppliers"]["rope"] == ["Smith Bram", "Keeper Nesh", "Guildmaster Vell"]


def test_too_few_suppliers_and_plans_that_do_not_fit_are_both_named(tmp_path: Path,
                                                                    capsys) -> None:
    town = str(write_town(tmp_path, "start_coin = 30\n" + ONE_SUPPLIER, "poor.toml"))
    assert main(["--world", town]) == 1
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("FAIL: ") and last.endswith(
        " plans do not fit; 1 commission good with fewer than 2 suppliers (hide)")


def test_a_good_no_keeper_trades_is_named_in_the_python_api() -> None:
    from dataclasses import replace

    from sim.rules.world import STANDARD_TOWN as W

    keepers = tuple(replace(k, trade=k.trade[:1], opening=k.opening[:1]) if k.id == 3 else k
                    for k in W.keepers)  # Dockmaster Fen sells relics alone: nails and hide
    r = run_gate(replace(W, keepers=keepers), seeds=None)
    assert not r.ok and r.supply_problems == {
        0: HIDE_ALONE, 1: "commission good nails has one supplier (Smith Bram); RULES §18 "
                          "asks for 2 or more"}
    assert run_gate(seeds=None).supply_problems == {}


# --- the path in the report -------------------------------------------------------------------

def test_the_reports_path_prints_as_one_inert_line(tmp_path: Path, capsys) -> None:
    # The first line printed the path raw: an ANSI escape coloured the terminal, a newline
    # split the line
    town = str(write_town(tmp_path, PLUS, "esc\x1b[31mred\nline.toml"))
    assert main(["--world", town, "--seeds", "0..1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"feasibility gate (RULES §18): world {tmp_path}/esc\\x1b[31mred"
                            "\\nline.toml; 14 turns")
    assert main(["--world", town, "--seeds", "0..1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["world"] == town  # JSON: the path exactly


def test_a_path_that_is_no_utf8_is_exact_json(tmp_path: Path) -> None:
    # Its byte reads as a lone surrogate, which a UTF-8 output refused: UnicodeEncodeError
    town = str(write_town(tmp_path, PLUS, os.fsdecode(b"\xff.toml")))
    r = _gate("--world", town, "--seeds", "0..1", "--json",
              env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    assert r.returncode == 0 and json.loads(r.stdout)["world"] == town


def test_an_output_that_cannot_encode_the_report_gives_no_verdict() -> None:
    r = _gate("--seeds", "0..1", env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert r.returncode == 2 and _lines(r.stderr) == [
        "python -m feasibility: cannot write the report (standard output's encoding ascii "
        "cannot write '\\xa7'); no verdict"]


def test_a_deep_paths_error_keeps_its_reason_whole(tmp_path: Path, capsys) -> None:
    # The message was cut at 300 characters, path included: a deep path left no reason
    deep = tmp_path.joinpath(*["x" * 100] * 4)
    deep.mkdir(parents=True)
    town = str(write_town(deep, {"start_coin": -1}))
    assert len(town) > 400
    assert main(["--world", town]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m feasibility: bad world file: ...xxx")
    assert err.endswith("x/town.json: start_coin: negative values are not allowed; got -1\n")
    assert err.count("\n") == 1 and len(err) < 250


# --- why there is no plan on the opening stock ------------------------------------------------

def _town(**changes):
    """The standard town with ``changes`` (keyword: a keeper's id -> its opening stock, or
    ``cut``: rooms whose every exit is closed)."""
    from dataclasses import replace

    from sim.rules.world import STANDARD_TOWN as W

    opening = changes.get("opening", {})
    cut = set(changes.get("cut", ()))
    keepers = tuple(replace(k, opening=opening.get(k.id, k.opening)) for k in W.keepers)
    rooms = tuple(replace(r, exits=() if r.id in cut else
                          tuple(e for e in r.exits if e not in cut)) for r in W.rooms)
    return replace(W, keepers=keepers, rooms=rooms)


def _why(world, start: int, goods: tuple[int, int]) -> str:
    from feasibility.report import describe_failure

    r = run_gate(world, seeds=None)
    o = next(o for o in r.exhaustive if o.case.start == start and o.case.goods == goods)
    return describe_failure(r, o).split(": ", 2)[2]  # after "any seed: start R, A+B: "


def test_no_hide_at_opening_is_blamed_on_the_stock_not_the_roads() -> None:
    # Every room is reachable; it said "the guild keeper or enough of the goods lie beyond
    # its roads"
    w = _town(opening={0: (0, 0), 3: (0, 0, 0)})  # Tanner Oda's and Dockmaster Fen's hides
    assert _why(w, 5, (0, 1)) == (
        "no keeper holds 2 hides at opening (greedy needs one source of 2); no plan on the "
        "opening stock: the keepers' opening stock holds 0 hides in all, 2 needed")


def test_every_good_lacking_a_source_is_named() -> None:
    # Only the first was named: the town's fixer would find the second on the next run
    w = _town(opening={0: (0, 5), 3: (3, 1, 1), 1: (1, 6)})  # 1 hide and 1 + 1 nails in all
    assert _why(w, 5, (1, 0)) == (
        "no keeper holds 2 nails or 2 hides at opening (greedy needs one source of 2); no plan "
        "on the opening stock: the keepers' opening stock holds 1 hide in all, 2 needed")


def test_goods_beyond_the_roads_are_blamed_on_the_roads() -> None:
    w = _town(cut=(2, 5))  # Tanner's Row and the Docks, the two hide shops, are islands
    assert _why(w, 0, (0, 1)).endswith(
        "no plan on the opening stock: 13 hides of the keepers' 13 lie beyond its roads, 2 "
        "needed within them")


# --- what the Python API refuses --------------------------------------------------------------

def test_run_gate_refuses_seeds_no_game_takes() -> None:
    # It gave a verdict over seeds Game(GameConfig(seed=...)) and the command line refuse
    with pytest.raises(ValueError, match=r"^seeds: seed 4611686018427387904 is out of range: "
                                         r"seed \* 7919 \+ 17 must fit in a signed 64-bit "
                                         r"integer$"):
        run_gate(seeds=range(2**62, 2**62 + 1))
    with pytest.raises(ValueError, match=r"^seeds: seed -4611686018427387904 is out"):
        run_gate(seeds=range(-2**62, 0))


def test_run_gate_refuses_a_path_for_a_world() -> None:
    # AttributeError: 'str' object has no attribute 'quest_items'
    with pytest.raises(ValueError, match=r"^world must be a World; got 'town.toml' \(a world "
                                         r"file is read with sim.load_world\(path\)\[0\]\)$"):
        run_gate("town.toml")


@pytest.mark.parametrize("given", [5, b"town.toml", ["town.toml"]], ids=["int", "bytes", "list"])
def test_run_gate_refuses_a_world_file_that_is_no_path(given) -> None:
    # an int was a TypeError from os.fspath; bytes passed, and the JSON report then failed
    with pytest.raises(ValueError, match=r"^world_file must be a path \(str or os.PathLike of "
                                         r"str\) or None; got "):
        run_gate(seeds=range(0, 1), exhaustive=False, world_file=given)


@pytest.mark.parametrize(("start", "goods", "words"), [
    (99, (0, 1), "start must be a room id 0..8; got 99"),        # IndexError
    (-1, (0, 1), "start must be a room id 0..8; got -1"),        # the last room, silently
    (True, (0, 1), "start must be a room id 0..8; got True"),
    (0, (0, 0), r"goods must be two different goods \(a seat's two commissions\); got \(0, 0\)"),
    (0, (0, 99), r"goods must be good ids 0..5; got \(0, 99\)"),  # optimal: None, a "fail"
    (0, (-1, 1), r"goods must be good ids 0..5; got \(-1, 1\)"),
    (0, 3, "goods must be two good ids; got 3"),
], ids=["room 99", "room -1", "room True", "one good twice", "good 99", "good -1", "one id"])
def test_a_plan_for_no_room_or_no_goods_is_refused(start, goods, words: str) -> None:
    from feasibility import OptimalSearch, greedy_plan, optimal_plan
    from sim.rules.world import STANDARD_TOWN as W

    for plan in (greedy_plan, optimal_plan):
        with pytest.raises(ValueError, match=f"^{words}$"):
            plan(W, start, goods)
    if "start" in words:
        with pytest.raises(ValueError, match=f"^{words}$"):
            OptimalSearch(W, (0, 1)).within_reach(start)


def test_the_docs_show_what_the_gate_prints_for_one_supplier(tmp_path: Path, capsys) -> None:
    page = (ROOT / "docs" / "feasibility.md").read_text(encoding="utf-8")
    section = page.split("## What the gate reports", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```text\n(.*?)^```$", section, re.S | re.M)
    assert block is not None
    assert main(["--world", str(write_town(tmp_path, ONE_SUPPLIER, "one.toml"))]) == 1
    out = capsys.readouterr().out.splitlines()
    shown = [line for line in block[1].splitlines() if line != "..."]
    assert len(shown) == 3 and all(line in out for line in shown)
