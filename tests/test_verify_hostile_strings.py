"""``guild verify`` (and a resume) print what a league's folder holds, and the folder may come
from anyone: every string read from it -- an episode id, a policy name, a seat's name, a key, a
seed that is not a number, a replay's event -- is shown inert. A newline, a carriage return or
an ANSI escape in it shows as its escape (``\\n``, ``\\r``, ``\\u001b``), so that it can neither
forge a line ("verify: OK") nor move the terminal's cursor; a very long one is cut; each
problem stays one line (``league.core.store.shown``)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from leagues import copy_league, league_args, one_error_line, rename

from league.cli.guild import main
from league.core.lineups import SECRET_SCHEME
from league.core.store import shown
from league.core.verify import verify_dir

# a newline and a forged line, a carriage return, ANSI "clear the screen" and "red", and a
# right-to-left override: each would act on a terminal if printed raw
EVIL = "\nverify: OK\r\x1b[2J\x1b[31m\u202e"
FORGED = "verify: OK"
LONG = 100_000  # characters: far more than any problem line shows
MAX_LINE = 5_000  # what one problem line may reach, however long the strings behind it
PLAIN = "ppo:runs/a-b_c.2/model.pt Mk 2"  # letters, digits, ':', '/', '.', '-', '_', spaces


def _raw(text: str) -> list[str]:
    """The characters of ``text`` that act on a terminal (anything non-printing but "\\n")."""
    return sorted({c for c in text if c != "\n" and not c.isprintable()})


def _escapes_shown(text: str) -> bool:
    """EVIL's newline, carriage return and ESC are in ``text`` as escapes: JSON's (a string
    shown as it is) or Python's (a string inside a value shown by its repr)."""
    return ("\\n" in text and "\\r" in text
            and any(f"{esc}[2J" in text for esc in ("\\u001b", "\\x1b")))


def _verify(out: Path, capsys) -> tuple[int, list[str], str]:
    """``guild verify out``: the exit code, the lines printed, and stdout and stderr together;
    what is printed must be inert and be the report's lines, one line each."""
    capsys.readouterr()
    code = main(["verify", str(out)])
    said = capsys.readouterr()
    text = said.out + said.err
    assert "Traceback" not in said.err
    assert not _raw(text), _raw(text)
    lines = said.out.split("\n")
    assert lines[-1] == ""  # the output ends with a newline, and each line is one of these
    assert lines[:-1] == verify_dir(out).lines()
    assert not any(x.strip() == FORGED for x in lines)
    assert all(len(x) <= MAX_LINE for x in lines), max(map(len, lines))
    return code, lines[:-1], text


def _lines(out: Path) -> list[str]:
    return (out / "results.jsonl").read_text(encoding="utf-8").splitlines()


def _edit_row(n: int, key: str, value: object) -> Callable[[Path], None]:
    def edit(out: Path) -> None:
        text = _lines(out)
        row = json.loads(text[n])
        row[key] = value
        text[n] = json.dumps(row, separators=(",", ":"))
        (out / "results.jsonl").write_text("".join(x + "\n" for x in text), encoding="utf-8")
    return edit


