"""A hostile review of a league's signing and verification: what an edited folder can no longer
pass off, and what ``guild verify`` and ``guild report`` say of it.

A resume checks ``league.json`` against the settings ``signature.json`` signed one by one, so no
edited file carries a league on under other rules or code; verify compares each replay's rules
with ``league.json``'s; a results file is read a line at a time, bounded, and what verify prints
of it is bounded too; the report warns of lines it should not count; verify's messages say what
is there; and the lock file is never followed out of ``--out``."""

from __future__ import annotations

import json
import os
import re
import shutil
import textwrap
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from leagues import BASELINES, league_args, lines, one_error_line, rows

from league.cli.guild import main
from league.core import signing
from league.core.errors import LeagueError
from league.core.signing import canonical, key_path, load_key
from league.core.store import MAX_LINE_BYTES, load_results
from league.core.verify_claims import ladder_differences, schedule_problems

SMALL = ("--turns", "6")
REFUSED_END = "or start the league in another --out"


def secret_args(out: Path, episodes: int, *extra: str) -> list[str]:
    """A league of a secret draw (no --seed): what a league records only since it signs."""
    return ["league", "--policies", BASELINES, "--episodes", str(episodes), "--workers", "1",
            "--out", str(out), *SMALL, *extra]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished, signed league of 6 episodes of 6 turns, drawn in secret."""
    out = tmp_path_factory.mktemp("tamper") / "league"
    assert main(secret_args(out, 6)) == 0
    return out


@pytest.fixture
def league(base: Path, tmp_path: Path) -> Path:
    out = tmp_path / "league"
    shutil.copytree(base, out)
    return out


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != ".lock"}


def _edit_manifest(out: Path, edit: Callable[[dict], None]) -> None:
    path = out / "league.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _verify(out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["verify", str(out)])
    return code, capsys.readouterr().out.splitlines()


def _refused(args: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``args``: refused in one line, with nothing in ``out`` changed; the line."""
    before = _files(out)
    capsys.readouterr()
    assert main(args) == 2
    line = one_error_line(capsys.readouterr().err)
    assert _files(out) == before
    return line


# --- a resume holds league.json to the settings signed ------------------------------------------

@pytest.mark.parametrize(("edit", "options", "key"), [
    (lambda m: m.update(turns=7, thievery=False), ("--turns", "7", "--honest-town"),
     "thievery"),
    (lambda m: m.update(fallback="factor"), ("--fallback", "factor"), "fallback"),
    (lambda m: m.pop("signedBy"), (), "signedBy"),
])
def test_a_resume_refuses_a_league_json_edited_to_fit_other_options(
        league: Path, capsys: pytest.CaptureFixture[str], edit: Callable[[dict], None],
        options: tuple[str, ...], key: str) -> None:
    signed = (league / "league.json").read_bytes()
    _edit_manifest(league, edit)
    line = _refused(secret_args(league, 12, *options), league, capsys)  # the last --turns
    assert line.startswith("guild league: error: "), line
    if key == "signedBy":  # the signature cannot be checked by the key league.json lacks
        assert "names no ed25519 key (signedBy) to check it with" in line, line
    else:
        assert (f"league.json's {key} is not what signature.json signed (the file was edited); "
                "the league signs only what it can vouch for: restore it, ") in line, line
    assert line.endswith(REFUSED_END), line
    # restored, the same league goes on (its episode count and draw are the run's to change)
    (league / "league.json").write_bytes(signed)
    assert main(secret_args(league, 12)) == 0
    assert [r["maxTurns"] for r in rows(league)] == [6] * 12
    assert _verify(league, capsys)[0] == 0


