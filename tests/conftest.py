"""Shared test settings: what CI demands, and the hypothesis profiles.

**Nothing is skipped in CI.**  ``.ci/run`` sets ``GUILD_CI=1``; then a test that lacks a
package, a browser or a data file *fails*, naming what is missing.  On a developer's machine
the same test is skipped with the same message.  Tests ask through :func:`needs` (or
:func:`needs_module`), never through a bare ``pytest.skip``/``importorskip``; and so that a
skip cannot hide all the same, a CI run that reports any skip at all (a bare ``skip``, a
``skipif``, an empty parameter set, a module skipped at collection) ends failed, listing them.
Tests that apply to only some cases (golden episodes, say) parametrize over those cases
rather than skipping the others.

**Shared fixtures.**  ``league12``: one small league of the baselines, made once per run and
read (never changed) by the league tests; they copy it before editing.  ``chromium``: one
headless Chromium per test file that drives a page in a real browser.

**Hypothesis.**  Profile ``ci`` (selected by ``GUILD_CI=1`` or ``HYPOTHESIS_PROFILE=ci``) is
derandomized, so a CI run is repeatable, and runs each property at least as many examples as
the test asks for; profile ``dev`` (the default) draws fresh examples each run.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

IN_CI = os.environ.get("GUILD_CI", "") not in ("", "0")

settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if IN_CI else "dev"))

# A suite started in the background by a shell without job control (`pytest ... &` in a script)
# comes with Ctrl-C ignored; Python then raises no KeyboardInterrupt, and neither do the
# commands the tests start (an ignored signal stays ignored across exec), so every test of a
# Ctrl-C would see it ignored. The suite stands in for a terminal: Ctrl-C as Python sets it up.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def needs(condition: bool, what: str) -> None:
    """Go on if ``condition`` holds; else skip (developer machine) or fail (CI), naming ``what``.

    ``what`` says what is missing and how to get it, e.g. ``"Chromium at /usr/bin/chromium
    (apt-get install chromium)"``.
    """
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI runs everything, but this test lacks {what}", pytrace=False)
    pytest.skip(f"missing {what}", allow_module_level=True)


def needs_module(name: str, install: str | None = None) -> ModuleType:
    """Import ``name`` or :func:`needs` it (``install`` says how to get it)."""
    found = importlib.util.find_spec(name.split(".")[0]) is not None
    needs(found, f"the Python package {name!r} (pip install {install or name})")
    return importlib.import_module(name)


class HeldLock:
    """A library's critical section as a stop can break it: a lock taken and given back a few
    lines on, unguarded (a queue's put before its notify, tqdm's pair of locks), with the
    signal ``signum`` arriving in between. :meth:`check_free` is what the library's close
    needs: the lock back."""

    def __init__(self, signum: int) -> None:
        self.signum, self.lock = signum, threading.Lock()

    def signal_inside(self) -> None:
        self.lock.acquire()
        signal.raise_signal(self.signum)
        self.lock.release()

    def check_free(self) -> None:
        assert self.lock.acquire(timeout=10), "the stop left the library's lock held"
        self.lock.release()


def unlogged(model: Any) -> Any:
    """An SB3 model that logs nowhere: without a logger of its own, each ``learn`` leaves an
    empty ``SB3-<time>`` folder in the temporary directory."""
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


@pytest.fixture(autouse=True)
def _sandbox_or_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test whose league runs seats in a sandbox needs bubblewrap: where it cannot start,
    the league's refusal becomes :func:`needs` (a skip here, a failure in CI)."""
    from league.apart import sandbox

    why = sandbox.problem()
    if why is None:
        return

    def require() -> None:
        needs(False, f"a bubblewrap sandbox ({why}; apt-get install bubblewrap)")

    monkeypatch.setattr(sandbox, "require", require)


@pytest.fixture(scope="session", autouse=True)
def _league_key_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Leagues sign with a key made on first use under ``$XDG_CONFIG_HOME`` (league.core.signing):
    the tests' own folder, never the user's (subprocesses inherit it). It is made here, so
    that no test's league notes that it made one, whichever test runs first."""
    from league.core import signing

    old = os.environ.get("XDG_CONFIG_HOME")
    home = tmp_path_factory.mktemp("config")
    os.environ["XDG_CONFIG_HOME"] = str(home)
    signing.ensure_key(None, home / "no-league")
    yield home
    if old is None:
        os.environ.pop("XDG_CONFIG_HOME", None)
    else:
        os.environ["XDG_CONFIG_HOME"] = old


# --- in CI, no skip passes -----------------------------------------------------------------

_SKIPPED: list[pytest.TestReport | pytest.CollectReport] = []


def _note_skip(report: pytest.TestReport | pytest.CollectReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _SKIPPED.append(report)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _note_skip(report)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    _note_skip(report)


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI, a run with skips fails (a skip there means something CI should have is missing).

    Elsewhere, a selection whose every module was skipped for want of an extra (``-m alone``
    on a machine without the local-llm extra: the README's second pytest run) ran nothing and
    failed nothing, so it passes, as a run whose tests were all skipped one by one would;
    pytest alone would exit 5 (no tests collected), failing the README's command."""
    if IN_CI and _SKIPPED and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif (not IN_CI and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and _SKIPPED
          and session.config.option.markexpr):
        session.exitstatus = pytest.ExitCode.OK


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    if not (IN_CI and _SKIPPED):
        return
    terminalreporter.section("CI runs everything: these were skipped, so the run fails",
                             red=True)
    for report in _SKIPPED:
        terminalreporter.line(f"{report.nodeid or report.fspath}: {_reason(report)}", red=True)


@pytest.fixture(scope="session")
def league12(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A 12-episode league of the baselines on 2 workers: (dir, stdout, stderr)."""
    import io
    import sys

    from leagues import league_args

    from league.cli.guild import main

    out = tmp_path_factory.mktemp("league") / "l12"
    buf_out, buf_err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = buf_out, buf_err
    try:
        code = main(league_args(out))
    finally:
        sys.stdout, sys.stderr = old
    assert code == 0, buf_err.getvalue()
    return out, buf_out.getvalue(), buf_err.getvalue()


CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One headless Chromium (Debian's, through Playwright) for a test file's browser tests;
    each test opens its own pages, each in a context of its own (``new_page``), and closes
    them."""
    sync_api = needs_module("playwright.sync_api", "playwright")
    needs(bool(os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)),
          f"Chromium at {CHROMIUM} (apt-get install chromium, or set CHROMIUM)")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
