"""``guild report``: the league's page says what results.jsonl says (every figure recomputed
here from the files, the ladder as ``league.core.ladder.build`` gives it), at any time (a league
stopped before its ladder.json, one still playing), warns when ladder.json is not the ladder of
the results, links every replay's viewer page by a relative link (beside a page written
elsewhere), escapes every name from the folder, refuses a broken folder in one line with exit
2, and in a real headless Chromium shows the ladder, the drawn chart and links that open."""

from __future__ import annotations

import contextlib
import html
import json
import os
import random
import shutil
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from conftest import needs
from leagues import F, league_args, one_error_line, rename, rows

from league.cli import report, report_html
from league.cli.guild import MEASURES, main
from league.core import ladder as ladders
from sim.rules.world import SEATS

ROOT = Path(__file__).resolve().parents[1]
EVIL = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">&amp;'


@pytest.fixture(scope="module")
def league(league12, tmp_path_factory) -> Path:
    """A copy of the shared 12-episode league (the report writes into its folder), reported."""
    out = tmp_path_factory.mktemp("report") / "l12"
    shutil.copytree(league12[0], out)
    assert main(["report", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def evil_league(league12, tmp_path_factory) -> Path:
    """The same league with ``random`` renamed to a name full of HTML, in every file."""
    out = tmp_path_factory.mktemp("evil") / "l12"
    shutil.copytree(league12[0], out)
    rename(out, "random", EVIL)
    assert main(["report", str(out)]) == 0
    return out




class Tables(HTMLParser):
    """Each table of a page by id: its rows, each ``(tr attributes, [(cell attributes,
    text)])``; a link in a cell adds its ``href`` to the cell's attributes."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[tuple[dict, list[list]]]] = {}
        self._table: list | None = None
        self._row: tuple[dict, list] | None = None
        self._cell: list | None = None
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._table = self.tables.setdefault(a.get("id") or "", [])
        elif tag == "tr" and self._table is not None:
            self._row = (a, [])
            self._table.append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = [a, ""]
            self._row[1].append(self._cell)
        elif tag == "a" and self._cell is not None:
            self._cell[0]["href"] = a.get("href")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self._cell = None
        elif tag == "tr":
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell[1] += data

    def body(self, ident: str) -> list[tuple[dict, list[list]]]:
        """The rows of a table after its header row."""
        return self.tables[ident][1:]


def page_of(out: Path) -> str:
    return (out / "report.html").read_text(encoding="utf-8")


def by_policy(table: list[tuple[dict, list[list]]]) -> dict[str, list[list]]:
    return {attrs["data-policy"]: cells for attrs, cells in table}


def signed(x: float) -> str:
    return f"{x:+.3f}"


def ladder_of(out: Path, lines: list[str] | None = None) -> dict:
    """``ladder.build`` of the league's results (or of ``lines``), as guild league writes it
    and guild verify recomputes it."""
    manifest = json.loads((out / "league.json").read_text(encoding="utf-8"))
    results = rows(out) if lines is None else [json.loads(x) for x in lines]
    built = ladders.build(results, manifest["policies"],
                          ladders.bootstrap_seed(manifest["seed"], manifest.get("commitments")))
    return json.loads(json.dumps(built))


def assert_ladder(page: str, ladder: dict) -> None:
    """The page's ladder table is ``ladder``, row by row."""
    shown = Tables(page).body("ladder-table")
    assert [attrs["data-policy"] for attrs, _ in shown] == [e["policy"]
                                                           for e in ladder["policies"]]
    for e, (_, cells) in zip(ladder["policies"], shown):
        rank, policy, mean, ci, episodes, seats, *_, faults, fallbacks = cells
        assert rank[1] == ("-" if e["rank"] is None else str(e["rank"]))
        assert policy[1] == e["policy"]
        if e["meanScore"] is None:
            assert mean[1] == "-" and "data-value" not in mean[0]
        else:
            assert float(mean[0]["data-value"]) == e["meanScore"]
            assert mean[1] == signed(e["meanScore"])
        if e["ci95"] is None:
            assert ci[1] == "n/a"
        else:
            lo, hi = e["ci95"]
            assert (float(ci[0]["data-lo"]), float(ci[0]["data-hi"])) == (lo, hi)
            assert ci[1] == f"[{signed(lo)}, {signed(hi)}]"
        assert (episodes[1], seats[1]) == (str(e["episodes"]), str(e["seats"]))
        assert faults[1] == str(e["faults"])
        assert fallbacks[1].startswith(str(e["fallbacks"]))


def warnings_in(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("guild report: warning: ")]


# --- what the page says ----------------------------------------------------------------------
def test_guild_report_writes_the_page_and_a_viewer_page_per_replay(league: Path,
                                                                    capsys) -> None:
    ids = [r["id"] for r in rows(league)]
    assert (league / "report.html").is_file()
    assert sorted(p.stem for p in (league / "view").glob("*.html")) == sorted(ids)
    # again: every viewer page is up to date and kept
    before = {p.name: p.stat().st_mtime_ns for p in (league / "view").iterdir()}
    assert main(["report", str(league)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"report: {league / 'report.html'} (12 episodes") and \
        f"0 written, {len(ids)} already up to date" in out
    assert before == {p.name: p.stat().st_mtime_ns for p in (league / "view").iterdir()}
    # a page that is not the one its replay gives is written again
    stale = league / "view" / f"{ids[3]}.html"
    stale.write_text("<!DOCTYPE html>\n<!-- guild view 00 -->\nold\n", encoding="utf-8")
    assert report.build_report(league).written == 1
    assert "data-loaded" in stale.read_text(encoding="utf-8")
    # so is one edited by hand below its stamp, and only that one
    page = stale.read_text(encoding="utf-8")
    stale.write_text(page.replace("</body>", "<p>forged</p></body>", 1), encoding="utf-8")
    assert report.build_report(league).written == 1
    assert stale.read_text(encoding="utf-8") == page


def test_each_ladder_row_is_ladder_json(league: Path) -> None:
    ladder = json.loads((league / "ladder.json").read_text(encoding="utf-8"))
    assert ladder == ladder_of(league)  # a league's own ladder: that of its results
    assert_ladder(page_of(league), ladder)


def test_head_to_head_cells_are_the_results(league: Path) -> None:
    """Recomputed here: per episode, each policy's mean score over its seats; per ordered pair
    that shared a table, the mean of the differences and how many episodes."""
    diffs: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows(league):
        seats: dict[str, list[float]] = defaultdict(list)
        for policy, score in zip(r["lineup"], r["scores"]):
            seats[policy].append(score)
        means = {p: sum(s) / len(s) for p, s in seats.items()}
        for a in means:
            for b in means:
                if a != b:
                    diffs[a, b].append(means[a] - means[b])
    shown = by_policy(Tables(page_of(league)).body("h2h-table"))
    names = list(shown)
    assert sorted(names) == sorted({p for a, b in diffs for p in (a, b)})
    for a, cells in shown.items():
        for b, (attrs, text) in zip(names, cells[1:]):  # cells[0]: the row's name
            assert (attrs["data-row"], attrs["data-col"]) == (a, b)
            if a == b:
                assert text == "-" and "data-mean" not in attrs
                continue
            want = sum(diffs[a, b]) / len(diffs[a, b])
            assert float(attrs["data-mean"]) == pytest.approx(want, abs=1e-6)
            assert int(attrs["data-n"]) == len(diffs[a, b])
            assert text.startswith(signed(want))


def test_seat_position_means_are_the_results(league: Path) -> None:
    scores: dict[tuple[str, int], list[float]] = defaultdict(list)
    for r in rows(league):
        for seat, (policy, score) in enumerate(zip(r["lineup"], r["scores"])):
            scores[policy, seat].append(score)
    shown = by_policy(Tables(page_of(league)).body("seat-table"))
    for policy, cells in shown.items():
        for seat in range(SEATS):
            attrs, text = cells[1 + seat]
            want = scores.get((policy, seat))
            if not want:
                assert text == "-"
                continue
            assert float(attrs["data-mean"]) == pytest.approx(sum(want) / len(want), abs=1e-6)
            assert int(attrs["data-n"]) == len(want)


def test_the_episodes_table_links_every_replay_relatively(league: Path) -> None:
    shown = Tables(page_of(league)).body("episodes-table")
    results = rows(league)
    assert [attrs["data-episode"] for attrs, _ in shown] == [r["id"] for r in results]
    for (_, cells), r in zip(shown, results):
        href = cells[0][0]["href"]
        assert href == f"view/{r['id']}.html" and (league / href).is_file()
        assert cells[1][1] == str(r["seed"])
        assert [c[0]["data-policy"] for c in cells[2:2 + SEATS]] == r["lineup"]
        assert [float(c[0]["data-score"]) for c in cells[2:2 + SEATS]] == r["scores"]


def test_a_report_elsewhere_and_a_moved_folder_keep_their_links(league: Path,
                                                                 tmp_path: Path) -> None:
    page = tmp_path / "pages" / "league.html"
    page.parent.mkdir()
    assert main(["report", str(league), "--out", str(page)]) == 0
    links = [c[0][0]["href"] for _, c in
             Tables(page.read_text(encoding="utf-8")).body("episodes-table")]
    assert links == [f"league-view/{r['id']}.html" for r in rows(league)]
    assert all((page.parent / h).is_file() for h in links)
    site = tmp_path / "site"  # the page and its viewer pages move together
    shutil.move(page.parent, site)
    assert all((site / h).is_file() for h in links)
    moved = tmp_path / "moved"
    shutil.copytree(league, moved)
    assert all((moved / h).is_file() for _, c in Tables(page_of(moved)).body("episodes-table")
               for h in [c[0][0]["href"]])
    # the league's own page, named: its viewer pages stay in DIR/view/
    assert report.build_report(league, league / "report.html").views == league / "view"


def test_a_read_only_league_is_reported_elsewhere(league12, tmp_path: Path, capsys) -> None:
    """A published league is read, never written: with --out the viewer pages go beside the
    page (a-view/ beside a.html), none into the league (which made "cannot make DIR/view")."""
    out = tmp_path / "published"
    shutil.copytree(league12[0], out)
    files = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    folders = [out, *(p for p in out.rglob("*") if p.is_dir())]
    site = tmp_path / "site"
    site.mkdir()
    for folder in folders:
        folder.chmod(0o555)
    try:
        assert main(["report", str(out), "--out", str(site / "a.html")]) == 0
    finally:
        for folder in folders:
            folder.chmod(0o755)
    printed = capsys.readouterr().out
    assert f"viewer pages in {site / 'a-view'}: 12 written" in printed
    assert not (out / "view").exists() and not (out / "report.html").exists()
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == files
    links = [c[0][0]["href"] for _, c in
             Tables((site / "a.html").read_text(encoding="utf-8")).body("episodes-table")]
    assert links == [f"a-view/{r['id']}.html" for r in rows(out)]
    assert all("data-loaded" in (site / h).read_text(encoding="utf-8") for h in links)


def test_the_page_needs_no_network(league: Path) -> None:
    page = page_of(league)
    assert "<script" not in page  # a static page: nothing in it runs
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page and "src=" not in page and "<link" not in page


def test_the_chart_has_a_row_of_bars_per_policy(league: Path) -> None:
    page = page_of(league)
    ladder = json.loads((league / "ladder.json").read_text(encoding="utf-8"))
    for e in ladder["policies"]:
        group = page.split(f'<g class="dist" data-policy="{e["policy"]}"', 1)[1].split("</g>")[0]
        assert 'data-n="24"' in group and group.count('class="bar"') >= 2
        assert 'class="mean"' in group and 'class="ci"' in group


def test_the_chart_marks_the_ladder_s_mean_as_the_ladder_row_shows_it() -> None:
    """Six seats of 3-decimal scores whose float mean, -0.13749999999999998, shows as -0.137,
    while the ladder's, -0.1375 to 6 decimals, shows as -0.138: the page shows one mean."""
    scores = (-0.825, 0.4, -0.525, 0.3, -0.225, 0.05)
    zeros = [0] * SEATS
    line = {"group": 0, "lineup": ["a"] * SEATS, "scores": list(scores), "turns": 14,
            "questPoints": zeros, "delivered": zeros, "robberies": zeros, "robbed": zeros,
            "fallbacks": zeros, "faults": [{}] * SEATS}
    ladder = ladders.build([line], ["a"], 0)
    mean = ladder["policies"][0]["meanScore"]
    assert signed(sum(scores) / SEATS) != signed(mean)  # the two roundings differ here
    tally = report.Tally(["a"])
    tally.add(report.Episode("e000000", 1, ("a",) * SEATS, scores, 0, 0))
    chart = report_html.chart_section(ladder, tally)
    group = chart.split('<g class="dist"', 1)[1].split("</g>", 1)[0]
    assert f'data-mean="{mean}"' in group and f"<title>a: mean {signed(mean)}</title>" in group
    [(_, cells)] = Tables(report_html.ladder_section(ladder, tally)).body("ladder-table")
    assert cells[2][1] == signed(mean)


def test_a_name_full_of_html_is_shown_as_text(evil_league: Path) -> None:
    page = page_of(evil_league)
    assert EVIL not in page and "<img" not in page and "<script" not in page
    assert html.escape(EVIL) in page
    tables = Tables(page)
    assert EVIL in [attrs["data-policy"] for attrs, _ in tables.body("ladder-table")]
    assert EVIL in [cells[1][1] for _, cells in tables.body("ladder-table")]
    assert EVIL in by_policy(tables.body("h2h-table"))
    for path in (evil_league / "view").glob("*.html"):  # the viewer pages: one script only
        assert path.read_text(encoding="utf-8").count("</script>") == 2


def test_an_unranked_policy_is_listed_below_with_its_reason(league: Path, tmp_path: Path) -> None:
    """random's seats fell back in 3 of their 14 decisions (over 10%): results.jsonl, which
    the ladder is computed from, unranks it, with the reason ladder.build gives."""
    out = tmp_path / "l"
    shutil.copytree(league, out)
    lines = []
    for r in rows(out):
        r["fallbacks"] = [3 if p == "random" else 0 for p in r["lineup"]]
        lines.append(json.dumps(r) + "\n")
    (out / "results.jsonl").write_text("".join(lines), encoding="utf-8")
    want = ladder_of(out)
    last = want["policies"][-1]
    assert last["policy"] == "random" and last["rank"] is None and last["unranked"]
    assert main(["report", str(out)]) == 0
    page = page_of(out)
    assert_ladder(page, want)
    reasons = page.split('<ul class="unranked">', 1)[1].split("</ul>")[0]
    assert f"<b>random</b>: {html.escape(last['unranked'])}" in reasons


# --- a league as it stands: stopped, still playing, edited -----------------------------------
def test_a_league_stopped_before_its_ladder_is_reported_from_its_results(league12,
                                                                         tmp_path: Path,
                                                                         capsys) -> None:
    """kill -9 in a league's first run leaves no ladder.json (nor signature.json) and the
    results cut anywhere, the last line maybe torn: the page ranks the lines there are and
    says the league is unfinished (refused before: "has no ladder.json")."""
    out = tmp_path / "l"
    shutil.copytree(league12[0], out)
    (out / "ladder.json").unlink()
    (out / "signature.json").unlink()
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(lines[:7]) + lines[7][:40], encoding="utf-8")
    assert main(["report", str(out)]) == 0
    printed = capsys.readouterr()
    assert warnings_in(printed.err) == []
    assert "(7 of 12 episodes: the league is unfinished; " in printed.out
    page = page_of(out)
    assert_ladder(page, ladder_of(out, lines[:7]))
    assert "7 of 12 episodes (unfinished)" in page.split('id="meta">', 1)[1].split("</div>")[0]
    assert "results.jsonl holds 7 of its 12 episodes" in page
    assert len(Tables(page).body("episodes-table")) == 7
    # stopped before its first episode ended: no results.jsonl yet
    (out / "results.jsonl").unlink()
    assert main(["report", str(out)]) == 0
    assert "(0 of 12 episodes: the league is unfinished; " in capsys.readouterr().out
    page = page_of(out)
    assert "No episodes yet." in page and Tables(page).body("episodes-table") == []
    assert_ladder(page, ladder_of(out, []))


def test_results_that_are_not_ladder_json_s_are_shown_with_a_warning(league12, tmp_path: Path,
                                                                     capsys) -> None:
    """One score edited: the ladder (of the results) agrees with the seat table and the
    episodes, and a line says ladder.json does not; results emptied: likewise."""
    out = tmp_path / "l"
    shutil.copytree(league12[0], out)
    assert main(["report", str(out)]) == 0
    assert warnings_in(capsys.readouterr().err) == []  # a league as it was written
    claimed = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[2])
    row["scores"][0] += 3.0
    lines[2] = json.dumps(row) + "\n"
    (out / "results.jsonl").write_text("".join(lines), encoding="utf-8")
    want = ladder_of(out)
    assert main(["report", str(out)]) == 0
    printed = capsys.readouterr()
    # the edited line's replay gives other scores, and ladder.json other means: two warnings
    warning, replays = sorted(warnings_in(printed.err), key=lambda w: "ladder.json" not in w)
    assert "line 3 (" in replays and "claims other scores than replays/" in replays, replays
    assert warning.startswith("guild report: warning: ladder.json does not match "
                              "results.jsonl (policies[")  # its first difference, as verify's
    assert " but results.jsonl gives " in warning
    assert warning.endswith(f"run guild verify {out}")
    assert "(12 episodes; " in printed.out
    page = page_of(out)
    assert html.escape(warning.removeprefix("guild report: warning: ")) in page
    assert_ladder(page, want)
    assert want["policies"] != claimed["policies"]
    everywhere = by_policy(Tables(page).body("seat-table"))
    for e in want["policies"]:
        assert float(everywhere[e["policy"]][-1][0]["data-mean"]) == \
            pytest.approx(e["meanScore"], abs=1e-6)
    shown = Tables(page).body("episodes-table")[2][1]
    assert float(shown[2][0]["data-score"]) == row["scores"][0]
    # emptied: no ladder of twelve episodes beside "0 episodes"
    (out / "results.jsonl").write_text("", encoding="utf-8")
    assert main(["report", str(out)]) == 0
    [warning] = warnings_in(capsys.readouterr().err)
    assert "(ladder.json counts 12 episodes, results.jsonl holds 0)" in warning
    page = page_of(out)
    assert_ladder(page, ladder_of(out, []))
    assert html.escape(warning.removeprefix("guild report: warning: ")) in page


def test_a_stopped_extension_is_held_to_its_earlier_ladder(league12, tmp_path: Path,
                                                           capsys) -> None:
    """A league of 12 extended to 24 and stopped at 18 holds the ladder.json of its first 12:
    no warning, as long as it is that ladder."""
    out = tmp_path / "l"
    shutil.copytree(league12[0], out)
    earlier = (out / "ladder.json").read_text(encoding="utf-8")
    assert main(league_args(out, 24, workers=1)) == 0
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(lines[:18]), encoding="utf-8")
    (out / "ladder.json").write_text(earlier, encoding="utf-8")
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    printed = capsys.readouterr()
    assert warnings_in(printed.err) == []
    assert "(18 of 24 episodes: the league is unfinished; " in printed.out
    assert_ladder(page_of(out), ladder_of(out))
    edited = json.loads(earlier)
    edited["policies"][0]["meanScore"] += 0.5
    (out / "ladder.json").write_text(json.dumps(edited), encoding="utf-8")
    assert main(["report", str(out)]) == 0
    [warning] = warnings_in(capsys.readouterr().err)
    assert (f"(policies[{edited['policies'][0]['policy']}].meanScore is "
            f"{edited['policies'][0]['meanScore']}") in warning


