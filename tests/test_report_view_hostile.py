"""``guild report``, ``guild view`` and ``guild verify`` against a hostile league folder or
replay: every input bounded, every refusal one line, nothing forged shown without a warning.

Counts of thousands of digits are bad lines, not tracebacks (``store.row_problem``); a line's
fault kinds are kept as totals (``report.LadderRows``); ``league.json`` lists at most
``store.MAX_POLICIES`` policies, and policies without a seat are counted past the first few;
a viewer page never replaces a file that is not one; a line whose scores are not its replay's
is warned of; file names reach the terminal inert; a league's replay is read once a run and
never through a link; a replay's parsing is bounded before it starts and unknown keys are
refused; a value of another JSON type (``true`` for ``1``, ``4.0`` for ``4``) does not pass
for the rules' own.
"""

from __future__ import annotations

import json
import shutil
import time
import tracemalloc
from pathlib import Path

import pytest
from leagues import one_error_line, rows

from league.cli import html_viewer as viewer
from league.cli import report, report_html
from league.cli.guild import main
from league.core import files
from league.core import ladder as ladders
from league.core.store import (
    MAX_COUNT,
    MAX_FAULT_KINDS,
    MAX_POLICIES,
    is_number,
    row_problem,
)
from sim.replay import same
from sim.rules.world import SEATS, STANDARD_TOWN

HUGE = int("9" * 4000)  # JSON holds it; the sum of six has more digits than Python prints


@pytest.fixture
def out(league12, tmp_path: Path) -> Path:
    """A copy of the shared 12-episode league."""
    dst = tmp_path / "l12"
    shutil.copytree(league12[0], dst)
    return dst


def _write_rows(out: Path, lines: list[dict]) -> None:
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines),
                                       encoding="utf-8")


def _fails(command: list[str], capsys: pytest.CaptureFixture, words: str) -> str:
    assert main(command) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"guild {command[0]}: error: ") and words in line, line
    return line


def _warnings(err: str) -> list[str]:
    return [x for x in err.splitlines() if x.startswith("guild report: warning: ")]


def _replay(out: Path, rid: str = "e000000") -> dict:
    return json.loads((out / "replays" / f"{rid}.json").read_text(encoding="utf-8"))


# --- 1. counts of thousands of digits ----------------------------------------------------------
def test_a_count_too_large_to_print_is_a_bad_line(out: Path, capsys) -> None:
    lines = rows(out)
    lines[0]["fallbacks"] = [HUGE] * SEATS
    _write_rows(out, lines)
    _fails(["report", str(out)], capsys, "line 1 has fallbacks that are not counts by seat")
    assert main(["verify", str(out)]) == 1
    said = capsys.readouterr()
    assert "Traceback" not in said.err and "e000000 (results.jsonl line 1): fallbacks" in said.out
    lines[0]["fallbacks"] = [0] * SEATS
    lines[0]["faults"] = [{"raised": MAX_COUNT, "garbage": MAX_COUNT}] + [{}] * (SEATS - 1)
    _write_rows(out, lines)  # each a count, their sum not
    _fails(["report", str(out)], capsys, "line 1 has faults that are not counts by seat")
    assert main(["verify", str(out)]) == 1
    assert "line 1): faults " in capsys.readouterr().out


def test_counts_and_scores_are_bounded_without_overflow() -> None:
    row = {"id": "e000000", "lineup": ["a"] * SEATS, "scores": [0.0] * SEATS}
    assert row_problem(row) is None
    assert row_problem({**row, "fallbacks": [MAX_COUNT + 1] + [0] * (SEATS - 1)})
    assert row_problem({**row, "scores": [10 ** 400] * SEATS}) == f"has no {SEATS} scores"
    assert not is_number(10 ** 400) and not is_number(float("nan")) and is_number(-3)


