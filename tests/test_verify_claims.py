"""``guild verify`` checks what a league claims: the episode count and ids against
``league.json``, fallbacks against the replays' scripted marks, ``ladder.json`` against the
results, the lineups against the draw; and resume plays a lost replay again, byte for byte."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from leagues import copy_league, league_args, lines, one_error_line, same_replays

from league.cli.guild import main
from league.core.verify import verify_dir
from league.core.verify_claims import fallback_problems, replay_marks


def _verify(out: Path, capsys) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["verify", str(out)])
    return code, capsys.readouterr().out.splitlines()


def _write_lines(out: Path, text: list[str]) -> None:
    (out / "results.jsonl").write_text("".join(x + "\n" for x in text), encoding="utf-8")


def _edit_row(out: Path, n: int, edit: Callable[[dict], None]) -> None:
    text = lines(out)
    row = json.loads(text[n])
    edit(row)
    text[n] = json.dumps(row, separators=(",", ":"))
    _write_lines(out, text)


def _edit_json(path: Path, edit: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _swap_seats(seq: list, a: int, b: int) -> None:
    seq[a], seq[b] = seq[b], seq[a]


def test_an_untouched_league_verifies(league12, capsys) -> None:
    code, out = _verify(league12[0], capsys)
    assert code == 0 and out[-1] == (
        "verify: all 12 episodes verify, and results.jsonl, the lineups, the fallbacks and the "
        "ladder agree with league.json")
    # before it, only notes: the seats re-played and the signature's key (tests/test_signing.py)
    assert [x.split(":")[1].split()[:2] for x in out[:-1]] == [["re-played", "the"],
                                                                ["signed", "by"]]


def test_deleting_the_last_result_lines_fails(league12, tmp_path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    _write_lines(out, lines(out)[:-2])
    code, got = _verify(out, capsys)
    assert code == 1
    assert "verify: results.jsonl has 10 episode lines but league.json claims 12 episodes" in got
    assert "verify: results.jsonl lacks episodes e000010-e000011 of the 12 that league.json " \
           "claims" in got
    # the ladder was computed from all 12, so it no longer matches the 10 that are left
    assert any(x.startswith("verify: ladder.json: episodes is 12 but results.jsonl gives 10")
               for x in got)


def test_a_duplicated_line_fails(league12, tmp_path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    text = lines(out)
    _write_lines(out, text[:5] + [text[4]] + text[5:])
    code, got = _verify(out, capsys)
    assert code == 1
    assert "verify: results.jsonl has episode e000004 2 times (lines 5, 6)" in got
    assert "verify: results.jsonl has 13 episode lines but league.json claims 12 episodes" in got


def test_a_duplicate_in_place_of_an_episode_fails(league12, tmp_path, capsys) -> None:
    """Same count, one id twice and one missing: the count alone would not catch it."""
    out = copy_league(league12[0], tmp_path)
    text = lines(out)
    _write_lines(out, text[:11] + [text[10]])
    code, got = _verify(out, capsys)
    assert code == 1
    assert "verify: results.jsonl lacks episode e000011 of the 12 that league.json claims" in got
    assert "verify: results.jsonl has episode e000010 2 times (lines 11, 12)" in got


@pytest.mark.parametrize("seat", [0, 1, 2])  # the three policies sit in seats 0-2 of e000003
def test_an_edited_fallback_count_fails(league12, tmp_path, capsys, seat) -> None:
    out = copy_league(league12[0], tmp_path)
    name = json.loads(lines(out)[3])["lineup"][seat]
    _edit_row(out, 3, lambda r: r["fallbacks"].__setitem__(seat, 1))
    code, got = _verify(out, capsys)
    assert code == 1
    mine = [x for x in got if x.startswith("verify: e000003 (results.jsonl line 4): ")]
    assert len(mine) == 1 and f"seat {seat} ({name}): results.jsonl claims 1 fallbacks" in mine[0]
    assert any("ladder.json: policies[" in x and ".fallbacks is 0 but" in x for x in got)


def test_an_edited_fault_record_fails(league12, tmp_path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    _edit_row(out, 5, lambda r: r["faults"].__setitem__(2, {"raised": 3}))
    code, got = _verify(out, capsys)
    assert code == 1
    assert any(x.startswith("verify: e000005 (results.jsonl line 6): seat 2") and
               "without a fault note" in x for x in got)


def test_an_edited_or_lost_fallback_play_fails(league12, tmp_path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    _edit_row(out, 2, lambda r: r["fallbackPlay"].__setitem__(0, "factor"))
    _edit_row(out, 6, lambda r: r.pop("fallbackPlay"))
    code, got = _verify(out, capsys)
    assert code == 1
    assert any(x.startswith("verify: e000002 (results.jsonl line 3): ") and "fallbackPlay" in x
               for x in got)
    assert "verify: e000006 (results.jsonl line 7): the line lacks fallbackPlay, which every " \
           "line of this league has" in got


def test_where_a_seat_ran_is_checked_against_the_names_and_options(league12, tmp_path,
                                                                    capsys) -> None:
    # The baselines run in the league's process (trusted, no sandbox): a line or a replay that
    # says a seat ran apart, or in a sandbox, is not what league.json's options give.
    out = copy_league(league12[0], tmp_path)
    _edit_row(out, 4, lambda r: r["trusted"].__setitem__(1, False))
    _edit_json(out / "replays" / "e000008.json", lambda p: p["sandbox"].__setitem__(0, "none"))
    code, got = _verify(out, capsys)
    assert code == 1
    assert ("verify: e000004 (results.jsonl line 5): results.jsonl claims trusted [true, false, "
            "true, true, true, true], but the policies and league.json's options give "
            "[true, true, true, true, true, true]") in got
    assert any(x.startswith("verify: e000008 (results.jsonl line 9): replay replays/e000008.json "
                            "claims sandbox [\"none\", null,") for x in got)
    assert sum(x.startswith("verify: e0") for x in got) == 2


def test_an_unranked_policy_given_a_rank_fails(tmp_path, capsys) -> None:
    out = tmp_path / "l"
    assert main(league_args(out, 6, "--turns", "6", workers=1,
                            policies="factor,trusted:faulty_policies:Raiser")) == 0
    _edit_json(out / "ladder.json", lambda d: d["policies"][1].update(rank=2, ranked=True))
    code, got = _verify(out, capsys)
    assert code == 1 and "verify: ladder.json: policies[trusted:faulty_policies:Raiser].rank " \
                         "is 2 but results.jsonl gives null" in got


def test_a_league_from_before_fallback_play_verifies_and_goes_on_with_factor(
        league12, tmp_path, capsys) -> None:
    """Lines, replays and ladder as they were written before ``--fallback``: still valid, and
    the league goes on as it began, with factor playing every fallback."""
    out = copy_league(league12[0], tmp_path)
    (out / "signature.json").unlink()  # leagues were signed later still (tests/test_signing.py)
    _edit_json(out / "league.json", lambda d: d.pop("signedBy"))
    _write_lines(out, [json.dumps({k: v for k, v in json.loads(x).items() if k != "fallbackPlay"})
                       for x in lines(out)])
    for replay in (out / "replays").iterdir():
        _edit_json(replay, lambda p: p.pop("fallbackPlay"))
    _edit_json(out / "ladder.json", lambda d: [d.pop("ranking")] + [
        [e.pop(k) for k in ("faults", "notOwnShare", "ranked", "unranked")]
        for e in d["policies"]])
    assert _verify(out, capsys)[0] == 0
    (out / "replays" / "e000003.json").unlink()
    assert main(league_args(out, 18)) == 0  # plays e000003 again, and six more
    assert (out / "replays" / "e000003.json").is_file()
    assert "fallback" not in json.loads((out / "league.json").read_text())
    new = [json.loads(x) for x in lines(out)]
    assert all("fallbackPlay" not in r for r in new[:12])
    assert all(r["fallbackPlay"] == ["factor"] * 6 for r in new[12:])
    assert _verify(out, capsys)[0] == 0


def test_an_edited_ladder_mean_fails(league12, tmp_path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    ladder = json.loads((out / "ladder.json").read_text())
    top = ladder["policies"][0]
    real = top["meanScore"]
    _edit_json(out / "ladder.json", lambda d: d["policies"][0].update(meanScore=real + 0.01))
    code, got = _verify(out, capsys)
    assert code == 1
    assert got[0] == (f"verify: ladder.json: policies[{top['policy']}].meanScore is "
                      f"{json.dumps(real + 0.01)} but results.jsonl gives {json.dumps(real)}")
    assert got[1].startswith("verify: ladder.json is not the file signature.json signed")
    assert got[-1].startswith("verify: 0 of 12 episodes do not verify; 2 problems in all")


def test_policy_names_swapped_in_a_line_and_its_replay_fail(league12, tmp_path, capsys) -> None:
    """The replay still re-derives (names do not change the game); the lineup draw does not."""
    out = copy_league(league12[0], tmp_path)
    row = json.loads(lines(out)[7])
    a, b = next((a, b) for a in range(6) for b in range(a + 1, 6)
                if row["lineup"][a] != row["lineup"][b])
    _edit_row(out, 7, lambda r: [_swap_seats(r[k], a, b) for k in ("lineup", "names")])
    _edit_json(out / "replays" / "e000007.json", lambda p: [
        _swap_seats(p["policyNames"], a, b), _swap_seats(p["results"]["names"], a, b)])
    code, got = _verify(out, capsys)
    assert code == 1
    mine = [x for x in got if x.startswith("verify: e000007 (results.jsonl line 8): lineup ")]
    assert len(mine) == 1 and "but league.json's draw seats" in mine[0]


def test_a_missing_league_json_is_unusable_input(league12, tmp_path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    (out / "league.json").unlink()
    capsys.readouterr()
    assert main(["verify", str(out)]) == 2
    assert "has no league.json" in one_error_line(capsys.readouterr().err)


def test_a_deleted_replay_fails_and_resume_regenerates_it(league12, tmp_path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    lost = out / "replays" / "e000004.json"
    lost.unlink()
    code, got = _verify(out, capsys)
    assert code == 1
    assert "verify: e000004 (results.jsonl line 5): replay replays/e000004.json is missing" in got
    before = lines(out)
    assert main(league_args(out)) == 0  # the same command resumes
    assert "played 1 episodes again whose replay was missing (e000004)" in capsys.readouterr().err
    assert same_replays(out, league12[0])  # byte for byte
    assert lines(out) == before
    assert (out / "ladder.json").read_bytes() == (league12[0] / "ladder.json").read_bytes()
    assert _verify(out, capsys)[0] == 0


def test_every_problem_is_reported_not_only_the_first(league12, tmp_path) -> None:
    out = copy_league(league12[0], tmp_path)
    for ep in ("e000001", "e000009"):
        (out / "replays" / f"{ep}.json").unlink()
    report = verify_dir(out)
    assert report.failed == 2 and len(report.problems) == 4
    assert [p.split()[0] for p in report.problems] == ["e000001", "e000009",  # and the signature:
                                                       "replays/e000001.json",
                                                       "replays/e000009.json"]


def _row(lineup: list[str], fallbacks: list[int], faults: list[dict] | None = None) -> dict:
    faults = faults or [{} for _ in range(6)]
    return {"lineup": lineup, "fallbacks": fallbacks, "faults": faults,
            "faultNotes": ["turn 1: x" if f else "" for f in faults]}


def test_fallbacks_follow_the_scripted_marks() -> None:
    """The rules of ``fallback_problems`` on hand-made rows, including faulting policies."""
    acts = [{"kind": "act", "seat": s, "scripted": s in (0, 1, 2)} for s in range(6)] * 2
    marks = replay_marks(acts + [{"kind": "turn"}])
    assert marks == [(2, 2)] * 3 + [(2, 0)] * 3
    lineup = ["factor", "magpie", "x:Bad", "random", "x:Ok", "random"]
    ok = {0: marks}
    assert fallback_problems([_row(lineup, [0] * 6)], ok) == {}
    # a never-unscripted user policy that fell back every time, with or without faults
    assert fallback_problems([_row(lineup, [0, 0, 2, 0, 0, 0])], ok) == {}
    # factor falling back needs a fault; random's count must match its marks exactly
    assert "only after a fault" in fallback_problems([_row(lineup, [1, 0, 0, 0, 0, 0])], ok)[0]
    faulted = [{"raised": 1}] + [{}] * 5
    assert fallback_problems([_row(lineup, [1, 0, 0, 0, 0, 0], faulted)], ok) == {}
    assert "marks 0 of its 2" in fallback_problems([_row(lineup, [0, 0, 0, 1, 0, 0])], ok)[0]
    # x:Ok plays unscripted in seat 4, so in another episode its scripted acts are fallbacks
    two = [_row(lineup, [0] * 6), _row(["x:Ok"] * 6, [0] * 6)]
    got = fallback_problems(two, {0: marks, 1: [(2, 2)] * 6})
    assert list(got) == [1] and got[1].startswith("seat 0 (x:Ok)")
    # more faults than decisions (plus one at reset) cannot happen
    many = [{}, {}, {"timeout": 4}, {}, {}, {}]
    assert "at most one fault" in fallback_problems([_row(lineup, [0, 0, 2, 0, 0, 0], many)],
                                                    ok)[0]


def test_a_policy_name_in_a_ladder_difference_cannot_act_on_the_terminal() -> None:
    from league.core.verify_claims import ladder_differences

    name = "evil\x1b[2J\x1b[31m"
    derived = {"policies": [{"policy": name, "meanScore": 1.0}]}
    claimed = {"policies": [{"policy": name, "meanScore": 2.0}]}
    [diff] = ladder_differences(claimed, derived, True)
    assert "\x1b" not in diff and "policies[evil\\u001b[2J\\u001b[31m].meanScore is 2.0" in diff