def test_lines_that_cannot_give_a_ladder_show_ladder_json_unchecked(league12, tmp_path: Path,
                                                                    capsys) -> None:
    """A line without what the ladder adds up (hand-made, or of an older league): the page
    shows ladder.json as it is, and says so; without ladder.json, no ladder."""
    out = tmp_path / "l"
    shutil.copytree(league12[0], out)
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[4])
    del row["questPoints"]
    lines[4] = json.dumps(row) + "\n"
    (out / "results.jsonl").write_text("".join(lines), encoding="utf-8")
    assert main(["report", str(out)]) == 0
    [warning] = warnings_in(capsys.readouterr().err)
    assert warning == ("guild report: warning: results.jsonl line 5 has no questPoints by seat, "
                       "so no ladder can be computed; the page shows ladder.json as it is, "
                       "unchecked")
    assert_ladder(page_of(out), json.loads((out / "ladder.json").read_text(encoding="utf-8")))
    (out / "ladder.json").unlink()
    assert main(["report", str(out)]) == 0
    [warning] = warnings_in(capsys.readouterr().err)
    assert warning.endswith("so no ladder can be computed; the page shows none")
    page = page_of(out)
    assert Tables(page).body("ladder-table") == []
    assert len(Tables(page).body("episodes-table")) == 12


