"""What the commands write and where: ``guild view`` checks its input before it names the page,
and replaces only a page of its own (never the replay it reads, a person's file, a link or a
device); ``guild play --replay`` likewise replaces only a replay and refuses an empty name;
``guild evaluate`` seats at most five others, as ``guild play`` does; ``guild train`` whose
reader leaves (``| head -1``) trains to the end, saves every file and exits 141, and is sent
to ``--resume`` after a file error only when there is a checkpoint to resume.
"""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs, needs_module
from leagues import one_error_line

from agents import play_episode
from agents.learn.evaluation import (
    EvaluationError,
    PairedResult,
    is_result_json,
    paired_evaluation,
)
from league.cli import html_viewer as viewer
from league.cli import terminal
from league.cli.guild import main
from league.core.errors import LeagueError
from league.core.files import HEAD_BYTES, check_replaceable
from sim import GameConfig
from sim.commandline import EXIT_BROKEN_PIPE

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ["--envs", "16", "--eval-episodes", "2", "--steps", "500"]
SAVED = ("checkpoint.pt", "model.pt", "summary.json", "curve.csv")


@pytest.fixture(scope="module")
def replay_bytes() -> bytes:
    game = play_episode(GameConfig(seed=3, turns=6), ["factor", "magpie"] * 3)
    return json.dumps(game.replay_payload()).encode()


@pytest.fixture
def replay(tmp_path: Path, replay_bytes: bytes) -> Path:
    path = tmp_path / "game.json"
    path.write_bytes(replay_bytes)
    return path


def _refused(args: list[str], capsys: pytest.CaptureFixture[str], *words: str) -> str:
    """Run ``guild ARGS``: exit 2, one line on stderr holding ``words``, nothing on stdout."""
    assert main(args) == 2
    got = capsys.readouterr()
    line = one_error_line(got.err)
    assert line.startswith(f"guild {args[0]}: error: "), line
    assert all(w in line for w in words), line
    return got.out


# --- guild view: the input first ---------------------------------------------------------------
@pytest.mark.parametrize(("name", "words"), [
    (".", ". is a directory, not a replay file"),
    ("/", "/ is a directory, not a replay file"),
    ("", "REPLAY.json is empty"),
])
def test_view_of_a_folder_or_nothing_is_one_line(name: str, words: str, capsys) -> None:
    assert _refused(["view", name], capsys, words) == ""


# --- guild view: the output --------------------------------------------------------------------
def test_view_never_writes_over_the_replay_it_reads(tmp_path: Path, replay_bytes: bytes,
                                                    capsys) -> None:
    named_html = tmp_path / "rep.html"  # its page would be rep.html: the replay itself
    named_html.write_bytes(replay_bytes)
    _refused(["view", str(named_html)], capsys, "is the replay being read")
    assert named_html.read_bytes() == replay_bytes
    src = tmp_path / "game.json"
    src.write_bytes(replay_bytes)
    os.link(src, tmp_path / "same.json")  # another name of the same file
    for out in (src, tmp_path / "same.json"):
        _refused(["view", str(src), "-o", str(out)], capsys, "is the replay being read")
    assert src.read_bytes() == replay_bytes


def test_view_keeps_a_file_that_is_not_its_page(replay: Path, tmp_path: Path,
                                                capsys) -> None:
    notes = tmp_path / "README.md"
    notes.write_text("my notes\n")
    _refused(["view", str(replay), "-o", str(notes)], capsys,
             f"{notes} exists and is not a page guild view wrote; it is kept")
    assert notes.read_text() == "my notes\n"
    # the default page's name taken by someone else's file is kept the same way
    (tmp_path / "game.html").write_text("<html>mine</html>")
    _refused(["view", str(replay)], capsys, "is not a page guild view wrote")
    assert (tmp_path / "game.html").read_text() == "<html>mine</html>"


def test_view_keeps_links_and_fifos(replay: Path, tmp_path: Path, capsys) -> None:
    """A rename over the name would replace the link or the node itself (as root, even a
    device: ``-o /dev/full`` left a regular file in /dev)."""
    target = tmp_path / "elsewhere.html"
    target.write_text("not mine")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    _refused(["view", str(replay), "-o", str(link)], capsys, "is not a regular file")
    assert link.is_symlink() and target.read_text() == "not mine"
    needs(hasattr(os, "mkfifo"), "FIFOs (POSIX)")
    fifo = tmp_path / "fifo.html"
    os.mkfifo(fifo)
    _refused(["view", str(replay), "-o", str(fifo)], capsys, "is not a regular file")
    assert fifo.is_fifo()


