"""The suite's own rules (tests/conftest.py): in CI a skip fails the run; elsewhere a selection
whose every module was skipped for want of an extra (the README's ``pytest -m alone`` without
the local-llm extra) passes instead of pytest's exit 5."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

SKIPPED_MODULE = '''
import pytest
from conftest import needs

needs(False, "an extra this machine lacks")


@pytest.mark.alone
def test_real_model() -> None:
    assert False
'''


def run_alone(tmp_path: Path, *args: str, ci: bool) -> int:
    shutil.copy(TESTS / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_extra.py").write_text(SKIPPED_MODULE, encoding="utf-8")
    (tmp_path / "test_plain.py").write_text("def test_plain() -> None:\n    pass\n",
                                            encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    alone: by itself\n",
                                         encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("GUILD_CI", "PYTEST_ADDOPTS")}
    if ci:
        env["GUILD_CI"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300).returncode


def test_a_selection_skipped_whole_passes_off_ci(tmp_path: Path) -> None:
    assert run_alone(tmp_path, "-m", "alone", ci=False) == pytest.ExitCode.OK


def test_a_selection_skipped_whole_fails_in_ci(tmp_path: Path) -> None:
    assert run_alone(tmp_path, "-m", "alone", ci=True) != pytest.ExitCode.OK


def test_a_selection_of_nothing_still_says_so(tmp_path: Path) -> None:
    """Nothing skipped and nothing chosen is a mistake in the selection: pytest's exit 5."""
    code = run_alone(tmp_path, "-m", "alone", "test_plain.py", ci=False)
    assert code == pytest.ExitCode.NO_TESTS_COLLECTED