def test_the_ladder_of_the_lines_is_ladder_build_s() -> None:
    """Built policy by policy from compact lines, it is what ladder.build gives of the whole
    file: leagues of many policies (some missing many groups), faults, fallbacks, unranked."""
    rng = random.Random(5)
    for _ in range(12):
        policies = [f"p{k}" for k in range(rng.randint(2, 12))]
        lines = []
        for group in range(rng.randint(1, 40)):
            lineup = [rng.choice(policies) for _ in range(SEATS)]
            for rotation in range(rng.choice([SEATS, SEATS, 3])):
                lines.append({
                    "group": group, "turns": rng.choice([14, 14, 9]),
                    "lineup": lineup[rotation:] + lineup[:rotation],
                    "scores": [rng.randint(-40, 60) / 20 for _ in range(SEATS)],
                    "questPoints": [rng.choice([0, 8, 20, 32]) for _ in range(SEATS)],
                    "delivered": [rng.choice([0, 2]) for _ in range(SEATS)],
                    "robberies": [rng.randint(0, 3) for _ in range(SEATS)],
                    "robbed": [rng.randint(0, 3) for _ in range(SEATS)],
                    "fallbacks": [rng.choice([0, 0, 0, 5]) for _ in range(SEATS)],
                    "faults": [rng.choice([{}, {}, {"raised": 1, "timeout": 2}])
                               for _ in range(SEATS)]})
        held = report.LadderRows()
        for line in lines:
            assert report.LadderRows.problem(line) is None
            held.add(line)
        manifest = {"policies": policies, "seed": rng.randint(0, 99)}
        for kind in ("t", "bootstrap"):  # a new ladder's interval, and the older one's
            mine = report.ladder_of(held, manifest, kind=kind)
            want = ladders.build(lines, policies, manifest["seed"], kind)
            assert {**mine, "interval": None} == {**want, "interval": None}
            first = rng.randint(0, len(lines))
            assert {**report.ladder_of(held, manifest, first, kind), "interval": None} == \
                {**ladders.build(lines[:first], policies, manifest["seed"], kind),
                 "interval": None}