def _edit_json(name: str, edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def change(out: Path) -> None:
        path = out / name
        data = json.loads(path.read_text(encoding="utf-8"))
        edit(data)
        path.write_text(json.dumps(data), encoding="utf-8")
    return change


def _set(*keys: object, value: object) -> Callable[[dict], None]:
    """Set ``data[k0][k1]...`` to ``value``."""
    def edit(data: dict) -> None:
        for k in keys[:-1]:
            data = data[k]
        data[keys[-1]] = value
    return edit


def _act_kind(payload: dict) -> None:
    next(e for e in payload["events"] if e.get("kind") == "act")["kind"] = EVIL + "x" * LONG


def _secret(manifest: dict) -> None:
    manifest["draw"] = SECRET_SCHEME
    manifest["commitments"] = [EVIL, {"fromGroup": 0, "secret": None, "sha256": EVIL}]


def _renamed(old: str, new: str) -> Callable[[Path], None]:
    return lambda out: rename(out, old, new)


# Every field verify reads, each made hostile; the line that names it must show its escapes.
# "long": the string is also far longer than a line (it must be cut); "json": not a string.
CASES: dict[str, Callable[[Path], None]] = {
    # results.jsonl
    "id": _edit_row(3, "id", "e000003" + EVIL),
    "id json": _edit_row(3, "id", {"e000003": [EVIL]}),
    "id long": _edit_row(3, "id", EVIL + "x" * LONG),
    "index": _edit_row(4, "index", EVIL),
    "index long": _edit_row(4, "index", EVIL + "x" * LONG),
    "group": _edit_row(4, "group", EVIL),
    "rotation json": _edit_row(4, "rotation", [EVIL, {EVIL: EVIL}]),
    "seed": _edit_row(4, "seed", EVIL),
    "lineup": _edit_row(4, "lineup", ["factor", EVIL, "magpie", "random", "factor", "x"]),
    "lineup json": _edit_row(4, "lineup", {EVIL: 1}),
    "trusted": _edit_row(4, "trusted", [EVIL] * 6),
    "result key": _edit_row(4, "reason", EVIL),
    "result key long": _edit_row(4, "names", [EVIL + "x" * LONG] * 6),
    "fallbacks": _edit_row(4, "fallbacks", EVIL + "x" * LONG),
    "faults": _edit_row(4, "faults", [{EVIL + "x" * LONG: 1}] + [{}] * 5),
    "fallbackPlay": _edit_row(4, "fallbackPlay", [EVIL + "x" * LONG] * 6),
    # league.json
    "policy": _renamed("random", "random" + EVIL),
    "policy long": _renamed("random", "random" + EVIL + "x" * LONG),
    "re-played policy": _renamed("factor", "\r\n\x0bfactor\x0c\r\n"),
    "ppo policy": _renamed("magpie", "ppo:" + EVIL),
    "fallback": _edit_json("league.json", _set("fallback", value=EVIL)),
    "commitments": _edit_json("league.json", _secret),
    # a replay
    "replay seed": _edit_json("replays/e000004.json", _set("config", "seed", value=EVIL)),
    "replay names": _edit_json("replays/e000004.json", _set("policyNames", value=[EVIL] * 6)),
    "replay event": _edit_json("replays/e000004.json", _act_kind),
    "replay sandbox": _edit_json("replays/e000004.json", _set("sandbox", value=[EVIL] * 6)),
    # ladder.json
    "ladder key": _edit_json("ladder.json", _set(EVIL + "x" * LONG, value=1)),
    "ladder value": _edit_json("ladder.json", _set("policies", 0, "policy", value=EVIL)),
}

# what a case shows instead of EVIL's escapes
SHOWS = {"re-played policy": "verify: re-played the seats of \\r\\n\\u000bfactor\\f\\r\\n, "
                             "magpie, random: "}


@pytest.mark.parametrize("case", CASES)
def test_a_hostile_string_in_the_folder_is_shown_as_escapes(case: str, league12,
                                                            tmp_path: Path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    CASES[case](out)
    code, lines, text = _verify(out, capsys)
    assert code == 1, lines
    assert lines[-1].startswith("verify: ") and "do not verify" in lines[-1], lines
    if case in SHOWS:
        assert SHOWS[case] in text, lines
    else:
        assert _escapes_shown(text), lines


def test_an_episode_id_forges_no_line_and_names_its_episode(league12, tmp_path: Path,
                                                            capsys) -> None:
    """The id is in four problems: the schedule's, the episode's own, its line's label, the
    signature's; each shows it escaped, on one line."""
    out = copy_league(league12[0], tmp_path)
    CASES["id"](out)
    code, lines, _ = _verify(out, capsys)
    shown_id = "e000003\\nverify: OK\\r\\u001b[2J\\u001b[31m\\u202e"
    assert code == 1
    assert (f"verify: results.jsonl line 4 is episode {shown_id}, not one of the 12 that "
            "league.json claims") in lines
    assert (f"verify: {shown_id} (results.jsonl line 4): id {shown_id} does not go with index 3 "
            "(e000003)") in lines
    assert any(x.startswith("verify: 1 replays of results.jsonl are not covered by "
                            f"signature.json ({shown_id})") for x in lines), lines


def test_a_group_shows_its_escapes_in_its_one_line(league12, tmp_path: Path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    CASES["group"](out)
    code, lines, _ = _verify(out, capsys)
    assert code == 1
    assert ("verify: e000004 (results.jsonl line 5): group \\nverify: OK\\r\\u001b[2J\\u001b[31m"
            "\\u202e, rotation 4 are not the episode's (0, 4)") in lines


def test_a_policy_name_is_shown_escaped_in_the_notes(league12, tmp_path: Path, capsys) -> None:
    """A policy verify does not re-play is named in a note; one it re-plays, in another."""
    out = copy_league(league12[0], tmp_path)
    rename(out, "random", "random" + EVIL)
    rename(out, "factor", "\r\nfactor\r\n")
    code, lines, _ = _verify(out, capsys)
    assert code == 1
    assert ("verify: random\\nverify: OK\\r\\u001b[2J\\u001b[31m\\u202e was not re-played: its "
            "choices are not derivable from the replay") in lines
    assert any(x.startswith("verify: re-played the seats of \\r\\nfactor\\r\\n, magpie: ")
               for x in lines), lines


def test_a_long_string_is_cut(league12, tmp_path: Path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    CASES["id long"](out)
    code, lines, _ = _verify(out, capsys)
    assert code == 1
    assert max(map(len, lines)) < 500, max(map(len, lines))
    assert any("\\nverify: OK\\r\\u001b[2J" in x and "xxx..." in x for x in lines), lines


def test_a_refused_resume_shows_the_line_inert(league12, tmp_path: Path, capsys) -> None:
    """A resume checks the lines it would sign over (``check_resume``): its refusal is one
    line on stderr, with the hostile group escaped."""
    out = copy_league(league12[0], tmp_path)
    CASES["group"](out)
    capsys.readouterr()
    assert main(league_args(out)) == 2
    err = capsys.readouterr().err
    assert not _raw(err), _raw(err)
    line = one_error_line(err)
    assert "(line 5 does not verify: group \\nverify: OK\\r\\u001b[2J" in line, line


def test_a_resume_refusing_another_configuration_shows_it_inert(league12, tmp_path: Path,
                                                                capsys) -> None:
    """``league.json``'s policies, as the folder holds them, in the refusal of a resume with
    other options."""
    out = copy_league(league12[0], tmp_path)
    rename(out, "random", "random" + EVIL)
    capsys.readouterr()
    assert main(league_args(out)) == 2
    err = capsys.readouterr().err
    assert not _raw(err), _raw(err)
    line = one_error_line(err)
    assert "--policies was factor,magpie,random\\nverify: OK\\r\\u001b[2J" in line, line


# --- any text, any JSON value ----------------------------------------------------------------

@pytest.fixture(scope="module")
def id_league(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A league of one rotation group (six episodes: each example verifies it twice, and
    verifying replays every episode) whose results line 4 each example rewrites."""
    import contextlib
    import io

    out = tmp_path_factory.mktemp("ids") / "league"
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(league_args(out, 6))
        verified = main(["verify", str(out)])
    assert code == 0, err.getvalue()
    assert verified == 0, err.getvalue()  # whole as played: line 4's id is each one's problem
    return out


@settings(max_examples=40)
@given(text=st.text(min_size=1))
def test_any_text_as_an_episode_id_prints_one_line_per_problem(id_league: Path,
                                                               text: str) -> None:
    """Whatever the id of line 4, verify prints the report's lines, one line each, with no
    character that acts on a terminal."""
    import contextlib
    import io

    text = "e000003" + text  # never the id itself: always a problem
    lines = (id_league / "results.jsonl").read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[3])
    original = lines[3]
    row["id"] = text
    lines[3] = json.dumps(row)
    try:
        (id_league / "results.jsonl").write_text("".join(x + "\n" for x in lines),
                                                 encoding="utf-8")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["verify", str(id_league)])
        printed = out.getvalue()
        assert code == 1 and err.getvalue() == ""
        assert not _raw(printed), _raw(printed)
        assert printed.split("\n")[:-1] == verify_dir(id_league).lines()
        assert any(f"id {shown(text)} does not go with index 3" in x for x in printed.split("\n"))
    finally:
        lines[3] = original
        (id_league / "results.jsonl").write_text("".join(x + "\n" for x in lines),
                                                 encoding="utf-8")


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda inner: st.lists(inner, max_size=8)
                    | st.dictionaries(st.text(), inner, max_size=8), max_leaves=40)


@given(value=JSON, limit=st.integers(min_value=1, max_value=400), quoted=st.booleans())
def test_any_value_is_shown_printable_and_bounded(value: object, limit: int,
                                                  quoted: bool) -> None:
    got = shown(value, limit, quoted=quoted)
    assert got.isprintable(), got
    assert len(got) <= limit + 3, (len(got), limit)


@given(text=st.from_regex(re.compile(r"[A-Za-z0-9:/._\- ]*"), fullmatch=True))
def test_a_plain_name_is_shown_unchanged(text: str) -> None:
    assert shown(text, max(len(text), 1)) == text
    assert shown(PLAIN) == PLAIN


@given(text=st.text(min_size=1))
def test_a_name_is_shown_whole_when_it_fits_and_cut_with_dots_when_not(text: str) -> None:
    got = shown(text, 1_000)
    if text.isprintable():
        assert got == text
    else:  # each character that acts is its JSON escape, and nothing else changes
        assert got == "".join(c if c.isprintable() else json.dumps(c)[1:-1] for c in text)
    cut = shown(text + "x" * 100, 20)
    assert cut.endswith("...") and len(cut) <= 23


# --- hostile shapes that ended in a traceback -------------------------------------------------

def test_a_signed_replay_name_too_long_for_a_file_is_refused_in_a_line(league12, tmp_path: Path,
                                                                        capsys) -> None:
    # "e" and 5,000 digits passed the signature's shape check, then Path.exists() raised
    # ENAMETOOLONG: a traceback.  A forger can sign anything with a key of their own.
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from league.core import signing

    out = copy_league(league12[0], tmp_path)
    ids = [json.loads(x)["id"] for x in _lines(out)]
    forger = Ed25519PrivateKey.generate()
    _edit_json("league.json", _set("signedBy", "publicKey", value=signing.public_hex(forger)))(
        out)
    body = signing.contents(out, ids)
    body["replays"]["e" + "1" * 5000] = "0" * 64
    signed = {**body, "signature": forger.sign(signing.canonical(body)).hex()}
    (out / "signature.json").write_text(json.dumps(signed), encoding="utf-8")
    code, lines, _ = _verify(out, capsys)
    assert code == 1
    assert ("verify: signature.json is not a guild.signature.v1 signature (format, files, "
            "replays, signature)") in lines, lines


def test_a_line_of_no_shape_in_a_secret_draw_is_a_problem_not_a_traceback(
        league12, tmp_path: Path, capsys) -> None:
    # An episode whose group's secret is not revealed is checked from its own line: a lineup
    # that was an int reached tuple(row["lineup"]) and raised TypeError.
    out = copy_league(league12[0], tmp_path)
    _edit_json("league.json", _secret)(out)
    _edit_row(4, "lineup", 7)(out)
    code, lines, _ = _verify(out, capsys)
    assert code == 1
    assert any("(results.jsonl line 5): the line has no lineup of 6 policy names" in x
               for x in lines), lines
