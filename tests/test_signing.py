"""Claims that hold: a league signs what it publishes (``league.core.signing``), ``guild verify``
checks the signature and every digest (``league.core.verify_signature``), and plays every
deterministic seat again (``league.core.replay_seats``), so a seat cannot be relabelled.

The leagues here are of the baselines (no sandbox needed); their key is made on first use in
the tests' own ``$XDG_CONFIG_HOME`` (``conftest._league_key_home``)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import needs_module
from leagues import copy_league, league_args, lines, one_error_line

from agents import Magpie, RandomPolicy, make_policy, play_episode
from league.cli import guild as cli
from league.cli.guild import main
from league.core import ladder, signing
from league.core.episode import RESULT_KEYS
from sim import GameConfig

SUMMARY = ("verify: all 12 episodes verify, and results.jsonl, the lineups, the fallbacks and "
           "the ladder agree with league.json")


def _verify(out: Path, capsys, *extra: str) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["verify", str(out), *extra])
    return code, capsys.readouterr().out.splitlines()


def _public_key(out: Path) -> str:
    return json.loads((out / "league.json").read_text(encoding="utf-8"))["signedBy"]["publicKey"]


def _fingerprint(key: str) -> str:
    return hashlib.sha256(bytes.fromhex(key)).hexdigest()[:16]


def _write_lines(out: Path, text: list[str]) -> None:
    (out / "results.jsonl").write_text("".join(x + "\n" for x in text), encoding="utf-8")


def _edit_json(path: Path, edit: Callable[[dict], None], indent: int | None = None) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data, indent=indent), encoding="utf-8")


# --- signed, and verified -----------------------------------------------------------------------

def test_a_league_is_signed_with_the_default_key_and_verifies(league12, capsys) -> None:
    out = league12[0]
    key = signing.load_key(signing.default_key_path())
    assert signing.default_key_path().parent.parent == Path(os.environ["XDG_CONFIG_HOME"])
    assert stat.S_IMODE(signing.default_key_path().stat().st_mode) == 0o600
    assert stat.S_IMODE(signing.default_key_path().parent.stat().st_mode) == 0o700
    manifest = json.loads((out / "league.json").read_text(encoding="utf-8"))
    assert manifest["signedBy"] == {"algorithm": "ed25519", "publicKey": signing.public_hex(key)}
    body = json.loads((out / "signature.json").read_text(encoding="utf-8"))
    assert body["format"] == "guild.signature.v1"
    assert sorted(body["files"]) == ["ladder.json", "league.json", "results.jsonl"]
    assert list(body["replays"]) == [f"e{i:06d}" for i in range(12)]
    assert body["replays"]["e000003"] == hashlib.sha256(
        (out / "replays" / "e000003.json").read_bytes()).hexdigest()
    fp = _fingerprint(signing.public_hex(key))
    code, got = _verify(out, capsys)
    assert code == 0 and got == [
        "verify: re-played the seats of factor, magpie, random: 1008 recorded acts are the "
        "policy's own choice",
        f"verify: signed by key {fp} (league.json's signedBy); compare this fingerprint with "
        "the publisher's, or pass --public-key to require their key",
        SUMMARY]
    code, got = _verify(out, capsys, "--public-key", signing.public_hex(key).upper())
    assert code == 0 and f"verify: signed by the --public-key given (fingerprint {fp})" in got


TAMPERING = {
    # wall time is checked by nothing but the signature
    "edit a line": ("results.jsonl is not the file signature.json signed (its sha256 differs); "
                    "it was changed after the league signed it"),
    "delete a line": ("results.jsonl is not the file signature.json signed (its sha256 "
                      "differs); it was changed after the league signed it"),
    "delete a replay": "replays/e000004.json is missing; signature.json signed it",
    # which seats ran in the league's process: not re-derivable, so only the signature holds it
    "edit a replay": ("replays/e000004.json is not the replay signature.json signed (its sha256 "
                      "differs)"),
    "edit ladder.json": ("ladder.json is not the file signature.json signed (its sha256 "
                         "differs); it was changed after the league signed it"),
    "edit league.json": ("league.json is not the file signature.json signed (its sha256 "
                         "differs); it was changed after the league signed it"),
    "edit signature.json": ("signature.json's signature does not hold for its contents under "
                            "key {fp} (league.json's signedBy); signature.json was changed or "
                            "signed by another key"),
    "delete signature.json": ("signature.json is missing, but league.json says the league is "
                              "signed (signedBy); a first run stopped before its end leaves "
                              "none: run the same command again to sign it"),
}


@pytest.mark.parametrize("tamper", list(TAMPERING))
def test_each_tampering_fails_in_one_line_naming_the_file(league12, tmp_path, capsys,
                                                          tamper) -> None:
    out = copy_league(league12[0], tmp_path)
    text = lines(out)
    if tamper == "edit a line":
        row = json.loads(text[4])
        row["wallTime"] = row["wallTime"] / 2
        text[4] = json.dumps(row, separators=(",", ":"))
        _write_lines(out, text)
    elif tamper == "delete a line":
        _write_lines(out, text[:4] + text[5:])
    elif tamper == "delete a replay":
        (out / "replays" / "e000004.json").unlink()
    elif tamper == "edit a replay":
        _edit_json(out / "replays" / "e000004.json",
                   lambda p: p.update(trusted=[not t for t in p["trusted"]]))
    elif tamper == "edit ladder.json":  # the same ladder, another layout
        _edit_json(out / "ladder.json", lambda d: None, indent=1)
    elif tamper == "edit league.json":
        _edit_json(out / "league.json", lambda d: d.update(note="played on 2026-12-01"),
                   indent=2)
    elif tamper == "edit signature.json":  # a digest changed to fit an edited replay
        _edit_json(out / "signature.json", lambda d: d["replays"].update(e000004="0" * 64))
    else:
        (out / "signature.json").unlink()
    code, got = _verify(out, capsys)
    expected = "verify: " + TAMPERING[tamper].format(fp=_fingerprint(_public_key(out)))
    assert code == 1 and expected in got, got
    assert sum(x == expected for x in got) == 1


def test_a_forger_with_a_key_of_their_own_passes_only_without_the_public_key(
        league12, tmp_path, capsys) -> None:
    """The forger has the code, not the league's key: they rewrite results and replays, sign
    with a fresh key and put its public half in league.json."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    published = _public_key(league12[0])
    out = copy_league(league12[0], tmp_path)
    text = [json.loads(x) for x in lines(out)]
    for row in text:
        row["wallTime"] = 0.001  # a "faster" league
    _write_lines(out, [json.dumps(r, separators=(",", ":")) for r in text])
    replay = out / "replays" / "e000000.json"  # rewritten: other bytes, the same replay
    replay.write_bytes(replay.read_bytes() + b"\n")
    forger = Ed25519PrivateKey.generate()
    _edit_json(out / "league.json", lambda d: d["signedBy"].update(
        publicKey=signing.public_hex(forger)), indent=2)
    signing.sign_dir(out, forger, [r["id"] for r in text])

    code, got = _verify(out, capsys)  # what a reader sees who does not compare fingerprints
    assert code == 0 and got[-1] == SUMMARY
    assert any(x.startswith(f"verify: signed by key {_fingerprint(signing.public_hex(forger))}")
               for x in got)
    assert _fingerprint(signing.public_hex(forger)) != _fingerprint(published)
    code, got = _verify(out, capsys, "--public-key", published)
    assert code == 1
    assert (f"verify: league.json names signing key "
            f"{_fingerprint(signing.public_hex(forger))}, not the --public-key given "
            f"({_fingerprint(published)}); the league was not signed by its publisher") in got
    # the real league passes the same check
    code, got = _verify(league12[0], capsys, "--public-key", published)
    assert code == 0