def test_a_secret_draw_says_what_its_intervals_are(league: Path, tmp_path: Path) -> None:
    """No league seed: the t interval needs none, and the page says what the intervals are
    (a bootstrap ladder's, seeded from the commitment to the secret, is in
    tests/test_ladder_intervals.py); the intervals are ladder.json's."""
    out = tmp_path / "secret"
    assert main(["league", "--policies", "factor,magpie", "--episodes", "12", "--turns", "6",
                 "--workers", "1", "--out", str(out)]) == 0
    manifest = json.loads((out / "league.json").read_text(encoding="utf-8"))
    assert manifest["seed"] is None and manifest["commitments"]
    assert main(["report", str(out)]) == 0
    page = html.unescape(page_of(out))
    assert_ladder(page_of(out), json.loads((out / "ladder.json").read_text(encoding="utf-8")))
    assert "league seed" not in page and "secret draw" in page
    assert ladders.T_INTERVAL in page and "seeded from" not in page
    assert main(["verify", str(out)]) == 0  # ladder.json says it too, as verify derives it
    assert ladders.T_INTERVAL in html.unescape(page_of(league))  # a public draw's too


def test_the_seat_caption_says_initiative_rotates_as_the_replays_do(league: Path) -> None:
    """RULES §6.3: the order of turn t is [(k + t) mod 6]; it said seat 0 acts first in every
    turn, citing §6.6."""
    caption = page_of(league).split('id="seats"', 1)[1].split("</p>", 1)[0]
    assert "in turn t, seat t mod 6 acts first" in caption and "RULES §6.3" in caption
    assert "every turn" not in caption
    rules = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert "[(k + turn) mod 6 for k in 0..5]" in rules.split("### §6.3 ", 1)[1].split("### ")[0]
    payload = json.loads((league / "replays" / "e000000.json").read_text(encoding="utf-8"))
    acts = [e for e in payload["events"] if e["kind"] == "act"]
    assert {e["turn"] for e in acts} == set(range(payload["config"]["turns"]))
    assert all(e["order"] == (e["seat"] - e["turn"]) % SEATS for e in acts)


