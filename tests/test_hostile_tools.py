"""``guild report`` and ``guild play`` against a hostile or careless user.

The report: ``--out`` never replaces a file the report did not write (the league's own results,
ladder, manifest, replays), nor writes into the league's folders; names with controls,
bidirectional overrides or bytes that are not UTF-8 reach the page as visible escapes; a
results line seating a policy the league does not list is refused (else any number of names
grows the head-to-head table as their square), and that table stops at
``MAX_HEAD_TO_HEAD`` policies; a big folder costs bounded time and memory; a folder being
written is reported as it stood.  Play: nothing typed or said reaches the terminal as an
escape sequence; an opponent whose policy raises or answers garbage waits and the game goes
on; ``--replay`` is checked before the game; Ctrl-C prints the results and exits 130; the
compact turn shows nothing of another seat's purse, pack or commissions.
"""

from __future__ import annotations

import html
import io
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import needs, needs_module
from hypothesis import given, settings
from hypothesis import strategies as st
from leagues import F, one_error_line, rename, rows
from scenario import fork, played_game

from agents import make_policy
from agents.baselines.rules import WAIT
from league.cli import play_text, report, report_html, terminal
from league.cli.guild import main
from sim import Game, GameConfig
from sim.rules.world import MAX_TURNS, SEATS

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
# What could drive a terminal or disguise text: ESC sequences (clear screen, window title),
# CR, BEL, NUL, C1's CSI, a right-to-left override, a lone surrogate (a name not UTF-8).
RAW = ("\x1b", "\r", "\x07", "\x00", "\x9b", "\u202e", "\ud800")
NASTY = 'rand\x1b[2J\x1b]0;pwned\x07\r\x00\x9b31m\u202eom\ud800<b>"'


def league_copy(league12: tuple[Path, str, str], tmp_path: Path, name: str = "l") -> Path:
    out = tmp_path / name
    shutil.copytree(league12[0], out)
    return out


def snapshot(out: Path) -> dict[str, bytes]:
    """Every file of the league as it is (the report may add report.html and view/ only)."""
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != report.REPORT and report.VIEWS not in p.parts}


