"""The town's seed is secret: a league draws from ``os.urandom``, commits to it in
``league.json``, keeps it in the league's folder (``secret.json``, the league's user alone)
and reveals it when the league ends (``league.core.lineups.SecretDraw``, ``league.tournament``).

Also the conformance of large seeds with the original (``../shared/golden/large_seeds.jsonl``:
48 whole episodes on seeds up to 2**50 and below 0), which the secret draw's 48-bit seeds rely on.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
from golden import require
from leagues import rows
from test_sandbox import copy_cheats, evidence

from agents import play_episode
from league.cli.guild import main
from league.core.errors import LeagueError
from league.core.lineups import SecretDraw, episode_spec
from league.core.verify import verify_dir
from league.seat.protocol import reset_request, seat_seed
from league.tournament import LeagueOptions, run_league
from sim import Game, GameConfig


def _large_seeds() -> list[dict]:
    path = require("large_seeds.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_large_and_negative_seeds_play_as_the_original() -> None:
    episodes = _large_seeds()
    assert len(episodes) == 48 and max(abs(e["seed"]) for e in episodes) >= 2**48
    assert any(e["seed"] < 0 for e in episodes)
    for e in episodes:
        first: list[str] = []

        def on_turn(game: Game, acts: list[dict], first: list[str] = first) -> None:
            if not first:
                first.extend(a["sentence"] for a in sorted(acts, key=lambda a: a["seat"]))

        game = play_episode(GameConfig(seed=e["seed"], turns=e["turns"]), e["policies"],
                            on_turn=on_turn)
        assert game.results()["scores"] == pytest.approx(e["scores"]), e["seed"]
        assert first == e["turn0"], e["seed"]


def _league(out: Path, episodes: int = 12, **kw) -> LeagueOptions:
    return LeagueOptions(policies=("factor", "magpie"), episodes=episodes, out=str(out),
                         workers=1, turns=6, **kw)


def test_a_league_without_seed_draws_in_secret_commits_and_reveals_at_the_end(tmp_path) -> None:
    out = tmp_path / "secret"
    progress: list[int] = []

    def look(done: int, total: int) -> None:  # the commitment is there from the start
        if done == 6 and not progress:
            manifest = json.loads((out / "league.json").read_text())
            progress.append(done)
            assert manifest["seed"] is None and manifest["draw"] == "hmac-sha256/48-bit/v2"
            assert [set(c) for c in manifest["commitments"]] == [{"fromGroup", "sha256"}]

    run_league(_league(out), on_progress=look)
    assert progress == [6]
    manifest = json.loads((out / "league.json").read_text())
    (c,) = manifest["commitments"]
    secret = bytes.fromhex(c["secret"])
    assert hashlib.sha256(secret).hexdigest() == c["sha256"] and len(secret) == 32
    assert stat.S_IMODE((out / "secret.json").stat().st_mode) == 0o600
    draw = SecretDraw(((0, secret),))
    got = rows(out)
    assert [(r["seed"], r["lineup"]) for r in got] == [
        (s.seed, list(s.lineup)) for s in (episode_spec(["factor", "magpie"], draw, n)
                                           for n in range(12))]
    assert all(0 <= r["seed"] < 2**48 for r in got) and max(r["seed"] for r in got) >= 2**31
    report = verify_dir(out)
    assert report.problems == [] and report.notes == []
    # two leagues never share a draw
    run_league(_league(tmp_path / "other"))
    assert {r["seed"] for r in rows(tmp_path / "other")}.isdisjoint({r["seed"] for r in got})


def test_an_unfinished_league_keeps_its_secret_and_a_resume_finds_it(tmp_path) -> None:
    out = tmp_path / "cut"

    class StopError(Exception):
        pass

    def stop(done: int, total: int) -> None:
        if done == 7:
            raise StopError

    with pytest.raises(StopError):
        run_league(_league(out, 18), on_progress=stop)
    manifest = json.loads((out / "league.json").read_text())
    assert "secret" not in manifest["commitments"][0]
    report = verify_dir(out)  # what it could check, and what not
    assert report.problems and not any(w in p for p in report.problems  # unfinished, no more
                                       for w in ("seed", "lineup", "draw", "replay"))
    assert report.notes == ["the seeds and lineups of 7 episodes were not checked: their draw "
                            "is secret until the league ends (league.json holds only its "
                            "commitment); everything else was"]
    run_league(_league(out, 18))  # as after kill -9: the folder's secret.json goes on
    assert len(rows(out)) == 18
    report = verify_dir(out)
    assert report.problems == [] and report.notes == []


def test_a_resume_without_its_secret_is_refused_in_one_line(tmp_path) -> None:
    out = tmp_path / "lost"

    def stop(done: int, total: int) -> None:
        if done == 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_league(_league(out), on_progress=stop)
    (out / "secret.json").unlink()
    with pytest.raises(LeagueError, match="secret.json is missing or does not match"):
        run_league(_league(out))


def _stopped_at_6(out: Path) -> None:
    def stop(done: int, total: int) -> None:
        if done == 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_league(_league(out), on_progress=stop)


@pytest.mark.parametrize("commitments", [None, 5, "abc", [1], [{"fromGroup": "0"}]])
def test_a_resume_whose_commitments_were_edited_keeps_the_secret_and_is_refused(
        tmp_path, commitments) -> None:
    # A new secret over episodes played with the old one would leave their draw unverifiable
    # for good; a refused run leaves secret.json as it was.
    out = tmp_path / "edited"
    _stopped_at_6(out)
    manifest = json.loads((out / "league.json").read_text())
    if commitments is None:
        del manifest["commitments"]
    else:
        manifest["commitments"] = commitments
    (out / "league.json").write_text(json.dumps(manifest))
    secret = (out / "secret.json").read_bytes()
    with pytest.raises(LeagueError, match="league.json"):
        run_league(_league(out))
    assert (out / "secret.json").read_bytes() == secret


def test_a_secret_that_is_not_hex_is_refused_in_one_line(tmp_path) -> None:
    out = tmp_path / "nothex"
    _stopped_at_6(out)
    data = json.loads((out / "secret.json").read_text())
    data["draws"][0]["secret"] = "zz" * 32
    (out / "secret.json").write_text(json.dumps(data))
    with pytest.raises(LeagueError, match="not hex"):
        run_league(_league(out))


def test_extending_a_finished_league_draws_a_new_secret(tmp_path) -> None:
    out = tmp_path / "ext"
    run_league(_league(out, 9))  # ends inside group 1
    first = json.loads((out / "league.json").read_text())["commitments"]
    run_league(_league(out, 24))
    manifest = json.loads((out / "league.json").read_text())
    assert manifest["commitments"][0] == first[0]
    assert [c["fromGroup"] for c in manifest["commitments"]] == [0, 2]
    assert all("secret" in c for c in manifest["commitments"])
    got = rows(out)
    assert len({r["seed"] for r in got if r["group"] == 1}) == 1  # the group kept its seed
    assert verify_dir(out).problems == []
    edited = dict(manifest)
    edited["commitments"] = [manifest["commitments"][0],
                             {**manifest["commitments"][1], "secret": "00" * 32}]
    (out / "league.json").write_text(json.dumps(edited))
    problems = verify_dir(out).problems  # the signature no longer covers league.json either
    assert "league.json's secret from group 2 does not match its commitment" in problems
    assert not any("secret" in p for p in problems if "group 2" not in p)


def test_seed_with_seats_that_run_apart_needs_public_draw(tmp_path, capsys) -> None:
    args = ["league", "--policies", "factor,sandbox_cheats:SeedSearch", "--episodes", "6",
            "--turns", "6", "--seed", "3", "--out", str(tmp_path / "x")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--public-draw" in err[0]
    assert not (tmp_path / "x").exists()
    assert main(["league", "--policies", "factor,magpie", "--episodes", "6", "--turns", "6",
                 "--seed", "3", "--workers", "1", "--out", str(tmp_path / "y")]) == 0


def test_a_seat_reset_seed_tells_nothing_of_a_secret_town() -> None:
    game = Game(GameConfig(seed=12345))
    key = os.urandom(32)
    public = reset_request(game, 2, 12345)["seed"]
    secret = reset_request(game, 2, 12345, key)["seed"]
    assert public == seat_seed(12345, 2) and secret == seat_seed(12345, 2, key) != public


def _searched(tmp_path: Path, name: str, *extra: str) -> list[dict]:
    module = copy_cheats(tmp_path, "searchers")
    out = tmp_path / name
    code = main(["league", "--policies", f"{module.stem}:SeedSearch,factor", "--episodes", "6",
                 "--turns", "6", "--workers", "1", "--out", str(out), *extra])
    assert code == 0
    return [e for _, _, e in evidence(out, f"{module.stem}:SeedSearch")]


def test_a_seat_finds_a_public_town_by_search_but_not_a_secret_one(tmp_path, monkeypatch
                                                                     ) -> None:
    monkeypatch.chdir(tmp_path)
    public = _searched(tmp_path, "public", "--seed", "217", "--public-draw")
    assert public and all(e["found"] == [217, 0] for e in public)  # the attack works there
    secret = _searched(tmp_path, "secret")
    assert secret and all(e["found"] is None for e in secret)
