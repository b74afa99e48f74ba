"""A viewer page is kept only when this user wrote it (``league.cli.html_viewer.write_view``).

``guild report`` keeps a league's viewer pages that are up to date instead of writing them
again. A league folder may come from anyone, and a page's stamp is computed from the page: a
page holding a script, with the stamp recomputed over it, was kept and linked from the report
(the stamp was an unkeyed sha256). The stamp is now keyed with a key of this user's.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from agents import play_episode
from league.cli import html_viewer as viewer
from sim import GameConfig

SCRIPT = b"<script>document.title='PWNED'</script>"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user of their own (the key lives under ``$XDG_CONFIG_HOME/guild``)."""
    config = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    return config


@pytest.fixture
def replay(tmp_path: Path) -> Path:
    path = tmp_path / "e000000.json"
    game = play_episode(GameConfig(seed=4, turns=6), ["factor", "magpie"] * 3)
    path.write_text(json.dumps(game.replay_payload()), encoding="utf-8")
    return path


def _forged(page: Path) -> bytes:
    """``page`` with a script, under the stamp an unkeyed sha256 gives what follows it."""
    doctype, stamp, body = page.read_bytes().split(b"\n", 2)
    body = body.replace(b"</body>", SCRIPT + b"</body>", 1) + b""
    source = stamp.split()[3]
    forged = b"<!-- guild view " + source + b" " + hashlib.sha256(body).hexdigest().encode()
    return doctype + b"\n" + forged + b" -->\n" + body


def test_a_page_forged_with_a_recomputed_stamp_is_written_again(home: Path, replay: Path,
                                                                tmp_path: Path) -> None:
    page = tmp_path / "view.html"
    assert viewer.write_view(replay, page)
    written = page.read_bytes()
    assert not viewer.write_view(replay, page)  # this user's own page: kept
    page.write_bytes(_forged(page))
    assert SCRIPT in page.read_bytes()
    assert viewer.write_view(replay, page)
    assert page.read_bytes() == written


def test_a_page_another_user_wrote_is_written_again_and_the_key_is_private(
        home: Path, replay: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "view.html"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "someone-else"))
    assert viewer.write_view(replay, page)
    theirs = page.read_bytes()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    assert viewer.write_view(replay, page)  # their stamp is not ours: written again
    assert page.read_bytes() != theirs
    assert not viewer.write_view(replay, page)
    key = home / "guild" / viewer.STAMP_KEY
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.stat().st_size == 32
    # a key that is not a key's file (here a FIFO) is not used: every page is written
    other = tmp_path / "fifo-home"
    (other / "guild").mkdir(parents=True)
    os.mkfifo(other / "guild" / viewer.STAMP_KEY)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(other))
    assert viewer.write_view(replay, page) and viewer.write_view(replay, page)


def test_a_page_is_kept_only_for_the_replay_it_was_written_for(home: Path, tmp_path: Path
                                                               ) -> None:
    """The stamp's key covers the replay's digest too: a page this user wrote for one replay,
    given another replay's digest (which anyone can compute), is written again."""
    one, other = tmp_path / "one.json", tmp_path / "other.json"
    for path, seed in ((one, 4), (other, 5)):
        game = play_episode(GameConfig(seed=seed, turns=6), ["factor", "magpie"] * 3)
        path.write_text(json.dumps(game.replay_payload()), encoding="utf-8")
    page, theirs = tmp_path / "one.html", tmp_path / "other.html"
    assert viewer.write_view(one, page) and viewer.write_view(other, theirs)
    mine = page.read_bytes().split(b"\n", 2)
    source = theirs.read_bytes().split(b"\n", 2)[1].split()[3]
    old = mine[1].split()[3]
    page.write_bytes(b"\n".join([mine[0], mine[1].replace(old, source), mine[2]]))
    assert viewer.write_view(other, page)
    assert page.read_bytes() == theirs.read_bytes()


def test_without_a_home_folder_every_page_is_written(replay: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    page = tmp_path / "view.html"
    assert viewer.write_view(replay, page) and viewer.write_view(replay, page)
