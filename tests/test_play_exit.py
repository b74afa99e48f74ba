"""``guild play`` ends cleanly at the end of input while the opponents still think in torch.

The opponents are asked in a background thread as each turn opens (``terminal.Deciding``), so
input that ends at once (``</dev/null``) leaves while a network's forward pass runs in torch with
the interpreter's lock released.  Had the process exited then, the interpreter would have stopped
that thread where it takes the lock back, unwinding through C++ frames that may not be unwound:
``terminate called without an active exception`` and exit 134 instead of 0.

Both tests run the command in fresh processes, one after another (side by side, the processes
slow each other down and the race is lost less often): against ``ppo:`` opponents, whose few
forward passes lost the race most of the time, and against opponents that stay in torch for
half a second each, which lost it every time.  A person who leaves waits for the opponent that
is thinking, but for none after it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import needs_module

torch = needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")

from agents.learn import ppo  # noqa: E402  (needs torch)

ROOT = Path(__file__).resolve().parents[1]

SLOW_POLICY = '''
import time

import torch


class InTorch:
    """Waits each turn, after half a second of matrix products (the lock released)."""

    def act(self, game, seat):
        a = torch.ones(256, 256)
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            torch.mm(a, a)
        return "I wait."
'''


def _leave_at_once(opponents: str, runs: int, env: dict[str, str] | None = None) -> None:
    """``guild play`` with no input, ``runs`` times: each exits 0 with the results, no abort."""
    argv = [sys.executable, "-m", "league", "play", "--seed", "1", "--turns", "6",
            "--opponents", opponents]
    for _ in range(runs):
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              cwd=str(ROOT), env=env, timeout=120, check=False)
        assert "terminate called" not in done.stderr, done.stderr
        assert done.returncode == 0, (done.returncode, done.stderr)
        assert "RESULTS after 0 of 6 turns: you left (end of input)." in done.stdout


def test_end_of_input_against_ppo_opponents_exits_0(tmp_path: Path) -> None:
    torch.manual_seed(1)
    ppo.save_model(ppo.PolicyNet(460, 267), tmp_path / "model.pt", {"seed": 1, "steps": 0})
    _leave_at_once(f"ppo:{tmp_path}", 3)


def test_end_of_input_while_an_opponent_is_in_torch_exits_0(tmp_path: Path) -> None:
    import os

    (tmp_path / "in_torch.py").write_text(SLOW_POLICY)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])]))
    _leave_at_once("in_torch:InTorch", 2, env)


NEVER_POLICY = '''
import time


class Never:
    """Never answers (as far as a person waits)."""

    def act(self, game, seat):
        time.sleep(3600)
'''


def test_leaving_does_not_wait_for_an_opponent_that_never_answers(tmp_path: Path) -> None:
    """A person who quits while an opponent hangs waits SETTLE_LIMIT seconds at most, told so
    and that Ctrl-C leaves at once; the game ends with its results and exit 0 (the limit is
    set to half a second here)."""
    (tmp_path / "never.py").write_text(NEVER_POLICY)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import league.cli.terminal as t; "
            "t.SETTLE_LIMIT = 0.5; from league.cli.guild import main; "
            "sys.exit(main(['play', '--seed', '1', '--turns', '6', '--opponents', "
            "'never:Never']))")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], input="quit\n",
                          capture_output=True, text=True, cwd=str(ROOT), timeout=60,
                          check=False)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "(waiting up to 0.5 s for an opponent to finish thinking; Ctrl-C leaves now)" in (
        done.stdout + done.stderr)
    assert "RESULTS after 0 of 6 turns: you quit." in done.stdout