def test_a_malformed_public_key_is_a_usage_error(league12, capsys) -> None:
    assert main(["verify", str(league12[0]), "--public-key", "abc"]) == 2
    assert "expected the 64 hex digits" in one_error_line(capsys.readouterr().err)


# --- re-played seats ----------------------------------------------------------------------------

def _relabel(out: Path, kind: str, impostor: object, capsys) -> tuple[str, int]:
    """Play the first episode with a ``kind`` seat again with ``impostor`` in that seat, still
    labelled ``kind``, and write it in place of the real one: a forged but self-consistent
    replay and results line (the replay re-derives, the line gives its results). The league's
    own command will not sign it; whoever holds the key ranks and signs it by hand. Returns
    the episode id and the seat."""
    text = [json.loads(x) for x in lines(out)]
    n, seat = next((n, r["lineup"].index(kind)) for n, r in enumerate(text) if kind in r["lineup"])
    row = text[n]
    path = out / "replays" / f"{row['id']}.json"
    old = json.loads(path.read_text(encoding="utf-8"))
    policies = [make_policy(name) for name in row["lineup"]]
    policies[seat] = impostor
    game = play_episode(GameConfig(seed=row["seed"], turns=14, players=tuple(row["lineup"])),
                        policies)
    payload = game.replay_payload(row["lineup"])
    payload.update({k: old[k] for k in ("trusted", "sandbox", "fallbackPlay")})
    assert payload["events"] != old["events"]
    path.write_text(json.dumps(payload), encoding="utf-8")
    row.update({k: game.results()[k] for k in RESULT_KEYS})
    _write_lines(out, [json.dumps(r, separators=(",", ":")) for r in text])
    capsys.readouterr()
    assert main(league_args(out)) == 2  # a resume plays the seats of what it signs again
    assert f"seat {seat} ({kind}) played " in one_error_line(capsys.readouterr().err)
    manifest = json.loads((out / "league.json").read_text(encoding="utf-8"))
    ranked = ladder.build(text, manifest["policies"],
                          ladder.bootstrap_seed(manifest["seed"], None))
    (out / "ladder.json").write_text(json.dumps(ranked, indent=2) + "\n", encoding="utf-8")
    signing.sign_dir(out, signing.load_key(signing.default_key_path()),
                     [r["id"] for r in text])
    return row["id"], seat