# --- 2. a line's fault kinds -------------------------------------------------------------------
def test_a_line_may_count_few_fault_kinds_and_the_ladder_keeps_totals() -> None:
    base = {"id": "e000000", "lineup": ["a"] * SEATS, "scores": [0.0] * SEATS}
    many = [{f"k{i}": 1 for i in range(MAX_FAULT_KINDS + 1)}] + [{}] * (SEATS - 1)
    assert "faults" in row_problem({**base, "faults": many})
    line = {**base, "group": 0, "turns": 10, "fallbacks": [0] * SEATS,
            **{key: [0] * SEATS for key in ("questPoints", "delivered", "robberies", "robbed")}}
    kept = report.LadderRows()
    tracemalloc.start()
    try:
        for n in range(40):  # 40 lines of 8 kinds a seat, 20 kB a name: 38 MB of names
            faults = [{"raised": 2, **{f"{n}.{s}.{i}." + "x" * 20_000: 1 for i in range(7)}}
                      for s in range(SEATS)]
            assert row_problem({**line, "faults": faults}) is None
            kept.add({**line, "faults": faults})
            del faults
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 2_000_000, held
    assert kept[39]["faults"] == [{"raised": 2, "other": 7}] * SEATS
    assert kept[0]["faults"] == kept[39]["faults"]


# --- 3. policies by the hundred thousand -------------------------------------------------------
def test_a_league_json_of_too_many_policies_is_refused(out: Path, capsys) -> None:
    manifest = json.loads((out / "league.json").read_text(encoding="utf-8"))
    manifest["policies"] += [f"p{i}" for i in range(MAX_POLICIES)]
    (out / "league.json").write_text(json.dumps(manifest), encoding="utf-8")
    _fails(["report", str(out)], capsys, f"policies; a league names at most {MAX_POLICIES:,}")
    _fails(["verify", str(out)], capsys, f"policies; a league names at most {MAX_POLICIES:,}")


