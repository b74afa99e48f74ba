"""Every figure a whole ``python -m bench`` prints runs alone with ``--only NAME`` and prints the
same ``<name>: <value> <unit>`` line (docs/api.md §6), from the same measurement.

The measurements run for real, at the smallest sizes they take (a hundredth of a second per
timed loop, leagues of 4 episodes, 8 batched episodes in lockstep): these tests check what is
printed, never how fast.

A figure this machine cannot measure (here: no sandbox, ``league.apart.sandbox.problem``
patched) is named on stderr with why, the other figures go on, and ``--only`` exits 1 when a
figure it asked for was not measured (a whole run exits 0).
"""

from __future__ import annotations

import re

import pytest
from conftest import needs, needs_module

import bench.__main__ as bench

TINY = bench.Sizes(seconds=0.01, league_episodes=4, batched_n=8, train_seconds=0.01)


@pytest.fixture
def tiny(monkeypatch, tmp_path) -> None:
    """``--quick`` at the tiny sizes; the bench leagues' replays under ``tmp_path``."""
    import tempfile

    monkeypatch.setattr(bench, "QUICK", TINY)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # the leagues' folder made already: bench registers no clean-up at exit (patching
    # atexit.register would swallow torch's own, imported meanwhile, and its exit would fail)
    monkeypatch.setattr(bench, "_LEAGUES", [str(tmp_path)])


def _needs_for(names) -> None:
    """What the figures' measurements need, or a skip (a failure in CI)."""
    if {"train_steps_per_s", "train_engine_share"} & set(names):
        needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")
    if any(name.startswith(("sandbox_", "league_isolated_")) for name in names):
        from league.apart import sandbox

        why = sandbox.problem()
        needs(why is None, f"a bubblewrap sandbox ({why}; apt-get install bubblewrap)")


def _figures(out: str) -> list[tuple[str, float]]:
    """The printed lines as (name, value), each checked against its figure's format: the
    name, a number of at least 0 with the figure's decimals, the figure's unit."""
    got = []
    for line in out.splitlines():
        name = line.split(":")[0]
        assert name in bench.FIGURES, line
        figure = bench.FIGURES[name][1]
        number = r"\d+" + (rf"\.\d{{{figure.decimals}}}" if figure.decimals else "")
        found = re.fullmatch(rf"{re.escape(name)}: ({number}) {re.escape(figure.unit)}", line)
        assert found, f"{line!r} is not '<name>: <value> {figure.unit}'"
        # at the tiny sizes on a loaded machine a ratio may round to 0.00: never below it
        assert float(found[1]) >= 0, line
        got.append((name, float(found[1])))
    return got


def test_a_whole_run_prints_every_figure_once_in_order(tiny, capsys) -> None:
    _needs_for(bench.FIGURES)
    assert bench.main(["--quick"]) == 0
    printed = [name for name, _ in _figures(capsys.readouterr().out)]
    assert printed == list(bench.FIGURES)


@pytest.mark.parametrize("name", list(bench.FIGURES))
def test_only_runs_any_figure_alone(name, tiny, capsys) -> None:
    _needs_for([name])
    assert bench.main(["--quick", "--only", name]) == 0
    assert [n for n, _ in _figures(capsys.readouterr().out)] == [name]


def test_only_reads_a_figure_as_the_whole_run_does(monkeypatch, capsys) -> None:
    """A figure read from its measurement's result (a ratio, a share, one of a pair) is the
    whole run's line for the same result: one formula per figure."""
    results = {"batched_engine_seat_steps_per_s": 5_888_400.0,  # 100 x the original
               "train_steps_per_s": (16_000.0, 0.04),
               "league_isolated_episodes_per_s": (40.0, 400.0),
               "sandbox_seat_cold_start_s": (0.25, 0.012)}
    for name, result in results.items():
        monkeypatch.setattr(bench.FIGURES[name][0], "measure", lambda sizes, _r=result: _r)
    monkeypatch.setattr(bench, "MEASUREMENTS",
                        tuple(bench.FIGURES[name][0] for name in results))
    assert bench.main([]) == 0
    whole = capsys.readouterr().out.splitlines()
    assert whole == ["batched_engine_seat_steps_per_s: 5888400 seat-steps/s",
                     "batched_engine_vs_original: 100.0 x",
                     "train_steps_per_s: 16000 steps/s",
                     "train_engine_share: 4 %",
                     "league_isolated_episodes_per_s: 40.0 episodes/s",
                     "league_trusted_episodes_per_s: 400.0 episodes/s",
                     "league_isolated_vs_trusted: 0.10 x",
                     "sandbox_seat_cold_start_s: 0.250 s",
                     "sandbox_seat_warm_start_s: 0.012 s"]
    for line in whole:
        assert bench.main(["--only", line.split(":")[0]]) == 0
        assert capsys.readouterr().out.splitlines() == [line]