# --- guild league --report ---------------------------------------------------------------------
def test_guild_league_report_prints_what_the_ladder_measures_and_the_report(tmp_path: Path,
                                                                            capsys) -> None:
    out = tmp_path / "l"
    raiser = f"trusted:{F}Raiser"  # every decision falls back: faults, fallbacks, unranked
    assert main(league_args(out, 6, "--report", policies=f"factor,magpie,{raiser}",
                            workers=1)) == 0
    printed = capsys.readouterr().out.splitlines()
    assert MEASURES in printed and MEASURES.startswith("ladder: ")
    table = next(i for i, line in enumerate(printed) if line.startswith("rank "))
    assert printed.index(MEASURES) == table - 1  # said just before the ladder
    assert printed[-1] == f"report: {out / 'report.html'}"
    page = page_of(out)
    ladder = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
    entry = next(e for e in ladder["policies"] if e["policy"] == raiser)
    assert entry["faults"] > 0 and entry["unranked"]
    cells = by_policy(Tables(page).body("ladder-table"))[raiser]
    assert cells[0][1] == "-" and cells[-2][1] == str(entry["faults"])
    assert html.escape(entry["unranked"]) in page
    assert sorted(p.stem for p in (out / "view").iterdir()) == [r["id"] for r in rows(out)]