def test_a_resume_refuses_a_league_json_without_its_code_and_seat_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Deleting ``code`` and ``seatMemory`` made a signed league pass as one begun before they
    were recorded: other code and another limit went on under its key."""
    bot = tmp_path / "tamper_waits.py"
    bot.write_text(textwrap.dedent("""
        class Waits:
            def act(self, game, seat):
                return "I wait and watch the road."
    """), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "league"
    policies = "factor,tamper_waits:Waits"
    apart = [*SMALL, "--sandbox", "none", "--seat-memory", "2048"]
    assert main(league_args(out, 6, *apart, policies=policies, workers=1)) == 0
    _edit_manifest(out, lambda m: (m.pop("code"), m.pop("seatMemory")))
    bot.write_text(bot.read_text(encoding="utf-8") + "# changed\n", encoding="utf-8")
    apart[-1] = "1024"
    line = _refused(league_args(out, 12, *apart, policies=policies, workers=1), out, capsys)
    assert "league.json's code is not what signature.json signed" in line, line


def test_verify_names_the_setting_edited_and_reads_signatures_old_and_new(
        league: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = json.loads((league / "signature.json").read_text(encoding="utf-8"))
    assert {"turns", "thievery", "speech", "policies", "signedBy"} <= set(body["manifest"])
    assert not {"episodes", "commitments"} & set(body["manifest"])  # a run changes them
    _edit_manifest(league, lambda m: m.update(speech=False))
    code, got = _verify(league, capsys)
    assert code == 1
    assert ("verify: league.json's speech is not what signature.json signed; it was changed "
            "after the league signed it") in got, got
    # a signature written before settings were signed one by one still verifies
    _edit_manifest(league, lambda m: m.update(speech=True))
    key = load_key(key_path(None))
    old = {k: v for k, v in signing.contents(league, [r["id"] for r in rows(league)]).items()
           if k != "manifest"}
    (league / "signature.json").write_text(json.dumps(
        {**old, "signature": key.sign(canonical(old)).hex()}), encoding="utf-8")
    assert _verify(league, capsys)[0] == 0
    # ... but a manifest that is not a digest by key is no signature's
    bad = {**old, "manifest": {"turns": 6}}
    (league / "signature.json").write_text(json.dumps(
        {**bad, "signature": key.sign(canonical(bad)).hex()}), encoding="utf-8")
    code, got = _verify(league, capsys)
    assert code == 1 and ("verify: signature.json is not a guild.signature.v1 signature "
                          "(format, files, replays, signature)") in got


# --- verify compares each replay's rules with league.json's -------------------------------------

@pytest.mark.parametrize(("key", "value", "shown"), [
    ("turns", 14, "turns 6, but league.json gives 14"),
    ("thievery", False, "thievery true, but league.json gives false"),
    ("speech", False, "speech true, but league.json gives false"),
])
def test_verify_refuses_replays_played_under_other_rules_than_league_json(
        league: Path, capsys: pytest.CaptureFixture[str], key: str, value: object,
        shown: str) -> None:
    _edit_manifest(league, lambda m: m.update({key: value}))
    signing.sign_league(league, None, rows(league))  # the owner signs the swap: still caught
    code, got = _verify(league, capsys)
    assert code == 1
    for n in range(6):
        assert (f"verify: e00000{n} (results.jsonl line {n + 1}): replay "
                f"replays/e00000{n}.json is played with {shown}") in got, got


def test_an_unsigned_resume_under_other_rules_is_refused(
        league: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (league / "signature.json").unlink()
    _edit_manifest(league, lambda m: m.update(turns=7))
    line = _refused(secret_args(league, 12, "--turns", "7"), league, capsys)
    assert "line 1 (e000000), which no signature covers yet, does not verify: replay " \
           "replays/e000000.json is played with turns 6, but league.json gives 7" in line, line


# --- results.jsonl: a line at a time, bounded -----------------------------------------------------

def test_a_results_file_is_read_a_line_at_a_time_and_its_lines_are_capped(
        base: Path, tmp_path: Path) -> None:
    good = (base / "results.jsonl").read_bytes()
    path = tmp_path / "results.jsonl"
    path.write_bytes(good + b"\n" * (4 << 20))  # 4 MB of empty lines after the six
    tracemalloc.start()
    try:
        with pytest.raises(LeagueError, match=r"line 7 is not valid JSON"):
            load_results(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak  # the file is not held, nor split
    path.write_bytes(good)
    with pytest.raises(LeagueError, match=r"has more than 5 lines, more episodes than any "):
        load_results(path, max_lines=5)
    assert len(load_results(path, max_lines=6)[0]) == 6
    path.write_bytes(good + b" " * (MAX_LINE_BYTES + 10) + b"\n")
    with pytest.raises(LeagueError, match=r"line 7 is over 1,048,576 bytes; not a results line"):
        load_results(path)


def test_verify_prints_a_bounded_report_of_many_bad_lines(
        league: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with open(league / "results.jsonl", "ab") as f:
        f.write(b"{}\n" * 300)
    code, got = _verify(league, capsys)
    assert code == 1
    assert len(got) < 40 and max(map(len, got)) < 400, (len(got), max(map(len, got)))
    assert ("verify: results.jsonl has episode None 300 times (lines 7, 8, 9, 10, 11 and 295 "
            "more)") in got
    assert "verify: 280 more lines of results.jsonl do not verify (the first 20 are named " \
           "above)" in got
    assert got[-1].startswith("verify: 300 of 306 episodes do not verify")


def test_episode_id_problems_are_counted_past_the_first_twenty() -> None:
    ids = [{"id": f"x{i}"} for i in range(50)] + [{"id": f"y{i % 30}"} for i in range(60)]
    problems = schedule_problems(ids, 6)
    assert len(problems) <= 2 + 20 + 1 + 20 + 1, problems
    assert "results.jsonl has 10 more episodes more than once" in problems
    assert "results.jsonl holds 60 more episode ids that are not league.json's" in problems


# --- what verify says ---------------------------------------------------------------------------

@pytest.mark.parametrize(("tail", "size"), [(b'{"id": "e00', 11), (b"\r", 1)])
def test_an_unfinished_line_after_the_signed_ones_is_named_as_such(
        league: Path, capsys: pytest.CaptureFixture[str], tail: bytes, size: int) -> None:
    with open(league / "results.jsonl", "ab") as f:
        f.write(tail)
    code, got = _verify(league, capsys)
    assert code == 1
    assert not any("0 lines after" in x for x in got), got
    assert (f"verify: results.jsonl is not the file signature.json signed: an unfinished line "
            f"({size} byte{'s' * (size > 1)} without a newline) follows the 6 lines it signed "
            "(what a run stopped while writing leaves, or an edit)") in got, got


def test_a_line_repeated_after_the_signed_ones_is_not_called_a_run_to_sign(
        league: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = lines(league)[0]
    with open(league / "results.jsonl", "a", encoding="utf-8") as f:
        f.write(first + "\n")
    code, got = _verify(league, capsys)
    assert code == 1
    assert ("verify: results.jsonl has 1 line after the 6 that signature.json covers that is "
            "not the league's next episode (line 7 is e000000, not e000006): added after the "
            "league signed it, not by a run") in got, got
    assert not any("run the same command again" in x for x in got), got
    line = _refused(secret_args(league, 6), league, capsys)  # as verify says: no run signs it
    assert "results.jsonl line 7 is not episode e000006 of this league" in line, line


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_results_file_that_is_no_regular_file_is_named_so(
        league: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    path = league / "results.jsonl"
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    capsys.readouterr()
    assert main(["verify", str(league)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line == (f"guild verify: error: {path} is not a regular file (a device, FIFO or "
                    "socket); a results file is read from a regular file only"), line


def test_ladder_differences_are_labelled_by_the_entry_they_come_from() -> None:
    claimed = {"policies": [{"policy": "a", "meanScore": 1.0, "rank": 1},
                            {"policy": "b", "meanScore": 0.5, "rank": 2}]}
    derived = {"policies": [{"policy": "b", "meanScore": 2.0, "rank": 1},
                            {"policy": "a", "meanScore": 1.0, "rank": 2}]}
    assert ladder_differences(claimed, derived, True) == [
        "policies[b].meanScore is 0.5 but results.jsonl gives 2.0",
        "policies[b].rank is 2 but results.jsonl gives 1",
        "policies[a].rank is 1 but results.jsonl gives 2"]
    odd = {"policies": [{"policy": "a", "meanScore": 1.0, "rank": 1},
                        {"policy": "c", "meanScore": 0.5, "rank": 2}]}
    assert ladder_differences(odd, derived, True) == [
        "policies lacks the entry of 'b'", "policies[a].rank is 1 but results.jsonl gives 2",
        "policies has an entry of 'c', a policy results.jsonl does not rank"]


def test_verify_labels_an_edited_score_on_the_ladder_by_its_own_policy(
        league: Path, capsys: pytest.CaptureFixture[str]) -> None:
    claimed = {e["policy"]: e["meanScore"]
               for e in json.loads((league / "ladder.json").read_text())["policies"]}
    last = min(claimed, key=lambda p: claimed[p])  # lifted to the top: the order changes
    text = lines(league)
    row = json.loads(text[0])
    row["scores"][row["lineup"].index(last)] += 100.0
    text[0] = json.dumps(row, separators=(",", ":"))
    (league / "results.jsonl").write_text("".join(x + "\n" for x in text), encoding="utf-8")
    code, got = _verify(league, capsys)
    assert code == 1
    means = [re.fullmatch(r"verify: ladder\.json: policies\[(\w+)\]\.meanScore is (\S+) but .*",
                          x) for x in got]
    means = [m for m in means if m]
    assert means, got
    assert all(float(m[2]) == claimed[m[1]] for m in means), got


def test_an_unsigned_league_says_why_and_one_whose_signature_was_removed_fails(
        league: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (league / "signature.json").unlink()
    _edit_manifest(league, lambda m: m.pop("signedBy"))
    code, got = _verify(league, capsys)
    assert code == 1  # a secret draw: only a league that signs draws one
    assert ("verify: signature.json is missing, and league.json names no signing key "
            "(signedBy) though it records draw, which only a league that signs records: its "
            "signature was removed") in got, got
    seeded = tmp_path / "seeded"
    assert main(league_args(seeded, 6, *SMALL, workers=1)) == 0
    (seeded / "signature.json").unlink()
    _edit_manifest(seeded, lambda m: m.pop("signedBy"))
    code, got = _verify(seeded, capsys)
    assert code == 0
    assert ("verify: unsigned: the league has no signature.json (begun before leagues were "
            "signed, or its signature was removed); nothing vouches for who published it, only "
            "that its replays give its results") in got, got


# --- guild report -------------------------------------------------------------------------------

def test_the_report_warns_of_a_repeated_line_and_more_episodes_than_planned(
        league: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = lines(league)[0]
    with open(league / "results.jsonl", "a", encoding="utf-8") as f:
        f.write(first + "\n")
    page = tmp_path / "page.html"
    capsys.readouterr()
    assert main(["report", str(league), "--out", str(page)]) == 0
    err = capsys.readouterr().err
    check = f"the page counts every line as it is: run guild verify {league}"
    more = f"results.jsonl holds 7 episodes, more than the 6 league.json plans; {check}"
    again = f"results.jsonl line 7 holds episode e000000 again; {check}"
    assert f"guild report: warning: {more}" in err and f"guild report: warning: {again}" in err
    html = page.read_text(encoding="utf-8")
    assert more in html and again in html


# --- the lock ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_a_lock_that_is_no_regular_file_is_refused_and_never_followed(
        league: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    lock = league / ".lock"
    lock.unlink(missing_ok=True)
    outside = tmp_path / "outside"
    if kind == "link":
        lock.symlink_to(outside)
    else:
        os.mkfifo(lock)
    line = _refused(secret_args(league, 6), league, capsys)
    what = "a symbolic link" if kind == "link" else "a FIFO, device or socket"
    assert line == (f"guild league: error: {lock} is not a regular file but {what}; a league "
                    "locks a file of its own there: remove it, or use another --out"), line
    assert not outside.exists()