@pytest.mark.parametrize(("kind", "impostor"), [("factor", Magpie()),
                                                ("random", RandomPolicy(seed=7))])
def test_a_relabelled_seat_fails_the_re_play(league12, tmp_path, capsys, kind,
                                             impostor) -> None:
    out = copy_league(league12[0], tmp_path)
    episode, seat = _relabel(out, kind, impostor, capsys)
    code, got = _verify(out, capsys)
    assert code == 1
    failed = [x for x in got if x.startswith(f"verify: {episode} ")]
    assert len(failed) == 1, got
    assert f": replay replays/{episode}.json: seat {seat} ({kind}) played " in failed[0]
    assert f", but {kind} plays " in failed[0]
    # everything else holds: the replay re-derives, the ladder is the results', it is signed
    assert got[-1].startswith("verify: 1 of 12 episodes do not verify; 1 problem in all"), got


# --- interrupted, resumed, older leagues, another key -------------------------------------------

def test_an_interrupted_run_leaves_the_old_signature_and_a_resume_signs_again(
        tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "resumed"
    assert main(league_args(out, 6, workers=1)) == 0
    assert _verify(out, capsys)[0] == 0

    def interrupted(self, done: int, total: int) -> None:
        if done == 3:
            raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(cli._ProgressBar, "__call__", interrupted)
        assert main(league_args(out, 12, workers=1)) == 130
    assert len(lines(out)) == 9
    code, got = _verify(out, capsys)
    assert code == 1
    assert ("verify: results.jsonl has 3 lines after the 6 that signature.json covers (a run "
            "stopped before it signed; run the same command again to sign them)") in got
    assert ("verify: 3 replays of results.jsonl are not covered by signature.json "
            "(e000006, e000007, e000008)") in got
    assert main(league_args(out, 12, workers=1)) == 0
    code, got = _verify(out, capsys)
    assert code == 0 and got[-1] == SUMMARY
    assert len(json.loads((out / "signature.json").read_text())["replays"]) == 12


def test_a_league_from_before_signatures_verifies_unsigned_and_is_signed_on_resume(
        league12, tmp_path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    (out / "signature.json").unlink()
    _edit_json(out / "league.json", lambda d: d.pop("signedBy"), indent=2)
    code, got = _verify(out, capsys)
    assert code == 0 and got[-1] == SUMMARY
    assert ("verify: unsigned: the league has no signature.json (begun before leagues were "
            "signed, or its signature was removed); nothing vouches for who published it, only "
            "that its replays give its results") in got
    code, got = _verify(out, capsys, "--public-key", _public_key(league12[0]))
    assert code == 1
    assert main(league_args(out)) == 0  # the same command: nothing to play, now signed
    assert _verify(out, capsys, "--public-key", _public_key(league12[0]))[0] == 0


def test_a_resume_with_another_key_is_refused_in_one_line(league12, tmp_path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    other = tmp_path / "keys" / "other.pem"
    # a key that does not exist is not made for a league signed by another
    assert main(league_args(out, 18, "--signing-key", str(other))) == 2
    assert (f"is signed by key {_public_key(out)[:16]}... (league.json's signedBy), but "
            f"--signing-key {other} does not exist; pass --signing-key with the league's key, "
            "or use another --out") in one_error_line(capsys.readouterr().err)
    assert not other.exists()
    signing.ensure_key(other, tmp_path / "elsewhere")  # made on first use, as a league does
    assert stat.S_IMODE(other.stat().st_mode) == 0o600
    assert stat.S_IMODE(other.parent.stat().st_mode) == 0o700
    assert main(league_args(out, 18, "--signing-key", str(other))) == 2
    err = one_error_line(capsys.readouterr().err)
    assert (f"(the signing key (--signing-key) was {_public_key(out)}, now "
            f"{signing.public_hex(signing.load_key(other))}); use the same options or "
            "another --out") in err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_a_signing_key_inside_out_is_refused(tmp_path, capsys) -> None:
    out = tmp_path / "league"
    assert main(league_args(out, 6, "--signing-key", str(out / "key.pem"))) == 2
    assert "is inside --out" in one_error_line(capsys.readouterr().err)
    assert not (out / "key.pem").exists()


def test_a_signing_key_that_is_not_one_is_refused(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key\n")
    assert main(league_args(tmp_path / "league", 6, "--signing-key", str(bad))) == 2
    assert "is not an Ed25519 private key" in one_error_line(capsys.readouterr().err)


# --- ppo: models --------------------------------------------------------------------------------

def test_ppo_seats_are_re_played_while_their_model_is_the_recorded_one(tmp_path,
                                                                       capsys) -> None:
    torch = needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")
    from agents.learn import ppo

    def save(seed: int, path: Path) -> None:
        torch.manual_seed(seed)
        net = ppo.PolicyNet(460, 267, hidden=(16, 16), shared=False)
        with torch.no_grad():
            net.actor.weight.mul_(100)  # varied choices
        ppo.save_model(net, path, {"seed": seed, "steps": 0})

    model = tmp_path / "model.pt"
    save(1, model)
    name = f"ppo:{model}"
    out = tmp_path / "league"
    assert main(league_args(out, 6, policies=f"{name},factor", workers=1)) == 0
    manifest = json.loads((out / "league.json").read_text())
    assert manifest["models"] == {name: hashlib.sha256(model.read_bytes()).hexdigest()}
    code, got = _verify(out, capsys)
    assert code == 0 and got[0].startswith(f"verify: re-played the seats of {name}, factor: ")
    save(2, model)  # another model at the same path
    code, got = _verify(out, capsys)
    assert code == 0
    assert (f"verify: model {name} is changed (its sha256 is not league.json's); its seats were "
            "not re-played") in got
    assert main(league_args(out, 12, policies=f"{name},factor", workers=1)) == 2
    assert "(a ppo: model file (sha256) was" in one_error_line(capsys.readouterr().err)
    model.unlink()
    code, got = _verify(out, capsys)
    assert code == 0 and f"verify: model {name} is missing; its seats were not re-played" in got