def test_view_replaces_its_own_pages(replay: Path, tmp_path: Path, capsys) -> None:
    page = tmp_path / "page.html"
    for _ in range(2):
        assert main(["view", str(replay), "-o", str(page)]) == 0
        assert capsys.readouterr().out == f"view: wrote {page}\n"
    assert viewer.VIEW_MARK in page.read_bytes()[:HEAD_BYTES]
    assert main(["view", str(replay)]) == 0  # the default name, written and written again
    assert main(["view", str(replay)]) == 0
    assert viewer.is_view_page((tmp_path / "game.html").read_bytes())
    # a page guild report had written (its stamp first) is one of the viewer's too
    stamped = tmp_path / "stamped.html"
    assert viewer.write_view(replay, stamped)
    assert main(["view", str(replay), "-o", str(stamped)]) == 0


def test_view_dash_is_standard_output(replay: Path, tmp_path: Path, monkeypatch,
                                      capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["view", str(replay), "-o", "-"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    assert viewer.is_view_page(out.encode()[:HEAD_BYTES])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["game.json"]  # no file named "-"


def test_view_output_names_that_are_no_file(replay: Path, tmp_path: Path, capsys) -> None:
    _refused(["view", str(replay), "-o", ""], capsys, "-o is empty")
    _refused(["view", str(replay), "-o", str(tmp_path / "a\0b")], capsys,
             "-o: a path cannot hold a NUL character")
    _refused(["view", str(tmp_path / "a\0b")], capsys, "REPLAY.json: a path cannot hold a NUL")
    _refused(["view", str(replay), "-o", str(tmp_path)], capsys, "is a directory")
    notes = tmp_path / "notes.txt"
    notes.write_text("x")
    _refused(["view", str(replay), "-o", str(notes / "p.html")], capsys, "cannot write")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["game.json", "notes.txt"]


def test_check_replaceable_reads_only_the_head(tmp_path: Path) -> None:
    path = tmp_path / "f"
    check_replaceable(path, lambda head: False, "x", "-o")  # absent: nothing to lose
    path.write_bytes(b"a" * 100 + b"MARK")
    seen: list[bytes] = []
    with pytest.raises(LeagueError, match="is not ours; it is kept"):
        check_replaceable(path, lambda head: seen.append(head) or False, "ours", "-o",
                                 limit=100)
    assert seen == [b"a" * 100]
    check_replaceable(path, lambda head: b"MARK" in head, "ours", "-o", limit=104)


# --- guild play --replay -----------------------------------------------------------------------
def _play(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr(sys, "stdin", io.StringIO("I wait\nquit\n"))
    return main(["play", "--seed", "3", "--turns", "6", *args])


def test_play_refuses_an_empty_replay_name_before_the_game(monkeypatch, capsys) -> None:
    assert _play(monkeypatch, "--replay", "") == 2
    got = capsys.readouterr()
    assert "--replay is empty" in one_error_line(got.err)
    assert "The guild game" not in got.out


def test_play_replaces_a_replay_and_keeps_other_files(tmp_path: Path, monkeypatch,
                                                      capsys) -> None:
    saved = tmp_path / "r.json"
    for _ in range(2):  # a replay played before is replaced
        assert _play(monkeypatch, "--replay", str(saved)) == 0
        assert json.loads(saved.read_text())["protocol"] == viewer.PROTOCOL
    capsys.readouterr()
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": true}')
    assert _play(monkeypatch, "--replay", str(notes)) == 2
    got = capsys.readouterr()
    assert "is not a replay; it is kept" in one_error_line(got.err)
    assert "The guild game" not in got.out and notes.read_text() == '{"mine": true}'
    link = tmp_path / "link.json"
    link.symlink_to(saved)
    with pytest.raises(LeagueError, match="not a regular file"):
        terminal.check_replay_path(str(link))


def test_play_keeps_a_file_made_at_its_replay_path_during_the_game(tmp_path: Path,
                                                                   monkeypatch, capsys) -> None:
    """The path is checked again when the game ends: a file someone wrote there meanwhile is
    kept, in one line."""
    path = tmp_path / "later.json"

    class Typist(io.StringIO):  # a person who saves notes at that path while playing
        def readline(self, *args: object) -> str:
            if not path.exists():
                path.write_text("my notes")
            return super().readline(*args)

    monkeypatch.setattr(sys, "stdin", Typist("I wait\nquit\n"))
    assert main(["play", "--seed", "3", "--turns", "6", "--replay", str(path)]) == 2
    assert "is not a replay; it is kept" in one_error_line(capsys.readouterr().err)
    assert path.read_text() == "my notes"


# --- guild evaluate: five other seats ----------------------------------------------------------
def test_evaluate_seats_at_most_five_others_in_plays_words(capsys) -> None:
    seven = "random,random,random,random,random,magpie,magpie"
    out = _refused(["evaluate", "factor", "--against", seven, "--seeds", "0..3"], capsys,
                   "against names 7 policies; there are only 5 other seats")
    assert out == ""
    with pytest.raises(LeagueError) as played:
        terminal.opponent_specs(seven)
    assert str(played.value).endswith("names 7 policies; there are only 5 other seats")
    with pytest.raises(EvaluationError, match="names 6 policies"):
        paired_evaluation("factor", against=["factor"] * 6, seeds=range(2))


@pytest.mark.parametrize("field", ["policy", "baseline"])
def test_evaluate_refuses_an_empty_policy_name(field: str) -> None:
    spec, baseline = ("  ", "factor") if field == "policy" else ("factor", "")
    with pytest.raises(EvaluationError, match=f"^{field} is an empty policy name$"):
        paired_evaluation(spec, baseline=baseline, seeds=range(2))


def test_result_json_is_told_from_other_files() -> None:
    result = PairedResult(spec="s", baseline="factor", against=("magpie",), seeds=(0, 1),
                          n_seeds=2, turns=14, games=12, mean=1.0, baseline_mean=0.5, diff=0.5,
                          low=0.0, high=1.0, per_seat=(0.5,) * 6, engine="batched",
                          seconds=0.1)
    written = {**result.to_dict(), "world": None}  # as guild evaluate --json writes it
    assert is_result_json(json.dumps(written, indent=2).encode())
    partial = {k: v for k, v in written.items() if k != "per_seat"}
    for other in (json.dumps(partial).encode(), b'{"mine": 1}', b"[]", b"not json",
                  b"\xff\xfe", b"[" * 100_000):
        assert not is_result_json(other), other[:20]


# --- guild train -------------------------------------------------------------------------------
def _train_to_a_gone_reader(out: Path, both: bool) -> subprocess.CompletedProcess:
    """``guild train`` with standard output (and with ``both``, standard error: ``2>&1``) a
    pipe whose reader has already left."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "league", "train", *TRAIN, "--out",
                               str(out)], stdout=write,
                              stderr=write if both else subprocess.PIPE, text=True, cwd=ROOT,
                              timeout=600)
    finally:
        os.close(write)


@pytest.mark.parametrize("both", [False, True], ids=["stdout", "stdout-and-stderr"])
def test_train_whose_reader_left_finishes_and_saves_everything(tmp_path: Path,
                                                               both: bool) -> None:
    needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")
    out = tmp_path / "run"
    done = _train_to_a_gone_reader(out, both)
    assert done.returncode == EXIT_BROKEN_PIPE, done.stderr
    if not both:
        assert "Traceback" not in done.stderr and "file error" not in done.stderr, done.stderr
    assert all((out / name).is_file() for name in SAVED), sorted(os.listdir(out))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] >= 500 and summary["after"] is not None


def test_a_file_error_before_any_checkpoint_is_not_sent_to_resume(tmp_path: Path, monkeypatch,
                                                                  capsys) -> None:
    needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")
    from agents.learn import training_loop

    def full(*_: object) -> dict:
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "run" / "tb"))

    args = ["train", *TRAIN, "--steps", "1", "--quiet", "--out", str(tmp_path / "run")]
    with monkeypatch.context() as m:
        m.setattr(training_loop, "evaluate", full)  # the first evaluation, before any update
        assert main(args) == 1
    line = one_error_line(capsys.readouterr().err)
    assert "file error" in line and "No space left on device" in line, line
    assert "--resume" not in line and "run the same command again" in line, line
    assert main(args) == 0  # the advice holds: the same command begins anew
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
def test_evaluate_json_replaces_only_its_own_figures(tmp_path: Path, capsys) -> None:
    args = ["evaluate", "factor", "--seeds", "0..1", "--json"]
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": 1}')
    _refused([*args, str(notes)], capsys, "is not a result file guild evaluate wrote; it is kept")
    assert notes.read_text() == '{"mine": 1}'
    link = tmp_path / "link.json"
    link.symlink_to(notes)
    _refused([*args, str(link)], capsys, "is not a regular file")
    _refused([*args, ""], capsys, "--json is empty")
    figures = tmp_path / "figures.json"
    for _ in range(2):  # its own figures are replaced
        assert main([*args, str(figures)]) == 0
        assert is_result_json(figures.read_bytes())


def test_a_standard_output_open_for_reading_only_is_one_line() -> None:
    """``guild evaluate ... 1</dev/null``: its report's print raised OSError EBADF, a
    traceback and exit 1."""
    with open(os.devnull, "rb") as read_only:
        done = subprocess.run([sys.executable, "-m", "league", "evaluate", "random", "--seeds",
                               "0..1", "--turns", "6"], stdout=read_only,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=300)
    lines = [line for line in done.stderr.splitlines() if not line.startswith("guild-game:")]
    assert done.returncode == 2 and lines == [
        "guild evaluate: error: cannot write the output: standard output is closed or not "
        "open for writing"], done.stderr


@pytest.mark.parametrize("argv, words", [
    (["verify", ""], "guild verify: error: DIR is empty"),
    (["report", ""], "guild report: error: DIR is empty"),
    (["report", ".", "--out", ""], "guild report: error: --out is empty"),
])
def test_an_empty_path_is_named_empty(argv: list[str], words: str, capsys) -> None:
    """``""`` is the current folder to Path: ". has no results.jsonl", ". is a directory"."""
    assert main(argv) == 2
    assert one_error_line(capsys.readouterr().err).startswith(words)