def report_fails(args: list[str], capsys: pytest.CaptureFixture, words: str) -> str:
    assert main(["report", *args]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith("guild report: error: ") and words in line, line
    return line




# --- report: --out ---------------------------------------------------------------------------
NOT_OURS = "is not a page guild report wrote"
OWN_FOLDER = "holds the league's own files; write elsewhere"


@pytest.mark.parametrize("own, words", [
    ("results.jsonl", NOT_OURS), ("ladder.json", NOT_OURS), ("league.json", NOT_OURS),
    ("signature.json", NOT_OURS), ("replays/e000001.json", OWN_FOLDER)])
def test_out_never_replaces_a_league_file(league12, tmp_path: Path, capsys, own: str,
                                          words: str) -> None:
    """``--out results.jsonl`` wrote the page over the league's results, exit 0."""
    out = league_copy(league12, tmp_path)
    before = snapshot(out)
    report_fails([str(out), "--out", str(out / own)], capsys, words)
    assert snapshot(out) == before and not (out / "view").exists()  # refused before writing


def test_out_may_replace_a_page_of_its_own_elsewhere(league12, tmp_path: Path) -> None:
    out = league_copy(league12, tmp_path)
    page = tmp_path / "site" / "index.html"
    page.parent.mkdir()
    for _ in range(2):
        assert main(["report", str(out), "--out", str(page)]) == 0
    assert report.PAGE_MARK.decode() in page.read_text(encoding="utf-8")


@pytest.mark.parametrize("where", ["view/x.html", "replays/x.html", "view/e000000.html",
                                   "replays/deeper/x.html"])
def test_out_in_the_leagues_folders_is_refused(league12, tmp_path: Path, capsys,
                                               where: str) -> None:
    """A page in view/ was later overwritten by a viewer page of the same name (and the
    other way round); in replays/ it sat among the league's replays."""
    out = league_copy(league12, tmp_path)
    (out / "view").mkdir()
    report_fails([str(out), "--out", str(out / where)], capsys, OWN_FOLDER)
    assert not (out / where).exists() and not (out / report.REPORT).exists()


def test_out_dash_nul_directory_and_link_are_one_line(league12, tmp_path: Path, capsys,
                                                     monkeypatch) -> None:
    """``--out -`` wrote a file named ``-``; a NUL raised a traceback (ValueError); a link
    to a file elsewhere is not a page of the report's."""
    out = league_copy(league12, tmp_path)
    monkeypatch.chdir(tmp_path)
    report_fails([str(out), "--out", "-"], capsys, "--out -: ")
    assert not (tmp_path / "-").exists()
    report_fails([str(out), "--out", str(tmp_path / "a\0b.html")], capsys, "NUL")
    report_fails([str(out), "--out", str(tmp_path)], capsys, "is a directory")
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me", encoding="utf-8")
    (tmp_path / "link.html").symlink_to(precious)
    report_fails([str(out), "--out", str(tmp_path / "link.html")], capsys, "not a regular file")
    assert precious.read_text(encoding="utf-8") == "keep me"
    report_fails([str(out / "a\0b")], capsys, "is not a directory")


def test_out_where_nothing_can_be_written_is_one_line(league12, tmp_path: Path,
                                                      capsys) -> None:
    needs(os.path.isdir("/proc/self"), "/proc (Linux), a folder no one can write in")
    out = league_copy(league12, tmp_path)
    report_fails([str(out), "--out", "/proc/self/report.html"], capsys, "cannot write")
    report_fails([str(out), "--out", str(tmp_path / "missing" / "r.html")], capsys,
                 "cannot write")


# --- report: what the folder holds ----------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_esc_leaves_nothing_that_acts_or_hides(text: str) -> None:
    shown = report_html.esc(text)
    shown.encode("utf-8")  # a lone surrogate raised UnicodeEncodeError when the page was written
    assert not any(c in shown for c in '<>"\'') and shown.isprintable()
    if text.isprintable():
        assert html.unescape(shown) == text  # ordinary text is shown as it is
    # and a zero-width space (two names that look alike) is shown too
    assert report_html.esc("bot\u200b") == "bot\\u200b"


def test_a_name_with_controls_and_overrides_is_shown_as_escapes(league12, tmp_path: Path
                                                                ) -> None:
    """A right-to-left override in a name reversed the scores after it in the episodes
    table; a lone surrogate ended the run in a traceback."""
    out = league_copy(league12, tmp_path)
    rename(out, "random", NASTY, replays=False)  # the viewer's pages: below
    assert main(["report", str(out)]) == 0
    page = (out / "report.html").read_bytes().decode("utf-8")  # strict: valid UTF-8
    assert not any(c in page for c in RAW)
    assert "rand\\u001b[2J" in page and "\\u202eom\\ud800&lt;b&gt;&quot;" in page


def test_a_replay_holding_a_lone_surrogate_shows_it_inert(league12, tmp_path: Path,
                                                          capsys) -> None:
    """``\\ud800`` is valid JSON but no text: writing its viewer page raised
    UnicodeEncodeError, a traceback. What a policy wrote, its name included, is shown as its
    escape, so the page is written and says it."""
    out = league_copy(league12, tmp_path)
    path = out / "replays" / "e000003.json"
    payload = json.loads(path.read_text(encoding="utf-8"))
    payload["policyNames"][0] = payload["results"]["names"][0] = "x\ud800"
    path.write_text(json.dumps(payload), encoding="utf-8")
    assert main(["report", str(out)]) == 0
    assert "\\ud800" in (out / "view" / "e000003.html").read_text(encoding="utf-8")
    page = tmp_path / "one.html"
    assert main(["view", str(path), "-o", str(page)]) == 0
    assert "\\ud800" in page.read_text(encoding="utf-8")
    assert "Traceback" not in capsys.readouterr().err


def test_a_folder_name_that_is_not_utf8(league12, tmp_path: Path) -> None:
    """Its lone surrogates raised UnicodeEncodeError writing the page (and quoting a link to
    it from a page elsewhere)."""
    needs(sys.platform.startswith("linux"), "a file system of byte names (Linux)")
    out = Path(os.fsdecode(bytes(tmp_path) + b"/league-\xff"))
    shutil.copytree(league12[0], out)
    assert main(["report", str(out)]) == 0
    page = Path(os.fsdecode(bytes(tmp_path) + b"/pages/r-\xff.html"))  # its viewer pages
    page.parent.mkdir()  # go beside it, in r-\xff-view/
    done = subprocess.run([sys.executable, "-m", "league", "report", os.fsencode(out), "--out",
                           os.fsencode(page)], cwd=ROOT, capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"})
    assert done.returncode == 0, done.stderr[-400:]
    assert done.stdout.decode("ascii").startswith("report: ")  # the path shown, escaped
    text = page.read_text(encoding="utf-8")
    assert 'href="r-%FF-view/e000000.html"' in text
    assert (page.parent / "r-\udcff-view/e000000.html").is_file()


def test_a_line_seating_a_policy_the_league_does_not_list_is_refused(league12, tmp_path: Path,
                                                                    capsys) -> None:
    """Accepted before: and with it any number of names, each a row and a column of the
    head-to-head table. The name in the message cannot act on the terminal."""
    out = league_copy(league12, tmp_path)
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[4])
    row["lineup"][2] = "stranger\x1b[2J" + "x" * 500
    lines[4] = json.dumps(row) + "\n"
    (out / "results.jsonl").write_text("".join(lines), encoding="utf-8")
    line = report_fails([str(out)], capsys, "line 5 seats 'stranger\\x1b[2J")
    assert "\x1b" not in line and len(line) < 300
    assert not (out / "report.html").exists()


def test_a_policy_name_longer_than_any_spec_is_refused(league12, tmp_path: Path,
                                                      capsys) -> None:
    out = league_copy(league12, tmp_path)
    rename(out, "random", "r" * (report.MAX_NAME_CHARS + 1))
    report_fails([str(out)], capsys, f"names a policy of {report.MAX_NAME_CHARS + 1:,} "
                 "characters")


BAD_LINES = {
    "NaN": '"scores": [NaN, 0, 0, 0, 0, 0]',
    "Infinity": '"scores": [0, Infinity, 0, 0, 0, 0]',
    "-Infinity": '"scores": [0, 0, -Infinity, 0, 0, 0]',
    "string": '"scores": ["1", 0, 0, 0, 0, 0]',
    "bool": '"scores": [true, 0, 0, 0, 0, 0]',
    "big int": '"scores": [' + "9" * 30 + ", 0, 0, 0, 0, 0]",
}


@pytest.mark.parametrize("case", list(BAD_LINES))
def test_a_score_that_is_not_a_score_is_one_line(league12, tmp_path: Path, capsys,
                                                 case: str) -> None:
    out = league_copy(league12, tmp_path)
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lineup = json.dumps(json.loads(lines[0])["lineup"])
    lines[6] = f'{{"id": "e000006", "lineup": {lineup}, {BAD_LINES[case]}}}\n'
    (out / "results.jsonl").write_text("".join(lines), encoding="utf-8")
    report_fails([str(out)], capsys, "line 7 has no 6 scores")


def test_digits_past_pythons_limit_and_a_blank_line_are_one_line(league12, tmp_path: Path,
                                                                 capsys) -> None:
    out = league_copy(league12, tmp_path)
    text = (out / "results.jsonl").read_text(encoding="utf-8")
    (out / "results.jsonl").write_text(text.replace('"seed":', '"seed":' + "9" * 5000 + ",\"x\":",
                                                    1), encoding="utf-8")
    report_fails([str(out)], capsys, "line 1 is not valid JSON")
    (out / "results.jsonl").write_text(text.replace("\n", "\n\n", 1), encoding="utf-8")
    report_fails([str(out)], capsys, "line 2 is not valid JSON")


def test_replay_links_to_secrets_and_huge_files_are_refused_unread(league12, tmp_path: Path,
                                                                   capsys) -> None:
    out = league_copy(league12, tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-TOKEN-123\n", encoding="utf-8")
    (out / "replays" / "e000005.json").unlink()
    (out / "replays" / "e000005.json").symlink_to(secret)
    line = report_fails([str(out)], capsys, "e000005.json is a symbolic link")
    assert "SECRET" not in line
    (out / "replays" / "e000005.json").unlink()
    with open(out / "replays" / "e000005.json", "wb") as f:  # sparse: costs no disk
        f.truncate(200 << 20)
    report_fails([str(out)], capsys, "is over 64 MB")
    assert not (out / "report.html").exists()


def test_a_viewer_page_that_links_elsewhere_is_replaced_not_written_through(
        league12, tmp_path: Path) -> None:
    out = league_copy(league12, tmp_path)
    precious = tmp_path / "precious.html"
    precious.write_text("keep me", encoding="utf-8")
    (out / "view").mkdir()
    (out / "view" / "e000000.html").symlink_to(precious)
    assert main(["report", str(out)]) == 0
    assert precious.read_text(encoding="utf-8") == "keep me"
    page = out / "view" / "e000000.html"
    assert not page.is_symlink() and "data-loaded" in page.read_text(encoding="utf-8")


def test_empty_single_and_never_met_leagues(league12, tmp_path: Path) -> None:
    """0 episodes (a league just begun), 1 episode, and two policies that never shared a
    table: the page is written, with dashes where there is nothing to show."""
    from test_report import Tables

    out = league_copy(league12, tmp_path)
    results = (out / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (out / "results.jsonl").write_text("", encoding="utf-8")
    assert main(["report", str(out)]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    tables = Tables(page)
    assert "No episodes yet." in page and "results.jsonl holds 0" in page
    assert tables.body("h2h-table") == [] and tables.body("episodes-table") == []
    (out / "results.jsonl").write_text(results[0], encoding="utf-8")
    assert main(["report", str(out)]) == 0
    assert len(Tables((out / "report.html").read_text(encoding="utf-8"))
               .body("episodes-table")) == 1
    alone = [json.loads(x) for x in results[:2]]
    for r, name in zip(alone, ("factor", "magpie")):
        r["lineup"] = [name] * SEATS
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in alone),
                                       encoding="utf-8")
    assert main(["report", str(out)]) == 0
    h2h = Tables((out / "report.html").read_text(encoding="utf-8")).body("h2h-table")
    cells = {(c[0].get("data-row"), c[0].get("data-col")): c[1] for _, r in h2h for c in r[1:]}
    assert cells == {(a, b): "-" for a in ("factor", "magpie") for b in ("factor", "magpie")}


def test_a_folder_being_written_is_reported_as_it_stood(league12, tmp_path: Path,
                                                        monkeypatch) -> None:
    """A torn last line (a league mid-append) is left out; a line appended between the
    tally and the episodes table is left out of both."""
    out = league_copy(league12, tmp_path)
    text = (out / "results.jsonl").read_text(encoding="utf-8")
    last = text.splitlines(keepends=True)[-1]
    with open(out / "results.jsonl", "a", encoding="utf-8") as f:
        f.write(last[: len(last) // 2])
    assert report.build_report(out).episodes == 12
    (out / "results.jsonl").write_text(text, encoding="utf-8")
    read = report.read_league

    def then_appended(root: Path) -> report.League:
        league = read(root)
        with open(root / "results.jsonl", "a", encoding="utf-8") as f:
            f.write(last.replace('"e000011"', '"e000012"'))
        return league

    monkeypatch.setattr(report, "read_league", then_appended)
    assert report.build_report(out).episodes == 12
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("<tr data-episode=") == 12 and "e000012" not in page


SCORES = st.lists(st.one_of(st.floats(-report.MAX_SCORE, report.MAX_SCORE),
                            st.sampled_from([report.MAX_SCORE, -report.MAX_SCORE, 999_999.99,
                                             5e-324, -0.0])), min_size=SEATS, max_size=60)


@settings(max_examples=200, deadline=None)
@given(SCORES, st.one_of(st.none(), st.tuples(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6))))
def test_the_chart_is_bounded_for_any_scores(scores: list[float], ci: tuple | None) -> None:
    """Any scores a results line may hold (equal, extreme, subnormal) give a chart of about
    ``BINS`` bars a row and a few ticks, every coordinate a finite number."""
    tally = report.Tally(["a", "b"])
    for k in range(0, len(scores) - SEATS + 1, SEATS):
        tally.add(report.Episode(f"e{k}", 1, ("a", "b") * 3, tuple(scores[k:k + SEATS]), 0, 0))
    svg = report_html.chart(tally, {"a": list(ci) if ci else None})
    coordinates = re.findall(r' (?:x|y|width|height|x1|x2|y1|y2)="([^"]+)"', svg)
    assert coordinates and all(math.isfinite(float(c)) for c in coordinates)
    assert svg.count('class="bar"') <= 2 * (report_html.BINS + 2)
    assert svg.count('<text class="tick"') < 20 and len(svg) < 30_000


def many_policy_league(league12: tuple[Path, str, str], tmp_path: Path, seated: int) -> Path:
    """The league with ``seated`` policies, each episode seating six of them (every replay is
    e000000's: the report draws each, it does not compare them)."""
    out = league_copy(league12, tmp_path, f"many{seated}")
    names = [f"p{k:03d}" for k in range(seated)]
    manifest = json.loads((out / "league.json").read_text(encoding="utf-8"))
    manifest["policies"] = names
    (out / "league.json").write_text(json.dumps(manifest), encoding="utf-8")
    ladder = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
    ladder["policies"], ladder["episodes"] = [], seated
    (out / "ladder.json").write_text(json.dumps(ladder), encoding="utf-8")
    row = rows(out)[0]
    rng = random.Random(seated)
    lines = []
    for i in range(seated):
        lineup = [names[i]] + rng.sample(names, SEATS - 1)
        lines.append(json.dumps({**row, "id": f"m{i:05d}", "lineup": lineup}) + "\n")
        if i:
            shutil.copy(out / "replays" / "e000000.json", out / "replays" / f"m{i:05d}.json")
    (out / "replays" / "e000000.json").rename(out / "replays" / "m00000.json")
    (out / "results.jsonl").write_text("".join(lines), encoding="utf-8")
    return out


@pytest.mark.parametrize("seated", [50, 150])
def test_the_head_to_head_table_is_bounded(league12, tmp_path: Path, seated: int) -> None:
    """Its cells grow as the square of the policies: 50 are shown whole, of more only the
    first ``MAX_HEAD_TO_HEAD`` (said so on the page)."""
    from test_report import Tables

    out = many_policy_league(league12, tmp_path, seated)
    assert main(["report", str(out)]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    h2h = Tables(page).body("h2h-table")
    shown = min(seated, report_html.MAX_HEAD_TO_HEAD)
    assert len(h2h) == shown and all(len(cells) == 1 + shown for _, cells in h2h)
    assert (f"The first {shown} of the {seated} policies" in page) == (seated > shown)
    assert len(Tables(page).body("seat-table")) == seated  # the linear tables show all


def test_many_policies_are_tallied_in_linear_time(league12, tmp_path: Path) -> None:
    """Each policy's first seat was looked up in the list of all policies, so the time grew
    as the square: 12,000 episodes seating league.json's 72,000 policies took half a
    minute."""
    out = league_copy(league12, tmp_path)
    names = [f"p{k:05d}" for k in range(72_000)]
    manifest = json.loads((out / "league.json").read_text(encoding="utf-8"))
    manifest["policies"] = names
    (out / "league.json").write_text(json.dumps(manifest), encoding="utf-8")
    (out / "ladder.json").write_text('{"policies": []}', encoding="utf-8")
    row = rows(out)[0]
    with open(out / "results.jsonl", "w", encoding="utf-8") as f:
        for i in range(len(names) // SEATS):
            lineup = names[SEATS * i:SEATS * (i + 1)]
            f.write(json.dumps({"id": f"e{i:06d}", "lineup": lineup, "scores": row["scores"]})
                    + "\n")
    started = time.perf_counter()
    league = report.read_league(out)
    assert time.perf_counter() - started < 10
    assert league.tally.order == names and league.tally.episodes == len(names) // SEATS


CHILD = """
import resource, sys, time
from league.cli import report
report.write_view = lambda src, out: False  # the viewer pages are guild view's cost
started = time.perf_counter()
done = report.build_report(sys.argv[1])
print(done.episodes, time.perf_counter() - started,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def test_twenty_thousand_episodes_cost_bounded_memory(league12, tmp_path: Path) -> None:
    """The results are read twice, a line at a time: the memory of 20,000 episodes is that
    of 12, within a few megabytes (the page, 15 MB, is written as it is made)."""
    small = league_copy(league12, tmp_path, "small")
    big = league_copy(league12, tmp_path, "big")
    row = rows(big)[0]
    with open(big / "results.jsonl", "w", encoding="utf-8") as f:
        for i in range(20_000):
            f.write(json.dumps({**row, "id": f"e{i:06d}"}) + "\n")
    used = {}
    for out in (small, big):
        done = subprocess.run([sys.executable, "-c", CHILD, str(out)], cwd=ROOT, timeout=300,
                              capture_output=True, text=True, check=True)
        episodes, seconds, kb = done.stdout.split()
        used[out.name] = (int(episodes), float(seconds), int(kb))
    assert used["big"][0] == 20_000 and used["big"][1] < 120
    assert used["big"][2] - used["small"][2] < 15_000, used  # KB: less than the page
    assert (big / "report.html").stat().st_size > 10_000_000


# --- play: nothing reaches the terminal raw --------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_inert_text_cannot_drive_a_terminal(text: str) -> None:
    shown = play_text.inert(text)
    assert not any(c in shown for c in RAW) and "\t" not in shown
    assert shown.count("\n") == text.count("\n")
    if not play_text._UNSAFE.search(text):
        assert shown == text


def play_process(*args: str, typed: bytes, path: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [path, str(TESTS)]))}
    return subprocess.run([sys.executable, "-m", "league", "play", *args], input=typed,
                          capture_output=True, cwd=ROOT, timeout=120, env=env, check=False)


def test_typed_and_spoken_escapes_are_shown_not_obeyed(tmp_path: Path) -> None:
    """Piped lines were echoed raw, and an opponent's spoken line reached the terminal as it
    was: ESC sequences cleared the screen and retitled the window."""
    (tmp_path / "loud.py").write_text(
        "class Loud:\n    def act(self, game, seat):\n"
        "        return 'I say \"\\x1b[2J\\x1b]0;pwned\\x07 \\u202egnirts\\r hi\"'\n",
        encoding="utf-8")
    typed = (b"I fly \x1b[31m home\x07\x00\n\xff\xfe garbage\n"
             + "\u202e\u009b31m\n".encode() + b"I walk to Warehouse Yard\nI wait\nquit\n")
    done = play_process("--seed", "11", "--turns", "6", "--seat", "1", "--opponents",
                        "loud:Loud", typed=typed, path=str(tmp_path))
    assert done.returncode == 0, done.stderr[-500:]
    shown = done.stdout.decode("utf-8")
    assert not any(c in shown for c in RAW)
    assert "\\x1b[2J\\x1b]0;pwned\\x07 \\u202egnirts" in shown  # what was said, visible
    assert "I fly \\x1b[31m home" in shown and "RESULTS after 2 of 6 turns" in shown


@pytest.mark.parametrize("text", [
    "0", "-1", str(10 ** 100), "1e3", "\u0663", "\ufffd" * 1000, "z" * 1_000_000,
    "{" + "x" * 1_000_000, "I fly to the moon | say " + "y" * 10_000,
])
def test_a_line_no_town_can_use_is_refused_quickly(text: str) -> None:
    game = Game(GameConfig(seed=11))
    started = time.perf_counter()
    reply = terminal.respond(game, 2, text)
    assert time.perf_counter() - started < 2
    assert reply.move is None and reply.show.startswith(("Not played: ", "There is no sentence"))
    assert len(reply.show) < 400  # a huge line is not echoed back


def test_a_huge_usable_line_is_played_cut_to_the_rules_lengths() -> None:
    game = Game(GameConfig(seed=11))
    reply = terminal.respond(game, 2, "I wait " + "x" * 1_000_000 + " | say " + "y" * 10_000)
    assert reply.move is not None and len(reply.move.say) == 10_000
    policies = [None if s == 2 else make_policy("factor") for s in range(SEATS)]
    assert terminal.play_turn(game, 2, reply.move, policies) == {}
    act = next(e for e in game.events if e["kind"] == "act" and e["seat"] == 2)
    assert act["reason"] == "waited" and len(act["sentence"]) <= 240
    assert len(json.dumps(game.replay_payload(["x"] * SEATS))) < 100_000


# --- play: opponents that fail -----------------------------------------------------------------
@pytest.mark.parametrize("bad", ["Raiser", "Garbage", "BadIntent"])
def test_an_opponent_that_fails_waits_and_the_game_goes_on(bad: str) -> None:
    """A policy raising (or answering garbage) ended the game in a traceback."""
    sys.path.insert(0, str(TESTS))
    try:
        policies = [None, make_policy(f"{F}{bad}"), *(make_policy("factor") for _ in range(4))]
    finally:
        sys.path.remove(str(TESTS))
    game = Game(GameConfig(seed=5, turns=6))
    for turn in range(3):
        failed = terminal.play_turn(game, 0, terminal.Line(sentence="I wait"), policies)
        assert list(failed) == [1] and len(failed[1]) <= terminal.MAX_WHY
        assert game.turn == turn + 1
    acts = [e for e in game.events if e["kind"] == "act" and e["seat"] == 1]
    assert [a["sentence"] for a in acts] == [WAIT] * 3 and all(a["scripted"] for a in acts)


def test_what_the_person_sees_of_a_failing_opponent() -> None:
    done = play_process("--seed", "2", "--turns", "6", "--opponents",
                        f"{F}Raiser,factor,{F}BadReset", typed=b"I wait\nI wait\nquit\n")
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr[-500:]
    out = done.stdout.decode("utf-8")
    game = Game(GameConfig(seed=2))
    raiser, resetter = game.aliases[1], game.aliases[3]
    assert out.count(f"Note: {raiser}'s policy ({F}Raiser) failed (RuntimeError: boom)") == 1
    assert out.count(f"Note: {resetter}'s policy ({F}BadReset) could not be reset") == 1
    assert "RESULTS after 2 of 6 turns: you quit." in out


def test_an_opponent_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(
        "class Broken:\n    def __init__(self):\n        raise RuntimeError('no')\n",
        encoding="utf-8")
    done = play_process("--opponents", "broken:Broken", typed=b"quit\n", path=str(tmp_path))
    assert done.returncode == 2
    assert one_error_line(done.stderr.decode()) == (
        "guild play: error: --opponents: broken:Broken could not be made (RuntimeError: no)")
    assert done.stdout == b""


# --- play: options, the replay, Ctrl-C ---------------------------------------------------------
@pytest.mark.parametrize("where", ["dir", "missing/r.json", "nul"])
def test_a_replay_path_that_cannot_be_written_is_refused_before_the_game(
        tmp_path: Path, capsys, monkeypatch, where: str) -> None:
    """It was found out after the whole game was played, which was then lost."""
    path = {"dir": str(tmp_path), "missing/r.json": str(tmp_path / "missing" / "r.json"),
            "nul": str(tmp_path / "a\0b")}[where]
    monkeypatch.setattr(sys, "stdin", io.StringIO("I wait\nquit\n"))
    assert main(["play", "--seed", "3", "--turns", "6", "--replay", path]) == 2
    got = capsys.readouterr()
    assert "--replay" in one_error_line(got.err) and "The guild game" not in got.out


@pytest.mark.parametrize("turns", [6, MAX_TURNS])
def test_turns_at_the_bounds_play(turns: int, capsys, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("I wait\nquit\n"))
    saved = tmp_path / "r.json"
    assert main(["play", "--seed", "3", "--turns", str(turns), "--replay", str(saved)]) == 0
    assert f"RESULTS after 1 of {turns} turns: you quit." in capsys.readouterr().out
    assert json.loads(saved.read_text(encoding="utf-8"))["config"]["turns"] == turns


def test_ctrl_c_at_the_prompt_prints_the_results_and_exits_130(tmp_path: Path) -> None:
    pexpect = needs_module("pexpect", "'guild-game[dev]'")
    saved = tmp_path / "r.json"
    child = pexpect.spawn(sys.executable, ["-m", "league", "play", "--seed", "4", "--turns",
                                           "6", "--replay", str(saved)],
                          cwd=str(ROOT), encoding="utf-8", timeout=30)
    child.expect(re.escape(terminal.PROMPT))
    child.sendline("I wait")
    child.expect(re.escape(terminal.PROMPT))
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert "RESULTS after 1 of 6 turns: interrupted." in child.before
    assert "Traceback" not in child.before
    assert len(json.loads(saved.read_text(encoding="utf-8"))["events"]) > 0


# --- play: nothing hidden shows ---------------------------------------------------------------
def reached(seed: int, played: int) -> Game:
    return played_game(seed, played, 16, seed % 3 != 0)




def hide(game: Game, other: int, what: str) -> None:
    """Change something of seat ``other`` that no other seat may see."""
    st_ = game.state
    if what == "coin":
        st_.coin[other] += 17
    elif what == "pack":
        st_.items[other][1] += 1
    elif what == "commissions":
        st_.quest_item[other][0] = (st_.quest_item[other][0] + 1) % len(game.world.goods)
        st_.quest_count[other][0] += 1
        st_.delivered[other][0] += 1
    else:
        st_.notes[other] = "my secret plan"
        st_.last_sentence[other] = "I rob everyone"


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 20), st.integers(0, 10), st.integers(0, SEATS - 1),
       st.integers(1, SEATS - 1), st.sampled_from(["coin", "pack", "commissions", "notes"]))
def test_another_seats_purse_pack_and_commissions_never_show(seed: int, played: int,
                                                            seat: int, offset: int,
                                                            what: str) -> None:
    """Beside the existing one-state check: any seat, in the same room or not, and its
    commissions and notes as well as its coin and pack."""
    game = reached(seed, played)
    other = (seat + offset) % SEATS
    sentences = [m.sentence for s in range(SEATS) for m in play_text.legal_moves(game, s)]
    sentences += [f"I rob {game.aliases[other]}", f"I accept {game.aliases[other]}'s offer"]

    def seen(g: Game) -> tuple:
        return (play_text.turn_text(g.observe(seat), None, g.world),
                play_text.legal_moves(g, seat),
                [play_text.judge(g, seat, s) for s in sentences])

    changed = fork(game)
    hide(changed, other, what)
    assert seen(changed) == seen(game)