def test_a_reported_league_still_verifies_and_resumes(league: Path, tmp_path: Path,
                                                      capsys) -> None:
    """The page and the viewer pages are extra files: verify and a resumed run ignore them."""
    out = tmp_path / "l"
    shutil.copytree(league, out)
    assert main(["verify", str(out)]) == 0
    assert main(league_args(out, 12, "--report")) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"report: {out / 'report.html'}"


# --- broken folders --------------------------------------------------------------------------
def _edit(out: Path, name: str, text: str | bytes) -> None:
    path = out / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")


def _row_edit(out: Path, change: dict) -> None:
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = json.dumps({**json.loads(lines[2]), **change}) + "\n"
    _edit(out, "results.jsonl", "".join(lines))


def _tampered(out: Path) -> None:
    path = out / "replays" / "e000004.json"
    payload = json.loads(path.read_text(encoding="utf-8"))
    acts = [i for i, e in enumerate(payload["events"]) if e["kind"] == "act"]
    payload["events"][acts[7]]["coin"] = 999
    path.write_text(json.dumps(payload), encoding="utf-8")


BROKEN = {
    "no league.json": (lambda o: (o / "league.json").unlink(), "has no league.json"),
    "league.json not JSON": (lambda o: _edit(o, "league.json", "{"), "league.json is not JSON"),
    "league.json no league": (lambda o: _edit(o, "league.json", "[1]"),
                              "does not describe a league"),
    "results line": (lambda o: _edit(o, "results.jsonl", "{}\n{\n"), "line 1 has no episode id"),
    "results JSON": (lambda o: _edit(o, "results.jsonl", "nope\n"),
                     "results.jsonl line 1 is not valid JSON"),
    "id escapes": (lambda o: _row_edit(o, {"id": "../../../etc/passwd"}), "line 3 has no episode"),
    "bad scores": (lambda o: _row_edit(o, {"scores": [1e308] * 6}), "line 3 has no 6 scores"),
    "short lineup": (lambda o: _row_edit(o, {"lineup": ["factor"]}), "has no lineup of 6"),
    "long line": (lambda o: _edit(o, "results.jsonl", "[" + " " * report.MAX_LINE_BYTES + "]\n"),
                  "line 1 is over 1,048,576 bytes"),
    "no replay": (lambda o: (o / "replays" / "e000005.json").unlink(),
                  "e000005.json: no such file"),
    "tampered replay": (_tampered, "e000004.json: the replay does not re-derive"),
    "view link": (lambda o: (o / "view").symlink_to(o / "replays"), "is a symbolic link"),
    "results a directory": (lambda o: ((o / "results.jsonl").unlink(),
                                       (o / "results.jsonl").mkdir()), "is a directory"),
}