def test_policies_without_a_seat_are_counted_past_the_first_few(out: Path, capsys) -> None:
    manifest = json.loads((out / "league.json").read_text(encoding="utf-8"))
    extra = report_html.SHOWN_SEATLESS + 50
    manifest["policies"] += [f"bench{i}" for i in range(extra)]
    (out / "league.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert main(["report", str(out)]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count('<tr class="unranked" data-policy="bench') == report_html.SHOWN_SEATLESS
    assert "And 50 more policies that held no seat" in page
    assert f"bench{report_html.SHOWN_SEATLESS - 4} and 53 more" in page  # in the header
    # each one's entry is the one ladder.build gives it, as verify compares them
    built = report.read_league(out).ladder
    want = ladders.build(rows(out), manifest["policies"], manifest["seed"])
    assert json.loads(json.dumps(built)) == json.loads(json.dumps(want))
    # ladder.json may not rank more policies than league.json lists
    manifest["policies"] = manifest["policies"][:3]
    (out / "league.json").write_text(json.dumps(manifest), encoding="utf-8")
    (out / "ladder.json").write_text(json.dumps({"policies": [
        {"policy": f"p{i}"} for i in range(4)]}), encoding="utf-8")
    assert any("ranks 4 policies, more than the 3 league.json lists" in w
               for w in report.read_league(out).warnings)


# --- 4. a viewer page beside --out -------------------------------------------------------------
def test_a_report_elsewhere_keeps_a_file_that_is_no_viewer_page(out: Path, tmp_path: Path,
                                                               capsys) -> None:
    site = tmp_path / "site"
    (site / "notes-view").mkdir(parents=True)
    mine = site / "notes-view" / "e000000.html"
    mine.write_text("<p>my precious notes</p>\n", encoding="utf-8")
    _fails(["report", str(out), "--out", str(site / "notes.html")], capsys,
           f"{mine} exists and is not a page guild view wrote; it is kept")
    assert mine.read_text(encoding="utf-8") == "<p>my precious notes</p>\n"
    mine.unlink()
    assert main(["report", str(out), "--out", str(site / "notes.html")]) == 0
    assert viewer.is_view_page(mine.read_bytes())


# --- 5. scores the replays do not give ---------------------------------------------------------
def test_scores_that_are_not_the_replays_are_warned_of(out: Path, capsys) -> None:
    (out / "ladder.json").unlink()
    lines = rows(out)
    for r in lines:
        r["scores"] = [9.0 if name == "random" else -1.0 for name in r["lineup"]]
    _write_rows(out, lines)
    for _ in range(2):  # the pages written, then kept: their stamps say what the replays give
        assert main(["report", str(out)]) == 0
        said = _warnings(capsys.readouterr().err)
        forged = [w for w in said if "claims other scores than replays/e000000.json" in w]
        assert len(forged) == 1 and forged[0].endswith(f"run guild verify {out}"), said
        assert "(12 lines are not their replay's)" in forged[0]
        page = (out / "report.html").read_text(encoding="utf-8")
        assert "claims other scores than replays/e000000.json re-derives to" in page


def test_a_line_of_its_replays_results_is_not_warned_of(out: Path, capsys) -> None:
    assert main(["report", str(out)]) == 0
    assert _warnings(capsys.readouterr().err) == []
    facts = viewer.stamped_facts(out / "view" / "e000000.html")
    row = rows(out)[0]
    assert facts is not None and viewer.differing_facts(facts, row) == []
    assert viewer.differing_facts(facts, {**row, "seed": row["seed"] + 1,
                                          "turns": float(row["turns"])}) == ["seed", "turns"]


# --- 6. file names that are escape sequences ---------------------------------------------------
def test_a_file_name_reaches_the_terminal_inert(out: Path, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "\x1b[31mRED\x1b]0;TITLE\x07.json"
    bad.write_text('{"x":\n', encoding="utf-8")
    line = _fails(["view", str(bad)], capsys, "is not JSON")
    assert "\x1b" not in line and "\x07" not in line and "\\x1b[31mRED" in line
    good = tmp_path / "ok\x1b[32mGREEN.json"
    shutil.copy(out / "replays" / "e000000.json", good)
    assert main(["view", str(good)]) == 0
    said = capsys.readouterr().out
    assert "\x1b" not in said and said.startswith("view: wrote ") and "\\x1b[32m" in said


# --- 7. links and repeated ids -----------------------------------------------------------------
def test_a_linked_replay_is_refused_by_report_and_verify(out: Path, capsys) -> None:
    linked = out / "replays" / "e000001.json"
    linked.unlink()
    linked.symlink_to("e000000.json")
    _fails(["report", str(out)], capsys, f"{linked} is a symbolic link")
    assert main(["verify", str(out)]) == 1
    assert "replay replays/e000001.json is a symbolic link" in capsys.readouterr().out


def test_a_repeated_episode_reads_its_replay_once(out: Path, monkeypatch, capsys) -> None:
    lines = rows(out)
    _write_rows(out, lines + [lines[0]] * 5 + [{**lines[1], "id": "x1"}] * 3)
    read: list[str] = []
    write = report.write_view

    def counted(src: Path, page: Path) -> bool:
        read.append(src.name)
        return write(src, page)

    (out / "replays" / "x1.json").write_bytes((out / "replays" / "e000001.json").read_bytes())
    monkeypatch.setattr(report, "write_view", counted)
    assert main(["report", str(out)]) == 0
    assert sorted(read) == sorted([r["id"] + ".json" for r in lines] + ["x1.json"])
    assert "holds episode e000000 again (7 lines repeat an episode)" in capsys.readouterr().err


# --- 8. replays padded with what no game writes ------------------------------------------------
def test_a_replay_padded_past_any_game_is_refused_unparsed(out: Path, tmp_path: Path,
                                                           monkeypatch, capsys) -> None:
    payload = _replay(out)
    most = files.most_values(STANDARD_TOWN)
    padded = tmp_path / "padded.json"
    text = json.dumps(payload, separators=(",", ":"))
    padded.write_text(text[:-1] + ',"llm":[' + "{}," * most + "{}]}", encoding="utf-8")
    parsed: list[object] = []
    monkeypatch.setattr(files.json, "loads", lambda *a, **k: parsed.append(a) or {})
    _fails(["view", str(padded)], capsys, "holds more JSON values than a game of at most 1000")
    assert parsed == []  # refused before any parsing
    monkeypatch.undo()
    # commas and braces inside strings are no values: a long record passes
    padded.write_text(text[:-1] + ',"llm":[{"user":"' + ",{[" * most + '"}]}', encoding="utf-8")
    assert main(["view", str(padded), "-o", str(tmp_path / "p.html")]) == 0
    # a key no replay has, in guild view, guild report and guild verify alike
    (out / "replays" / "e000000.json").write_text(json.dumps({**payload, "junk": [{}]}),
                                                 encoding="utf-8")
    _fails(["view", str(out / "replays" / "e000000.json")], capsys,
           "holds a key no replay has: 'junk'")
    _fails(["report", str(out)], capsys, "holds a key no replay has: 'junk'")
    assert main(["verify", str(out)]) == 1
    assert "replay replays/e000000.json holds a key no replay has" in capsys.readouterr().out


def test_a_file_of_strings_left_open_is_refused_at_once(tmp_path: Path, capsys) -> None:
    # the strings were taken out by a pattern that, from each of 1,800,000 quotes that close
    # nothing, scanned on to the end of the file: hours (40,000 of them took 41 s)
    evil = tmp_path / "open.json"
    evil.write_bytes(b'{"protocol":"' + b'\\",' * 1_800_000)
    assert files.json_values(evil.read_bytes()) > files.most_values(STANDARD_TOWN)
    started = time.monotonic()
    _fails(["view", str(evil)], capsys, "is not JSON")
    assert time.monotonic() - started < 60


def test_the_bound_is_well_above_a_real_replay() -> None:
    """A real 1000-turn replay of the standard town holds about 317,000 values."""
    assert 3 * 317_000 < files.most_values(STANDARD_TOWN) < 4_000_000


# --- 9. values of another JSON type ------------------------------------------------------------
def _loose(out: Path, tmp_path: Path, edit) -> Path:
    payload = _replay(out)
    edit(payload)
    path = tmp_path / "loose.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def _order_true(payload: dict) -> None:
    """The first act that is second in its turn recorded as ``"order": true``."""
    next(e for e in payload["events"] if e.get("kind") == "act" and e["order"] == 1
         ).update(order=True)


@pytest.mark.parametrize(("edit", "words"), [
    (_order_true, "field 'order' is True in the record but the rules give 1"),
    (lambda p: p["results"]["coin"].__setitem__(0, float(p["results"]["coin"][0])),
     "results.coin[0] is "),
    (lambda p: p.update(policyNames="x"), "the replay's policyNames is not a list of 6 policy"),
])
def test_a_value_of_another_json_type_is_refused_and_named(out: Path, tmp_path: Path, capsys,
                                                           edit, words) -> None:
    _fails(["view", str(_loose(out, tmp_path, edit))], capsys, words)


def test_same_is_json_equality() -> None:
    assert not same(True, 1) and not same(1.0, 1) and not same([1], [True])
    assert same({"a": 1, "b": [2.5, "x"]}, {"b": [2.5, "x"], "a": 1})
    assert not same({"a": {"b": 1}}, {"a": {"b": 1.0}})


def test_verify_holds_a_line_to_its_replays_types(out: Path, capsys) -> None:
    lines = rows(out)
    lines[2]["turns"] = float(lines[2]["turns"])
    _write_rows(out, lines)
    assert main(["verify", str(out)]) == 1
    said = capsys.readouterr().out
    assert f"claims turns {lines[2]['turns']!r} but replay replays/e000002.json gives" in said
