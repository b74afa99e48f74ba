"""A resume never signs over what it cannot vouch for (``league.core.verify.check_resume``).

The league signs again at the end of every run, so a resume that took the folder as it found
it would put the league's key on edited results. Lines that ``signature.json`` signed must
still be the bytes signed, and their replays too (a missing replay is played again); lines
after them (a run stopped before it signed) must verify against their replays. Anything else
is refused in one line (exit 2), and the refused run leaves every file as it was."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from leagues import copy_league, league_args, lines, one_error_line

from agents import Magpie, make_policy, play_episode
from league.cli import guild as cli
from league.cli.guild import main
from league.core import signing
from league.core.episode import RESULT_KEYS
from league.core.store import LeagueDir, _complete
from sim import GameConfig

SUMMARY = ("verify: all 12 episodes verify, and results.jsonl, the lineups, the fallbacks and "
           "the ladder agree with league.json")
UNVOUCHED = "; the league signs only what it can vouch for: "


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file()}


def _edit_line(out: Path, n: int, edit: Callable[[dict], None]) -> None:
    """Edit line ``n`` (0-based) of results.jsonl as a hand would: parse, change, write back."""
    text = lines(out)
    row = json.loads(text[n])
    edit(row)
    text[n] = json.dumps(row, separators=(",", ":"))
    (out / "results.jsonl").write_text("".join(x + "\n" for x in text), encoding="utf-8")


def _raise_score(row: dict) -> None:
    row["scores"][0] += 1.0


def _extra_score(row: dict) -> None:
    row["scores"].append(1.0)


def _extra_key(row: dict) -> None:
    row["checkedBy"] = "the league\u001b[2J"


def _refused(out: Path, capsys, episodes: int = 12) -> str:
    """Run the league's own command on ``out``: it must be refused in one line and change
    nothing; the line."""
    before = _files(out)
    capsys.readouterr()
    assert main(league_args(out, episodes, workers=1)) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith("guild league: error: ")
    assert line.endswith("or start the league in another --out"), line
    assert _files(out) == before
    return line


def _verify(out: Path, capsys) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["verify", str(out)])
    return code, capsys.readouterr().out.splitlines()


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A league of 6 episodes, signed, then extended to 12 by a run stopped after 3 more: 9
    lines, of which signature.json covers the first 6 (a crash, simulated in-process)."""
    out = tmp_path_factory.mktemp("crashed") / "league"
    assert main(league_args(out, 6, workers=1)) == 0

    def interrupted(self: object, done: int, total: int) -> None:
        if done == 3:
            raise KeyboardInterrupt

    with pytest.MonkeyPatch.context() as m:
        m.setattr(cli._ProgressBar, "__call__", interrupted)
        assert main(league_args(out, 12, workers=1)) == 130
    assert len(lines(out)) == 9
    assert len(json.loads((out / "signature.json").read_text())["replays"]) == 6
    return out


# --- signed lines and replays: checked by digest -------------------------------------------------

@pytest.mark.parametrize("edit", [_raise_score, _extra_score])
def test_an_edited_signed_line_is_refused_and_stays_visible(league12, tmp_path, capsys,
                                                             edit) -> None:
    out = copy_league(league12[0], tmp_path)
    _edit_line(out, 2, edit)
    (out / "replays" / "e000005.json").unlink()  # the walkthrough also deleted a replay
    line = _refused(out, capsys)
    assert (f"error: {out / 'results.jsonl'} is not the file signature.json signed: its first "
            "12 lines differ from those signed (line 3 does not verify: ") in line
    if edit is _raise_score:
        assert "results.jsonl claims scores [0.5, 1.65," in line
        assert "but replay replays/e000002.json gives [-0.5, 1.65," in line
    else:
        assert "line 3 does not verify: the line has no 6 scores)" in line
    assert f"{UNVOUCHED}restore the file as it was signed, or start" in line
    assert not (out / "replays" / "e000005.json").exists()  # not played again: refused first
    code, got = _verify(out, capsys)  # and the edit is still there for verify to see
    assert code == 1
    assert ("verify: results.jsonl is not the file signature.json signed (its sha256 differs); "
            "it was changed after the league signed it") in got


