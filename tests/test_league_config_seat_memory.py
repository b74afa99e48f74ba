"""``--seat-memory`` is part of a league's configuration, as every other limit is: a league whose
seats ran apart records it in ``league.json`` (``seatMemory``), and a resume with another value
is refused, so that no policy plays half a league under one cap and half under another.  A
league begun before it was recorded resumes with any value and records it from then on."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from leagues import league_args, one_error_line, rows

from league.cli.guild import main
from league.core import signing

WAITS = "seatmem_waits:Waits"
TURNS = ["--turns", "6", "--sandbox", "none"]  # apart, as a sandbox runs it; no bwrap needed


@pytest.fixture
def waits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "seatmem_waits.py").write_text(textwrap.dedent("""
        class Waits:
            def act(self, game, seat):
                return "I wait and watch the road."
    """), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"factor,{WAITS}"


def _manifest(out: Path) -> dict:
    return json.loads((out / "league.json").read_text(encoding="utf-8"))


def _files(out: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}


def test_a_resume_with_another_seat_memory_is_refused_in_one_line(
        tmp_path: Path, waits: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "league"
    assert main(league_args(out, 6, *TURNS, "--seat-memory", "2048", policies=waits,
                            workers=1)) == 0
    assert _manifest(out)["seatMemory"] == 2048
    before = _files(out)
    for given, shown in ((["--seat-memory", "1024"], "1024"), ([], "4096")):
        capsys.readouterr()
        assert main(league_args(out, 12, *TURNS, *given, policies=waits, workers=1)) == 2
        assert one_error_line(capsys.readouterr().err).endswith(
            f"holds a league with a different configuration (--seat-memory was 2048, now "
            f"{shown}); use the same options or another --out")
        assert _files(out) == before  # refused before anything is written
    assert main(league_args(out, 12, *TURNS, "--seat-memory", "2048", policies=waits,
                            workers=1)) == 0
    assert len(rows(out)) == 12
    # seats that all play in the league's process have no seat memory to record
    trusted = tmp_path / "trusted"
    assert main(league_args(trusted, 6, *TURNS, "--trust", policies=waits, workers=1)) == 0
    assert "seatMemory" not in _manifest(trusted)


def test_a_league_that_did_not_record_its_seat_memory_resumes_and_records_it(
        tmp_path: Path, waits: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "league"
    assert main(league_args(out, 6, *TURNS, policies=waits, workers=1)) == 0
    # as a league begun before seatMemory was recorded wrote it, and signed it
    manifest = _manifest(out)
    del manifest["seatMemory"]
    (out / "league.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    signing.sign_league(out, None, rows(out))
    assert main(["verify", str(out)]) == 0
    assert main(league_args(out, 12, *TURNS, "--seat-memory", "1024", policies=waits,
                            workers=1)) == 0
    assert len(rows(out)) == 12 and _manifest(out)["seatMemory"] == 1024
    assert main(["verify", str(out)]) == 0
    capsys.readouterr()
    assert main(league_args(out, 18, *TURNS, policies=waits, workers=1)) == 2
    assert "(--seat-memory was 1024, now 4096)" in one_error_line(capsys.readouterr().err)
