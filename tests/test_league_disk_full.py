"""A league whose disk fills up stops in one line (exit status 1), keeps every episode it had
written whole, and the same command resumes it once there is room: the disk is the machine's
state, not a mistake of the user's or a bug to show as a traceback."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest
from conftest import needs
from leagues import league_args, rows

from league.cli.guild import main
from league.core.store import ResultsAppender

EPISODES = 12


def _error_lines(err: str) -> list[str]:
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("guild league: error")]


def test_a_full_disk_stops_the_league_in_one_line_and_the_same_command_resumes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    out = tmp_path / "full"
    args = league_args(out, EPISODES, "--turns", "6", workers=1)
    real = ResultsAppender.append
    batches: list[int] = []

    def append(self, batch) -> None:  # the second batch of lines finds the disk full
        if batch:
            batches.append(len(batch))
        if len(batches) >= 2 and batch:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(out / "results.jsonl"))
        real(self, batch)

    monkeypatch.setattr(ResultsAppender, "append", append)
    assert main(args) == 1
    (line,) = _error_lines(capsys.readouterr().err)
    assert line == (f"guild league: error: No space left on device ({out / 'results.jsonl'}); "
                    "finished episodes are kept, run the same command again to resume")
    kept = rows(out)
    assert 0 < len(kept) == batches[0] < EPISODES
    monkeypatch.setattr(ResultsAppender, "append", real)
    assert main(args) == 0
    assert [r["index"] for r in rows(out)] == list(range(EPISODES))
    assert rows(out)[:len(kept)] == kept
    assert main(["verify", str(out)]) == 0


def test_another_os_error_is_not_taken_for_a_full_disk(tmp_path: Path, monkeypatch) -> None:
    """Only the storage's own errors get the one line; any other is a bug, shown whole."""

    def append(self, batch) -> None:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    monkeypatch.setattr(ResultsAppender, "append", append)
    with pytest.raises(OSError, match="Bad file descriptor"):
        main(league_args(tmp_path / "bad", 6, "--turns", "6", workers=1))


def test_a_real_full_file_system(tmp_path: Path, capsys) -> None:
    """A tmpfs too small for the league's replays (as root: CI runs as root)."""
    needs(os.getuid() == 0, "root, to mount a small tmpfs (CI runs as root)")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(disk)], check=True)
    try:
        out = disk / "league"
        args = league_args(out, 60, "--turns", "8", workers=1)
        assert main(args) == 1
        (line,) = _error_lines(capsys.readouterr().err)
        assert "No space left on device" in line and line.endswith("again to resume")
        kept = rows(out)
        assert 0 < len(kept) < 60
        subprocess.run(["mount", "-o", "remount,size=8m", str(disk)], check=True)
        assert main(args) == 0
        assert rows(out)[:len(kept)] == kept and len(rows(out)) == 60
        assert main(["verify", str(out)]) == 0
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