UNREADABLE_LADDER = {  # the page is made all the same, of the results, with a warning
    "truncated": (lambda o: _edit(o, "ladder.json", (o / "ladder.json").read_text()[:200]),
                  "ladder.json is not JSON"),
    "deep": (lambda o: _edit(o, "ladder.json", "[" * 100_000 + "]" * 100_000),
             "ladder.json is not valid JSON (or is nested too deeply)"),
    "entry": (lambda o: _edit(o, "ladder.json", '{"policies": [{"policy": "x", '
                              '"meanScore": "high"}]}'), "entry 1 has a mean score"),
    "not UTF-8": (lambda o: _edit(o, "ladder.json", b"\xff\xfe{}"), "is not UTF-8"),
    "huge": (lambda o: os.truncate(o / "ladder.json", report.MAX_JSON_BYTES + 1),
             "is over 67,108,864 bytes"),
    "a FIFO": (lambda o: ((o / "ladder.json").unlink(), os.mkfifo(o / "ladder.json")),
               "not a regular file"),
}


@pytest.mark.parametrize("case", list(UNREADABLE_LADDER))
def test_an_unreadable_ladder_json_is_a_warning_and_the_page_is_made(
        league12, tmp_path: Path, capsys, case: str) -> None:
    out = tmp_path / "l"
    shutil.copytree(league12[0], out)
    want = ladder_of(out)
    breaks, words = UNREADABLE_LADDER[case]
    breaks(out)
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    [warning] = warnings_in(capsys.readouterr().err)
    assert words in warning and warning.endswith(f"the page shows the ladder of results.jsonl: "
                                                 f"run guild verify {out}")
    assert_ladder(page_of(out), want)


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_folder_is_one_line_and_exit_2(league12, tmp_path: Path, capsys,
                                                case: str) -> None:
    out = tmp_path / "l"
    shutil.copytree(league12[0], out)
    breaks, words = BROKEN[case]
    breaks(out)
    assert main(["report", str(out)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith("guild report: error: ") and words in line, line
    assert not (out / "report.html").exists()


def test_not_a_folder_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    for path, words in ((tmp_path / "missing", "is not a directory"),
                        (tmp_path, "has no league.json")):
        assert main(["report", str(path)]) == 2
        assert words in one_error_line(capsys.readouterr().err)


def test_a_results_file_over_the_cap_is_refused_unread(league12, tmp_path: Path, monkeypatch,
                                                       capsys) -> None:
    out = tmp_path / "l"
    shutil.copytree(league12[0], out)
    monkeypatch.setattr(report, "MAX_RESULTS_BYTES", 1000)
    assert main(["report", str(out)]) == 2
    assert "results.jsonl is over 1,000 bytes" in one_error_line(capsys.readouterr().err)


def test_devices_and_fifos_are_refused_before_reading(league12, tmp_path: Path) -> None:
    """In a child process with a deadline and capped memory: /dev/zero would be read without
    end and a FIFO would block its reader."""
    needs(hasattr(os, "mkfifo") and os.path.exists("/dev/zero"), "FIFOs and /dev/zero (POSIX)")
    for name, make in (("ladder.json", lambda p: p.symlink_to("/dev/zero")),
                       ("results.jsonl", os.mkfifo)):
        out = tmp_path / name
        shutil.copytree(league12[0], out)
        (out / name).unlink()
        make(out / name)
        done = _guild_process("report", str(out))
        # ladder.json: a warning, the page made of the results; results.jsonl: refused
        assert done.returncode == (0 if name == "ladder.json" else 2), done.stderr[-500:]
        line = one_error_line(done.stderr)
        assert "not a regular file" in line and name in line, line


def _guild_process(*args: str) -> subprocess.CompletedProcess:
    def limit() -> None:
        import resource  # POSIX

        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    return subprocess.run([sys.executable, "-m", "league", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, preexec_fn=limit)


# --- a real browser --------------------------------------------------------------------------
def _watch(page: Any, errors: list[str]) -> None:
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"request {r.url}"))


@contextlib.contextmanager
def _opened(chromium: Any, page_file: Path) -> Iterator[tuple[Any, list[str]]]:
    """``page_file`` in headless Chromium at 1400 x 1000: the page and the errors it reports
    (console errors, page errors, failed requests)."""
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    try:
        errors: list[str] = []
        _watch(page, errors)
        page.goto(page_file.as_uri())
        yield page, errors
    finally:
        page.close()


def test_the_report_in_headless_chromium(league: Path, tmp_path: Path, chromium: Any) -> None:
    ladder = json.loads((league / "ladder.json").read_text(encoding="utf-8"))
    results = rows(league)
    with _opened(chromium, league / "report.html") as (page, errors):
        # a ladder row per policy, with its interval
        assert page.locator("#ladder-table tbody tr").count() == len(ladder["policies"])
        for e in ladder["policies"]:
            row = page.locator(f'#ladder-table tr[data-policy="{e["policy"]}"]')
            lo, hi = e["ci95"]
            assert row.locator("td.ci").inner_text() == f"[{signed(lo)}, {signed(hi)}]"
            assert row.locator("td.mean").inner_text() == signed(e["meanScore"])
        # head to head: a cell per ordered pair, a figure off the diagonal
        k = len(ladder["policies"])
        assert page.locator("#h2h-table tbody td").count() == k * k
        assert page.locator("#h2h-table tbody td[data-mean]").count() == k * (k - 1)
        # the chart: drawn shapes of non-zero size, a row per policy
        assert page.locator("#chart g.dist").count() == k
        boxes = page.eval_on_selector_all(
            "#chart rect", "els => els.map(e => { const b = e.getBoundingClientRect(); "
            "return [e.getAttribute('class'), b.width, b.height]; })")
        assert {c for c, _, _ in boxes} == {"bar", "mean", "ci"}
        assert all(w > 0 and h > 0 for _, w, h in boxes), boxes
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 20_000
        # every replay link resolves to a file and opens a viewer page
        links = page.eval_on_selector_all("#episodes-table a", "els => els.map(e => e.href)")
        assert len(links) == len(results)
        for url in links:
            assert Path(unquote(urlparse(url).path)).is_file(), url
        page.click("#episodes-table a >> nth=0")
        page.wait_for_selector("body[data-loaded=true]", timeout=10_000)
        assert page.url == links[0]
        for url in links[1:]:
            page.goto(url)
            page.wait_for_selector("body[data-loaded=true]", timeout=10_000)
        assert errors == []


def test_a_name_full_of_html_does_not_run_in_chromium(evil_league: Path, chromium: Any) -> None:
    with _opened(chromium, evil_league / "report.html") as (page, errors):
        names = page.eval_on_selector_all("#ladder-table td.policy",
                                          "els => els.map(e => e.textContent)")
        assert EVIL in names
        assert page.evaluate("window.pwned") is None
        assert page.locator("img, script").count() == 0
        page.click("#episodes-table a >> nth=0")
        page.wait_for_selector("body[data-loaded=true]", timeout=10_000)
        assert page.evaluate("window.pwned") is None
        assert errors == []


def test_a_viewer_page_counts_robberies_in_words(league: Path, chromium: Any) -> None:
    """A seat robbed once, at the last frame: "robbed once", not "robbed 1 times"."""
    def times(k: int) -> str:
        return {1: "once", 2: "twice"}.get(k, f"{k} times")

    ep, seat = next((r, s) for r in rows(league) for s in range(SEATS) if r["robbed"][s] == 1)
    with _opened(chromium, league / "view" / f"{ep['id']}.html") as (page, errors):
        page.wait_for_selector("body[data-loaded=true]", timeout=10_000)
        page.click("#last")
        title = page.get_attribute(f'#scoreboard tr[data-seat="{seat}"] td[title]', "title")
        assert title == f"robbed once; robbed others {times(ep['robberies'][seat])}"
        assert errors == []


def test_a_league_from_before_the_ranking_rule_is_shown_ranked_as_it_was(tmp_path: Path,
                                                                         capsys) -> None:
    """Lines without fallbackPlay and a ladder.json without ranking: the league ranked every
    policy by its mean, as guild verify accepts; the page shows that, with no warning (it
    showed a policy that always fell back as unranked, unlike ladder.json, and said nothing)."""
    from league.core.verify_claims import before_ranking

    out = tmp_path / "old"
    assert main(league_args(out, 12, "--turns", "6", "--trust",
                            policies=f"factor,magpie,{F}Raiser", workers=1)) == 0
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    (out / "results.jsonl").write_text("".join(
        json.dumps({k: v for k, v in r.items() if k != "fallbackPlay"}) + "\n" for r in lines))
    built = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
    assert any(not e["ranked"] for e in built["policies"])  # the rule would unrank Raiser
    old = before_ranking(built)
    (out / "ladder.json").write_text(json.dumps(old), encoding="utf-8")
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert warnings_in(capsys.readouterr().err) == []
    shown = Tables(page_of(out)).body("ladder-table")
    assert [(attrs["data-policy"], cells[0][1]) for attrs, cells in shown] == [
        (e["policy"], str(e["rank"])) for e in old["policies"]]
