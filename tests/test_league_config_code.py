"""A league records the code of its ``module:``, ``exec:`` and ``sb3:`` policies (``league.json``'s
``code``: the sha256 of their files, as ``ppo:`` models' are under ``models``), and refuses a
resume whose policy code changed, naming the policy and the file, so no ladder mixes two
versions of a policy.  A league begun before the code was recorded resumes and records it; a
huge package is hashed only in part, and the league says so."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import needs_module
from leagues import league_args, one_error_line, rows

from league.cli.guild import main
from league.core import policy_code, signing
from league.core.policy_code import code_digest

APART = ["--turns", "6", "--sandbox", "none"]  # the digests do not depend on the sandbox
BOT = textwrap.dedent("""
    from {helper} import SENTENCE

    class Bot:
        def act(self, game, seat):
            return SENTENCE
""")


def _manifest(out: Path) -> dict:
    return json.loads((out / "league.json").read_text(encoding="utf-8"))


def _files(out: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}


def _play(out: Path, episodes: int, policies: str, *extra: str) -> int:
    return main(league_args(out, episodes, *APART, *extra, policies=policies, workers=1))


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``codepkg.team.bot:Bot``, which imports a helper from its package."""
    team = tmp_path / "codepkg" / "team"
    team.mkdir(parents=True)
    (tmp_path / "codepkg" / "__init__.py").write_text("", encoding="utf-8")
    (team / "__init__.py").write_text("", encoding="utf-8")
    (team / "bot.py").write_text(BOT.format(helper="codepkg.team.words"), encoding="utf-8")
    (team / "words.py").write_text('SENTENCE = "I wait and watch the road."\n',
                                   encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return team


PKG = "factor,codepkg.team.bot:Bot"


def test_a_resume_whose_module_code_changed_is_refused_naming_the_file(
        package: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = package / "league"  # inside the policy's package: the league's own files are not code
    assert _play(out, 6, PKG) == 0
    code = _manifest(out)["code"]
    assert list(code) == ["codepkg.team.bot:Bot"]
    assert set(code["codepkg.team.bot:Bot"]["files"]) == {
        "codepkg/__init__.py", "codepkg/team/__init__.py", "codepkg/team/bot.py",
        "codepkg/team/words.py"}
    # what Python writes as it imports (a trusted run, a seat without a sandbox) is no change
    (package / "__pycache__").mkdir(exist_ok=True)  # Python's own, where it writes bytecode
    (package / "__pycache__" / "words.cpython-311.pyc").write_bytes(b"compiled")
    assert _play(out, 6, PKG) == 0  # the same code: nothing to play, and no refusal
    before = _files(out)
    words = package / "words.py"
    played = words.read_text(encoding="utf-8")
    for change, said in ((lambda: words.write_text('SENTENCE = "I rest."\n'), "changed"),
                         (lambda: (package / "extra.py").write_text("X = 1\n"), "is new")):
        change()
        capsys.readouterr()
        assert _play(out, 12, PKG) == 2
        path = "codepkg/team/words.py" if said == "changed" else "codepkg/team/extra.py"
        assert one_error_line(capsys.readouterr().err).endswith(
            f"holds a league whose policy 'codepkg.team.bot:Bot' has other code than it played "
            f"({path} {said}); restore the code it played, or use another --out")
        assert _files(out) == before  # refused before anything is written
        words.write_text(played, encoding="utf-8")
    (package / "extra.py").unlink()
    assert _play(out, 12, PKG) == 0 and len(rows(out)) == 12
    assert main(["verify", str(out)]) == 0


def test_an_exec_programs_script_is_recorded_and_a_change_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bot = tmp_path / "bot.py"
    bot.write_text(textwrap.dedent("""
        import json, sys
        for line in sys.stdin:
            r = json.loads(line)
            reply = {"action": "I wait and watch the road."} if r["type"] == "act" else {}
            sys.stdout.write(json.dumps(reply) + "\\n"); sys.stdout.flush()
    """), encoding="utf-8")
    spec = f"exec:{sys.executable} {bot}"
    out = tmp_path / "league"
    assert _play(out, 6, f"{spec},factor") == 0
    assert list(_manifest(out)["code"][spec]["files"]) == ["bot.py"]  # not the interpreter
    bot.write_text(bot.read_text(encoding="utf-8") + "# version 2\n", encoding="utf-8")
    capsys.readouterr()
    assert _play(out, 12, f"{spec},factor") == 2
    assert "has other code than it played (bot.py changed)" in one_error_line(
        capsys.readouterr().err)


def test_a_league_that_did_not_record_its_code_resumes_and_records_it(
        package: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "league"
    assert _play(out, 6, PKG) == 0
    manifest = _manifest(out)  # as a league begun before the code was recorded wrote it
    del manifest["code"]
    (out / "league.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    signing.sign_league(out, None, rows(out))
    assert main(["verify", str(out)]) == 0
    (package / "words.py").write_text('SENTENCE = "I rest."\n', encoding="utf-8")
    assert _play(out, 12, PKG) == 0  # nothing recorded to compare with: recorded from now on
    assert "codepkg/team/words.py" in _manifest(out)["code"]["codepkg.team.bot:Bot"]["files"]
    assert main(["verify", str(out)]) == 0
    (package / "words.py").write_text('SENTENCE = "I wait and watch the road."\n',
                                      encoding="utf-8")
    capsys.readouterr()
    assert _play(out, 18, PKG) == 2
    assert "(codepkg/team/words.py changed)" in one_error_line(capsys.readouterr().err)


def test_leagues_of_built_in_or_trusted_policies_resume_as_before(
        package: Path, tmp_path: Path) -> None:
    out = tmp_path / "baselines"
    assert main(league_args(out, 6, "--turns", "6", policies="factor,magpie,random",
                            workers=1)) == 0
    assert "code" not in _manifest(out)
    trusted = tmp_path / "trusted"
    assert _play(trusted, 6, PKG, "--trust") == 0
    assert "codepkg.team.bot:Bot" in _manifest(trusted)["code"]
    assert _play(trusted, 12, PKG, "--trust") == 0 and len(rows(trusted)) == 12


def test_a_huge_package_is_hashed_in_part_and_the_league_says_so(
        package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(policy_code, "MAX_CODE_FILES", 3)
    out = tmp_path / "league"
    capsys.readouterr()
    assert _play(out, 6, PKG) == 0
    assert ("league: policy 'codepkg.team.bot:Bot' has too much code to hash whole (over 3 "
            "files, 64 MB or 20000 folder entries): league.json records the sha256 of its first "
            "files (by path) only, so a change in the others goes unnoticed on resume"
            ) in capsys.readouterr().err.splitlines()
    code = _manifest(out)["code"]["codepkg.team.bot:Bot"]
    assert code["capped"] is True
    assert list(code["files"]) == ["codepkg/__init__.py", "codepkg/team/__init__.py",
                                   "codepkg/team/bot.py"]
    # a folder of more entries than it looks at is cut short too, not walked whole
    monkeypatch.setattr(policy_code, "MAX_CODE_FILES", 1000)
    monkeypatch.setattr(policy_code, "MAX_CODE_ENTRIES", 50)
    crowd = tmp_path / "crowd"
    crowd.mkdir()
    for n in range(200):
        (crowd / f"f{n:03}.py").write_text("", encoding="utf-8")
    got = code_digest([crowd], [])
    assert got is not None and got["capped"] is True and "files" in got
    assert len(got["files"]) == 50  # of the 200


def test_a_link_in_a_policys_folder_is_recorded_by_its_target_never_read(
        tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the league's key\n", encoding="utf-8")
    folder = tmp_path / "pkg"
    folder.mkdir()
    os.symlink(secret, folder / "peek.py")
    got = code_digest([folder], [])
    assert got is not None
    digest = got["files"]["pkg/peek.py"]
    assert digest.startswith("link:") and signing.file_sha256(secret) not in digest
    secret.write_text("another key\n", encoding="utf-8")
    assert code_digest([folder], []) == got  # what it points to is not the policy's code


def test_an_argument_too_long_for_a_file_name_is_an_argument() -> None:
    """An exec: argument longer than a file name may be (an inline JSON setting) stopped the
    policy from being built (ENAMETOOLONG while asking whether it named a file)."""
    from league.apart.sandbox import exec_files

    long = '{"depth": 3, "note": "' + "x" * 1100 + '"}'
    files, argv = exec_files(["python3", "bot.py", long, "a\0b"])
    assert argv[2:] == [long, "a\0b"] and all(long not in str(f) for f in files)
    assert policy_code.code_digests([f"exec:python3 bot.py {long}"], "out") == {}


def test_weights_past_the_byte_budget_do_not_hide_the_code_beside_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file past the bytes left is recorded by its size and the walk goes on: a model's
    weights that sort before the code stopped the walk, and an edit of the code went
    unnoticed."""
    monkeypatch.setattr(policy_code, "MAX_CODE_BYTES", 1000)
    pkg = tmp_path / "mybot"
    (pkg / "data").mkdir(parents=True)
    (pkg / "data" / "weights.bin").write_bytes(b"\0" * 5000)
    (pkg / "policy.py").write_text("A = 1\n", encoding="utf-8")
    before = code_digest([pkg], [])
    assert before is not None and before["capped"] is True
    assert before["files"]["mybot/data/weights.bin"] == "size:5000"
    (pkg / "policy.py").write_text("A = 2\n", encoding="utf-8")
    assert code_digest([pkg], [])["sha256"] != before["sha256"]


def test_a_folders_history_and_leagues_played_from_it_are_no_code(tmp_path: Path) -> None:
    """``exec:python3 .`` names a whole folder: a league's results in it, or its .git, changed
    with every run and refused the next resume (and published their files' names)."""
    pkg = tmp_path / "bot"
    (pkg / ".git").mkdir(parents=True)
    (pkg / ".git" / "index").write_text("1", encoding="utf-8")
    (pkg / "runs" / "other").mkdir(parents=True)
    (pkg / "runs" / "other" / "league.json").write_text("{}", encoding="utf-8")
    (pkg / "runs" / "other" / "results.jsonl").write_text("", encoding="utf-8")
    (pkg / "__main__.py").write_text("print()\n", encoding="utf-8")
    got = code_digest([pkg], [])
    assert got is not None and list(got["files"]) == ["bot/__main__.py"]


def test_the_interpreter_is_the_machines_however_it_is_named(tmp_path: Path,
                                                              monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bot.py").write_text("print()\n", encoding="utf-8")
    by_name = policy_code.code_roots("exec:python3 bot.py", [], "out")[0]
    by_path = policy_code.code_roots(f"exec:{sys.executable} bot.py", [], "out")[0]
    assert by_name == by_path == [tmp_path / "bot.py"]


def test_an_sb3_models_zip_is_its_code(tmp_path: Path) -> None:
    """An ``sb3:`` zip was not recorded: a resume with other weights ranked two models as one.
    (The refusal on resume is the one ``module:`` code gets, played whole above.)"""
    sb3_contrib = needs_module("sb3_contrib", "torch==2.13.0, then pip install -e '.[train]'")
    from agents.learn.sb3 import GuildVecEnv, write_meta
    from league.core.store import CODE, code_change

    path = tmp_path / "tiny.zip"

    def code_now() -> dict:
        return policy_code.code_digests([spec, "factor"], str(tmp_path / "league"))[CODE]

    def save(seed: int) -> None:
        sb3_contrib.MaskablePPO("MlpPolicy", GuildVecEnv(2), n_steps=8, batch_size=16,
                                device="cpu", seed=seed,
                                policy_kwargs=dict(net_arch=[8])).save(path)
        write_meta(path, {"flatten": True})

    save(0)
    spec = f"sb3:{path}"
    played = code_now()
    assert list(played) == [spec] and list(played[spec]["files"]) == ["tiny.zip"]
    assert code_change(played, code_now()) is None
    save(1)  # other weights
    assert code_change(played, code_now()).endswith("has other code than it played "
                                                   "(tiny.zip changed)")
