"""Who the ladder ranks, and how: a policy that held no seat is unranked, with the reason, and
ranked policies of equal mean score (as ladder.json records it) share a rank (1, 1, 3); a
ladder of the bootstrap, written before these rules, is held to the ranks it was written with."""

from __future__ import annotations

import html
import json
import shutil

from test_ladder_intervals import as_bootstrap, row

from league.cli.guild import main
from league.core import ladder as ladders
from sim.rules.world import SEATS

BUILT_IN = ("champion", "factor", "magpie", "random")


def test_a_policy_that_held_no_seat_is_unranked() -> None:
    policies = [f"p{k}" for k in range(8)]
    base = policies[:SEATS]
    rs = [row(0, lineup, [int(p[1:]) / 4 for p in lineup])
          for lineup in (base[r:] + base[:r] for r in range(2))]
    seated = {p for r in rs for p in r["lineup"]}
    assert len(seated) == 6
    ladder = ladders.build(rs, policies, 0)
    bench = [e for e in ladder["policies"] if e["policy"] not in seated]
    assert [e["policy"] for e in ladder["policies"][-2:]] == [e["policy"] for e in bench]
    for e in bench:
        assert (e["seats"], e["meanScore"], e["rank"], e["ranked"]) == (0, None, None, False)
        assert "no seat" in e["unranked"]
    assert all(e["ranked"] and e["rank"] is not None for e in ladder["policies"][:6])
    printed = ladders.table(ladder)
    for e in bench:
        assert f"unranked: {e['policy']}: {e['unranked']}" in printed.splitlines()
        assert [line.split()[0] for line in printed.splitlines()
                if line.split()[1:2] == [e["policy"]]] == ["-"]


def test_a_league_too_short_to_seat_every_policy_leaves_the_rest_unranked(tmp_path,
                                                                          capsys) -> None:
    """Eight policies, one group of six seats: two never sit. ladder.json, the printed
    ladder, verify and the page agree."""
    out = tmp_path / "eight"
    policies = [*BUILT_IN, *(f"trusted:{p}" for p in BUILT_IN)]
    assert main(["league", "--policies", ",".join(policies), "--episodes", "6", "--seed", "3",
                 "--public-draw", "--workers", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    ladder = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
    bench = [e for e in ladder["policies"] if e["seats"] == 0]
    assert len(bench) == 2 and ladder["policies"][-2:] == bench
    assert all(not e["ranked"] and e["rank"] is None and "no seat" in e["unranked"]
               for e in bench)
    assert [e["rank"] for e in ladder["policies"][:6]] == sorted(
        e["rank"] for e in ladder["policies"][:6])
    for e in bench:
        assert f"unranked: {e['policy']}: {e['unranked']}" in printed
    assert main(["verify", str(out)]) == 0
    assert main(["report", str(out)]) == 0
    page = html.unescape((out / "report.html").read_text(encoding="utf-8"))
    unranked = page.split('<ul class="unranked">', 1)[1].split("</ul>", 1)[0]
    for e in bench:
        assert f"<li><b>{e['policy']}</b>: {e['unranked']}</li>" in unranked


def _tied_rows() -> list[dict]:
    """One group: a and b score alike, c 4e-7 more (the same to 6 decimals), d 0.0004 less
    (printed the same to 3, recorded apart), e less."""
    scores = {"a": 1.5, "b": 1.5, "c": 1.5000004, "d": 1.4996, "e": 0.25}
    lineups = [["a", "b", "c", "d", "e", "a"], ["b", "c", "d", "e", "a", "b"],
               ["c", "d", "e", "a", "b", "c"]]
    return [row(0, lineup, [scores[p] for p in lineup]) for lineup in lineups]


def test_equal_recorded_means_share_a_rank_and_the_next_skips() -> None:
    ladder = ladders.build(_tied_rows(), ["e", "d", "c", "b", "a"], 0)
    got = [(e["rank"], e["policy"], e["meanScore"]) for e in ladder["policies"]]
    assert got == [(1, "a", 1.5), (1, "b", 1.5), (1, "c", 1.5), (4, "d", 1.4996),
                   (5, "e", 0.25)]
    printed = ladders.table(ladder)
    assert [line.split()[0] for line in printed.splitlines()[2:7]] == ["1", "1", "1", "4", "5"]
    assert "share a rank" in printed.splitlines()[7]
    assert "share a rank" not in ladders.table(ladders.build(_tied_rows(), ["a", "e"], 0))


def test_a_tied_league_ranks_both_first(tmp_path, capsys) -> None:
    """factor twice, one of them trusted: the same play, the same mean to the last digit."""
    out = tmp_path / "tie"
    assert main(["league", "--policies", "trusted:factor,factor", "--episodes", "12",
                 "--seed", "5", "--public-draw", "--workers", "1", "--out", str(out)]) == 0
    ladder = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
    first, second = ladder["policies"]
    assert first["meanScore"] == second["meanScore"]
    assert (first["rank"], second["rank"]) == (1, 1)
    assert [e["policy"] for e in ladder["policies"]] == ["factor", "trusted:factor"]
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0


def test_a_bootstrap_ladder_keeps_the_ranks_it_was_written_with(tmp_path, capsys) -> None:
    """Before these rules a policy without a seat was ranked, and a tie broken by name: such a
    ladder.json verifies as written."""
    legacy = ladders.build(_tied_rows(), ["a", "b", "c", "d", "e", "z"], 0, "bootstrap")
    assert [(e["rank"], e["policy"], e["ranked"]) for e in legacy["policies"]] == [
        (1, "a", True), (2, "b", True), (3, "c", True), (4, "d", True), (5, "e", True),
        (6, "z", True)]
    out = tmp_path / "eight"
    policies = [*BUILT_IN, *(f"trusted:{p}" for p in BUILT_IN)]
    assert main(["league", "--policies", ",".join(policies), "--episodes", "6", "--seed", "3",
                 "--public-draw", "--workers", "1", "--out", str(out)]) == 0
    old = as_bootstrap(out)
    assert [e["rank"] for e in old["policies"]] == list(range(1, 9))
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    assert main(["report", str(copy)]) == 0
    assert "warning" not in capsys.readouterr().err


def test_the_printed_ladder_shows_policy_names_inert() -> None:
    """A spec is its author's text: an escape sequence in it retitled the terminal, a bidi
    override reordered the row, and a newline forged a row of its own."""
    nasty = "exec:bot \x1b]0;PWNED\x07\x1b[41m\u202e\u200b\n1  alice:Champ  +9.999"
    policies = [nasty, "factor", "magpie", "random", "p4", "p5"]
    rs = [row(0, policies[r:] + policies[:r], [1.0] * SEATS) for r in range(2)]
    printed = ladders.table(ladders.build(rs, policies, 0))
    assert not any(c in printed for c in "\x1b\x07\u202e\u200b")
    assert len(printed.splitlines()) == 2 + len(policies) + 1  # head, rule, rows, note
    assert "exec:bot \\u001b]0;PWNED\\u0007\\u001b[41m\\u202e\\u200b\\n1  alice:Champ" in printed


def test_the_printed_ladder_shows_long_names_whole() -> None:
    """Two long exec: paths that differ at their end must stay two names."""
    folder = "exec:python3 /" + "/".join(["deep"] * 70)
    policies = [f"{folder}/alice.py", f"{folder}/bob.py", "factor", "magpie", "random", "p5"]
    rs = [row(0, policies[r:] + policies[:r], [1.0] * SEATS) for r in range(2)]
    printed = ladders.table(ladders.build(rs, policies, 0))
    assert all(p in printed for p in policies[:2])
