"""``guild report``: the league's page says what ladder.json and results.jsonl say (every figure
recomputed here from the files), links every replay's viewer page by a relative link, escapes
every name from the folder, refuses a broken folder in one line with exit 2, and in a real
headless Chromium shows the ladder, the drawn chart and links that open."""

from __future__ import annotations

import contextlib
import html
import json
import os
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
from conftest import needs, needs_module
from leagues import F, league_args, one_error_line, rename, rows

from league.cli import report
from league.cli.guild import MEASURES, main
from sim.rules.world import SEATS

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
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
    shown = Tables(page_of(league)).body("ladder-table")
    assert [attrs["data-policy"] for attrs, _ in shown] == [e["policy"]
                                                           for e in ladder["policies"]]
    for e, (_, cells) in zip(ladder["policies"], shown):
        rank, policy, mean, ci, *_, faults, fallbacks = cells
        assert rank[1] == str(e["rank"]) and policy[1] == e["policy"]
        assert float(mean[0]["data-value"]) == e["meanScore"]
        assert mean[1] == signed(e["meanScore"])
        lo, hi = e["ci95"]
        assert (float(ci[0]["data-lo"]), float(ci[0]["data-hi"])) == (lo, hi)
        assert ci[1] == f"[{signed(lo)}, {signed(hi)}]"
        assert faults[1] == str(e["faults"])
        assert fallbacks[1].startswith(str(e["fallbacks"]))


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


def test_a_report_elsewhere_links_back_and_a_moved_folder_keeps_its_links(league: Path,
                                                                          tmp_path: Path) -> None:
    page = tmp_path / "pages" / "league.html"
    page.parent.mkdir()
    assert main(["report", str(league), "--out", str(page)]) == 0
    links = [c[0][0]["href"] for _, c in
             Tables(page.read_text(encoding="utf-8")).body("episodes-table")]
    assert links and all(not Path(h).is_absolute() and ":" not in h for h in links)
    assert all((page.parent / h).resolve().is_file() for h in links)
    moved = tmp_path / "moved"
    shutil.copytree(league, moved)
    assert all((moved / h).is_file() for _, c in Tables(page_of(moved)).body("episodes-table")
               for h in [c[0][0]["href"]])


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
    out = tmp_path / "l"
    shutil.copytree(league, out)
    ladder = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
    last = ladder["policies"][-1]
    last.update(rank=None, ranked=False, unranked="40.0% of its decisions were not its own")
    (out / "ladder.json").write_text(json.dumps(ladder), encoding="utf-8")
    assert main(["report", str(out)]) == 0
    page = page_of(out)
    attrs, cells = Tables(page).body("ladder-table")[-1]
    assert attrs["data-policy"] == last["policy"] and cells[0][1] == "-"
    reasons = page.split('<ul class="unranked">', 1)[1].split("</ul>")[0]
    assert f"<b>{last['policy']}</b>: 40.0% of its decisions were not its own" in reasons


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
    "no ladder": (lambda o: (o / "ladder.json").unlink(), "has no ladder.json"),
    "ladder deep": (lambda o: _edit(o, "ladder.json", "[" * 100_000 + "]" * 100_000),
                    "ladder.json is not valid JSON (or is nested too deeply)"),
    "ladder entry": (lambda o: _edit(o, "ladder.json", '{"policies": [{"policy": "x", '
                                     '"meanScore": "high"}]}'), "entry 1 has a mean score"),
    "ladder not UTF-8": (lambda o: _edit(o, "ladder.json", b"\xff\xfe{}"), "is not UTF-8"),
    "no results": (lambda o: (o / "results.jsonl").unlink(), "results.jsonl: no such file"),
    "results line": (lambda o: _edit(o, "results.jsonl", "{}\n{\n"), "line 1 has no episode id"),
    "results JSON": (lambda o: _edit(o, "results.jsonl", "nope\n"),
                     "results.jsonl line 1 is not valid JSON"),
    "id escapes": (lambda o: _row_edit(o, {"id": "../../../etc/passwd"}), "line 3 has no episode"),
    "bad scores": (lambda o: _row_edit(o, {"scores": [1e308] * 6}), "line 3 has no 6 scores"),
    "short lineup": (lambda o: _row_edit(o, {"lineup": ["factor"]}), "has no lineup of 6"),
    "long line": (lambda o: _edit(o, "results.jsonl", "[" + " " * report.MAX_LINE_BYTES + "]\n"),
                  "line 1 is over 1,048,576 bytes"),
    "huge ladder": (lambda o: os.truncate(o / "ladder.json", report.MAX_JSON_BYTES + 1),
                    "is over 67,108,864 bytes"),
    "no replay": (lambda o: (o / "replays" / "e000005.json").unlink(),
                  "e000005.json: no such file"),
    "tampered replay": (_tampered, "e000004.json: the replay does not re-derive"),
    "view link": (lambda o: (o / "view").symlink_to(o / "replays"), "is a symbolic link"),
    "results a directory": (lambda o: ((o / "results.jsonl").unlink(),
                                       (o / "results.jsonl").mkdir()), "is a directory"),
}


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
        assert done.returncode == 2, done.stderr[-500:]
        line = one_error_line(done.stderr)
        assert "not a regular file" in line and name in line, line


def _guild_process(*args: str) -> subprocess.CompletedProcess:
    def limit() -> None:
        import resource  # POSIX

        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    return subprocess.run([sys.executable, "-m", "league", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, preexec_fn=limit)


# --- a real browser --------------------------------------------------------------------------
def _browser(pw: Any) -> Any:
    needs(bool(os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)),
          f"Chromium at {CHROMIUM} (apt-get install chromium, or set CHROMIUM)")
    return pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)


def _watch(page: Any, errors: list[str]) -> None:
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"request {r.url}"))


@contextlib.contextmanager
def _opened(page_file: Path) -> Iterator[tuple[Any, list[str]]]:
    """``page_file`` in headless Chromium at 1400 x 1000: the page and the errors it reports
    (console errors, page errors, failed requests)."""
    sync_api = needs_module("playwright.sync_api", "playwright")
    with sync_api.sync_playwright() as pw:
        browser = _browser(pw)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            _watch(page, errors)
            page.goto(page_file.as_uri())
            yield page, errors
        finally:
            browser.close()


def test_the_report_in_headless_chromium(league: Path, tmp_path: Path) -> None:
    ladder = json.loads((league / "ladder.json").read_text(encoding="utf-8"))
    results = rows(league)
    with _opened(league / "report.html") as (page, errors):
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


def test_a_name_full_of_html_does_not_run_in_chromium(evil_league: Path) -> None:
    with _opened(evil_league / "report.html") as (page, errors):
        names = page.eval_on_selector_all("#ladder-table td.policy",
                                          "els => els.map(e => e.textContent)")
        assert EVIL in names
        assert page.evaluate("window.pwned") is None
        assert page.locator("img, script").count() == 0
        page.click("#episodes-table a >> nth=0")
        page.wait_for_selector("body[data-loaded=true]", timeout=10_000)
        assert page.evaluate("window.pwned") is None
        assert errors == []