def test_only_lists_every_figure_in_its_help(capsys) -> None:
    with pytest.raises(SystemExit):
        bench.main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    for name in bench.FIGURES:
        assert name in help_text


# --- figures this machine cannot measure --------------------------------------------------

NO_BWRAP = "bubblewrap (bwrap) is not installed"
APART = [name for name in bench.FIGURES if name.startswith(("sandbox_", "league_isolated_"))]
TRUSTED = [name for name in bench.FIGURES if name.startswith("league_trusted_")]
TRUSTED_RATE = 400.0  # episodes/s of a trusted bench league in these tests


@pytest.fixture
def no_sandbox(monkeypatch) -> list[int]:
    """No sandbox can start here (``league.apart.sandbox.problem``), and no bench league of
    sandboxed seats may run (a trusted one runs at :data:`TRUSTED_RATE`); the number of times
    the sandbox was asked for."""
    from league.apart import sandbox

    asked: list[int] = []
    monkeypatch.setattr(sandbox, "problem", lambda: asked.append(1) or NO_BWRAP)

    def league(episodes, policies=("factor", "magpie"), trust=False):
        assert trust, "a bench league of sandboxed seats ran without a sandbox"
        return TRUSTED_RATE

    monkeypatch.setattr(bench, "bench_league", league)
    return asked


def _note(name: str) -> str:
    return f"bench: {name} not measured: no bubblewrap sandbox ({NO_BWRAP})"


@pytest.mark.parametrize("name", APART)
def test_a_figure_asked_for_without_a_sandbox_is_named_and_exits_1(name, no_sandbox, tiny,
                                                                    capsys) -> None:
    assert bench.main(["--quick", "--only", name]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert _note(name) in err.splitlines()
    assert "Traceback" not in err and "LeagueError" not in err


def test_the_other_figures_asked_for_go_on_without_a_sandbox(no_sandbox, monkeypatch,
                                                             capsys) -> None:
    """Each figure asked for is printed or named on stderr, in the order asked; a measurement
    that cannot run is tried once, whatever the rounds; one whose sandboxed part cannot run
    still measures its trusted part every round."""
    monkeypatch.setattr(bench.FIGURES["parse_sentences_per_s"][0], "measure",
                        lambda sizes: 100_000.0)
    argv = ["--rounds", "3", "--only", "league_isolated_vs_trusted",
            "--only", "parse_sentences_per_s", "--only", "sandbox_seat_warm_start_s",
            "--only", "league_trusted_episodes_per_s"]
    assert bench.main(argv) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == ["parse_sentences_per_s: 100000 sentences/s",
                                f"league_trusted_episodes_per_s: {TRUSTED_RATE:.1f} episodes/s"]
    notes = [line for line in err.splitlines() if "not measured" in line]
    assert notes == [_note("league_isolated_vs_trusted"), _note("sandbox_seat_warm_start_s")]
    assert len(no_sandbox) == 3 + 1  # each round for the league pair, once for the seat's start


def test_a_trusted_figure_is_measured_without_a_sandbox(no_sandbox, tiny, capsys) -> None:
    for name in TRUSTED:
        assert bench.main(["--quick", "--only", name]) == 0
        out, err = capsys.readouterr()
        assert out.splitlines() == [f"{name}: {TRUSTED_RATE:.1f} episodes/s"]
        assert "not measured" not in err


def test_a_whole_run_without_a_sandbox_names_those_figures_and_exits_0(no_sandbox, monkeypatch,
                                                                       capsys) -> None:
    """A whole run prints every figure it can, in order, names each one it cannot on stderr,
    and exits 0."""
    parse, engine = (bench.FIGURES[name][0] for name in ("parse_sentences_per_s",
                                                         "batched_engine_seat_steps_per_s"))
    monkeypatch.setattr(parse, "measure", lambda sizes: 100_000.0)
    monkeypatch.setattr(engine, "measure", lambda sizes: 5_888_400.0)
    apart = list(dict.fromkeys(bench.FIGURES[name][0] for name in APART))
    monkeypatch.setattr(bench, "MEASUREMENTS", (parse, *apart, engine))
    assert bench.main([]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ["parse_sentences_per_s: 100000 sentences/s",
                                *(f"{name}: {TRUSTED_RATE:.1f} episodes/s" for name in TRUSTED),
                                "batched_engine_seat_steps_per_s: 5888400 seat-steps/s",
                                "batched_engine_vs_original: 100.0 x"]
    assert [line for line in err.splitlines() if "not measured" in line] == [
        _note(f.name) for m in apart for f in m.figures if f.name not in TRUSTED]
    assert {f.name for m in apart for f in m.figures} == set(APART) | set(TRUSTED)