def test_a_signed_line_edited_where_no_replay_can_tell_is_refused(league12, tmp_path,
                                                                    capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    _edit_line(out, 4, lambda r: r.update(wallTime=r["wallTime"] * 2))
    line = _refused(out, capsys)
    assert (f"error: {out / 'results.jsonl'} is not the file signature.json signed: its first "
            f"12 lines differ from those signed{UNVOUCHED}restore the file") in line


def test_a_signed_line_removed_is_refused(league12, tmp_path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    (out / "results.jsonl").write_text("".join(x + "\n" for x in lines(out)[:11]))
    line = _refused(out, capsys)
    assert (f"error: {out / 'results.jsonl'} has 11 lines, fewer than the 12 that "
            "signature.json signed") in line


def test_a_changed_signed_replay_is_refused_and_a_deleted_one_is_played_again(
        league12, tmp_path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    replay = out / "replays" / "e000004.json"
    replay.write_bytes(replay.read_bytes().replace(b'"protocol"', b' "protocol"', 1))
    line = _refused(out, capsys)
    assert (f"error: {replay} is not the replay signature.json signed (its sha256 differs)"
            f"{UNVOUCHED}restore it, or delete it for the league to play it again, or start "
            "the league in another --out") in line
    replay.unlink()  # as the refusal says: the league plays it again, byte for byte
    assert main(league_args(out, workers=1)) == 0
    assert replay.read_bytes() == (league12[0] / "replays" / "e000004.json").read_bytes()
    code, got = _verify(out, capsys)
    assert code == 0 and got[-1] == SUMMARY


WANDERER = '''import random


class Wanderer:
    """Waits or tries a road at random (os.urandom): never the same game twice, and its
    scores are those of a seat that only waits, whatever it tried."""

    def act(self, game, seat):
        return random.SystemRandom().choice(["I wait.", "I walk to the Moon.", "I wait."])
'''


def test_a_lost_replay_a_seat_cannot_give_again_is_refused_not_signed_anew(
        tmp_path, monkeypatch, capsys) -> None:
    # Its line (the scores) comes out the same, its replay (the acts) not: the league must not
    # sign the new replay in the old one's place, nor one that guild verify would refuse.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wanderer.py").write_text(WANDERER, encoding="utf-8")
    out = tmp_path / "league"
    args = league_args(out, 6, "--trust", policies="wanderer:Wanderer,factor", workers=1)
    assert main(args) == 0
    replay = out / "replays" / "e000002.json"
    replay.unlink()
    before = _files(out)
    capsys.readouterr()
    assert main(args) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"guild league: error: {out / 'results.jsonl'} line 3 (e000002), "
                           "its replay was missing, and its episode played again does not "
                           "give the replay signature.json signed (a seat that does not play "
                           "the same twice")
    assert line.endswith(f"{UNVOUCHED}restore the line's replay from a copy, or start the "
                         "league in another --out")
    assert _files(out) == before  # the replay it played is removed again, nothing re-signed


# --- signature.json itself -----------------------------------------------------------------------

def _bad_json(out: Path) -> None:
    (out / "signature.json").write_text("{", encoding="utf-8")


def _flipped_signature(out: Path) -> None:
    path = out / "signature.json"
    body = json.loads(path.read_text(encoding="utf-8"))
    body["signature"] = ("1" if body["signature"][0] != "1" else "2") + body["signature"][1:]
    path.write_text(json.dumps(body), encoding="utf-8")


def _edited_digest(out: Path) -> None:  # a digest made to fit an edited replay
    path = out / "signature.json"
    body = json.loads(path.read_text(encoding="utf-8"))
    body["replays"]["e000004"] = "0" * 64
    path.write_text(json.dumps(body), encoding="utf-8")


def _another_key(out: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    signing.sign_dir(out, Ed25519PrivateKey.generate(), [json.loads(x)["id"]
                                                         for x in lines(out)])


@pytest.mark.parametrize("spoil", [_bad_json, _flipped_signature, _edited_digest, _another_key])
def test_a_signature_that_is_not_the_leagues_is_refused(league12, tmp_path, capsys,
                                                        spoil) -> None:
    out = copy_league(league12[0], tmp_path)
    spoil(out)
    line = _refused(out, capsys)
    path = out / "signature.json"
    if spoil is _bad_json:
        assert f"error: {path} cannot be read as JSON (JSONDecodeError); " in line
    else:
        key = json.loads((out / "league.json").read_text())["signedBy"]["publicKey"]
        fingerprint = signing.fingerprint(key)
        assert (f"error: {path}'s signature does not hold for its contents under the league's "
                f"key {fingerprint} (league.json's signedBy): it was changed or signed by "
                "another key; ") in line
    assert ("; restore it, or delete it to have every line of results.jsonl checked against "
            "its replay, or start the league in another --out") in line


def test_without_its_signature_every_line_is_checked_and_the_league_signs_again(
        league12, tmp_path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    (out / "signature.json").unlink()  # as the refusal of a spoilt one offers
    _edit_line(out, 2, _raise_score)
    line = _refused(out, capsys)
    assert (f"error: {out / 'results.jsonl'} line 3 (e000002), which no signature covers yet, "
            "does not verify: results.jsonl claims scores [0.5,") in line
    _edit_line(out, 2, lambda r: r["scores"].__setitem__(0, -0.5))  # restored
    assert lines(out) == lines(league12[0])
    assert main(league_args(out, workers=1)) == 0
    assert (out / "signature.json").read_bytes() == (
        league12[0] / "signature.json").read_bytes()


# --- lines after the signed ones (a run stopped before it signed): re-derived --------------------

@pytest.mark.parametrize("edit", [_raise_score, _extra_score, _extra_key])
def test_an_edited_line_after_a_crash_is_refused(crashed, tmp_path, capsys, edit) -> None:
    out = copy_league(crashed, tmp_path)
    _edit_line(out, 7, edit)
    line = _refused(out, capsys)
    head = f"error: {out / 'results.jsonl'} line 8 (e000007), which no signature covers yet, "
    if edit is _raise_score:
        assert head + "does not verify: results.jsonl claims scores [" in line
        assert "] but replay replays/e000007.json gives [" in line
    elif edit is _extra_score:
        assert head + "does not verify: the line has no 6 scores; " in line
    else:  # a key no league writes would be signed with the line
        assert head + ("does not verify: the line holds a key no league writes: "
                       "'checkedBy'; ") in line
    assert (f"{UNVOUCHED}restore the line and its replay as the league wrote them, or start "
            "the league in another --out") in line


def test_an_edited_line_after_a_crash_whose_replay_is_gone_is_refused_when_played_again(
        crashed, tmp_path, capsys) -> None:
    out = copy_league(crashed, tmp_path)
    _edit_line(out, 7, _raise_score)
    (out / "replays" / "e000007.json").unlink()
    with (out / "results.jsonl").open("a") as f:  # and the torn line a crash can leave
        f.write('{"id":"e0000')
    line = _refused(out, capsys)  # the replay it played is removed, the torn line kept
    assert (f"error: {out / 'results.jsonl'} line 8 (e000007), which no signature covers yet, "
            "is not what its episode gives when played again (its replay was missing): "
            "results.jsonl claims scores [") in line
    assert "] but the episode gives [" in line


def test_verify_names_a_key_no_league_writes(crashed, tmp_path, capsys) -> None:
    """``guild verify`` reports the key, shown inert, on the line that holds it."""
    out = copy_league(crashed, tmp_path)
    _edit_line(out, 7, _extra_key)
    code, got = _verify(out, capsys)
    assert code == 1
    assert ("verify: e000007 (results.jsonl line 8): the line holds a key no league writes: "
            "'checkedBy'") in got, got


def test_a_forged_seat_after_a_crash_is_refused(crashed, tmp_path, capsys) -> None:
    """A line and replay rewritten together (the replay re-derives, the line gives its
    results) with magpie playing a seat labelled factor: the seats played again tell."""
    out = copy_league(crashed, tmp_path)
    text = [json.loads(x) for x in lines(out)]
    row = text[7]
    seat = row["lineup"].index("factor")
    path = out / "replays" / f"{row['id']}.json"
    old = json.loads(path.read_text(encoding="utf-8"))
    policies = [make_policy(name) for name in row["lineup"]]
    policies[seat] = Magpie()
    game = play_episode(GameConfig(seed=row["seed"], turns=14, players=tuple(row["lineup"])),
                        policies)
    payload = game.replay_payload(row["lineup"])
    payload.update({k: old[k] for k in ("trusted", "sandbox", "fallbackPlay")})
    path.write_text(json.dumps(payload), encoding="utf-8")
    _edit_line(out, 7, lambda r: r.update({k: game.results()[k] for k in RESULT_KEYS}))
    line = _refused(out, capsys)
    assert (f"line 8 (e000007), which no signature covers yet, does not verify: replay "
            f"replays/e000007.json: seat {seat} (factor) played ") in line


def test_an_honest_crash_resumes_and_signs(crashed, tmp_path, capsys) -> None:
    out = copy_league(crashed, tmp_path)
    kept = lines(out)
    (out / "replays" / "e000007.json").unlink()  # unsigned, but deterministic: played again
    with (out / "results.jsonl").open("a") as f:
        f.write('{"id":"e0000')
    capsys.readouterr()
    assert main(league_args(out, workers=1)) == 0
    err = capsys.readouterr().err
    assert "played 1 episodes again whose replay was missing (e000007)" in err
    assert "cut the unfinished last line" in err
    assert lines(out)[:9] == kept and len(lines(out)) == 12
    assert len(json.loads((out / "signature.json").read_text())["replays"]) == 12
    code, got = _verify(out, capsys)
    assert code == 0 and got[-1] == SUMMARY


def test_a_first_run_stopped_before_it_signed_resumes_and_signs(tmp_path, capsys,
                                                                monkeypatch) -> None:
    out = tmp_path / "first"

    def interrupted(self: object, done: int, total: int) -> None:
        if done == 4:
            raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(cli._ProgressBar, "__call__", interrupted)
        assert main(league_args(out, 12, workers=1)) == 130
    assert not (out / "signature.json").exists() and len(lines(out)) == 4
    _edit_line(out, 1, _extra_score)
    line = _refused(out, capsys)
    assert "line 2 (e000001), which no signature covers yet, does not verify" in line
    _edit_line(out, 1, lambda r: r["scores"].pop())
    assert main(league_args(out, 12, workers=1)) == 0
    code, got = _verify(out, capsys)
    assert code == 0 and got[-1] == SUMMARY


@given(cut=st.integers(min_value=0, max_value=10**9), block=st.integers(min_value=1, max_value=64))
@settings(max_examples=40, deadline=None)
def test_tidy_cuts_a_results_file_cut_anywhere_back_to_its_complete_lines(
        league12, tmp_path_factory, cut, block) -> None:
    """A refused run must not change the file, so the torn line is cut after the checks, by
    reading back from the end (in blocks of any size) rather than the whole file again."""
    data = (league12[0] / "results.jsonl").read_bytes()
    cut %= len(data) + 1
    out = tmp_path_factory.mktemp("tidy")
    path = out / "results.jsonl"
    path.write_bytes(data[:cut])
    whole = data[:cut].rfind(b"\n") + 1
    assert _complete(path, block) == (cut, whole)
    with LeagueDir(out) as d:
        d.tidy()
    assert path.read_bytes() == data[:whole]


# --- files that are not what they seem: refused unread, in bounded time and memory ---------------

def _regular_files(out: Path) -> dict[str, bytes]:
    """The regular files of ``out`` (no symlink followed, no FIFO opened)."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and not p.is_symlink()}


def _refused_unread(out: Path, capsys) -> str:
    before = _regular_files(out)
    capsys.readouterr()
    assert main(league_args(out, 12, workers=1)) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith("guild league: error: ")
    assert _regular_files(out) == before
    return line


def _zero(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


@pytest.mark.parametrize("make", [_zero, _fifo], ids=["dev-zero", "fifo"])
@pytest.mark.parametrize("episode", ["e000002", "e000007"], ids=["signed", "unsigned"])
def test_a_replay_that_is_a_device_or_a_fifo_is_refused_unread(crashed, tmp_path, capsys, make,
                                                               episode) -> None:
    out = copy_league(crashed, tmp_path)
    make(out / "replays" / f"{episode}.json")
    line = _refused_unread(out, capsys)
    assert episode in line


@pytest.mark.parametrize("make", [_zero, _fifo], ids=["dev-zero", "fifo"])
@pytest.mark.parametrize("name", ["signature.json", "results.jsonl", "league.json"])
def test_a_signature_results_or_manifest_that_is_a_device_or_a_fifo_is_refused_unread(
        league12, tmp_path, capsys, make, name) -> None:
    out = copy_league(league12[0], tmp_path)
    make(out / name)
    line = _refused_unread(out, capsys)
    assert name in line and "regular file" in line
    if name == "league.json":  # guild verify, which cannot go on without it, too
        capsys.readouterr()
        assert main(["verify", str(out)]) == 2
        line = one_error_line(capsys.readouterr().err)
        assert name in line and "regular file" in line


def test_a_line_joined_to_the_next_by_a_carriage_return_is_refused(crashed, tmp_path,
                                                                   capsys) -> None:
    # A bare "\r" is no line end: the league and its signature count lines at "\n" only, so
    # the two lines are one line that is not JSON (were they two, the resume would sign a file
    # it then could not resume).
    out = copy_league(crashed, tmp_path)
    data = (out / "results.jsonl").read_bytes().split(b"\n")
    data[6] += b"\r" + data.pop(7)
    (out / "results.jsonl").write_bytes(b"\n".join(data))
    line = _refused_unread(out, capsys)
    assert "line 7 is not valid JSON" in line


def test_a_folder_named_like_a_temp_file_is_left_alone(crashed, tmp_path, capsys) -> None:
    out = copy_league(crashed, tmp_path)
    (out / "notes.tmp").mkdir()
    (out / "replays" / "x.tmp").mkdir()
    capsys.readouterr()
    assert main(league_args(out, workers=1)) == 0
    assert (out / "notes.tmp").is_dir() and (out / "replays" / "x.tmp").is_dir()
    assert len(lines(out)) == 12
