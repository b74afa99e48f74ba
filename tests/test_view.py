"""``guild view``: the page's frames are the rules' states, bad files are refused in one line,
and in a real headless Chromium the page loads, plays, scrubs and ends on the replay's results."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import needs
from leagues import one_error_line

from agents import play_episode
from league.cli import html_viewer as viewer
from league.cli.guild import main
from league.core import files
from league.core.errors import LeagueError
from league.core.verify import MAX_REPLAY_BYTES
from sim import Game, GameConfig

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def league_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("league")
    assert main(["league", "--policies", "factor,magpie,random", "--episodes", "6", "--seed",
                 "1", "--workers", "1", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def replay_path(league_dir: Path) -> Path:
    # The episode with the most salient act makes the richest page.
    paths = sorted((league_dir / "replays").glob("*.json"))
    return max(paths, key=lambda p: max(e.get("salience", 0) for e in
                                        json.loads(p.read_text())["events"]))


def payload_of(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


# --- the frames ----------------------------------------------------------------------------------
def test_frames_are_the_states_an_independent_play_goes_through(replay_path: Path) -> None:
    payload = payload_of(replay_path)
    model = viewer.view_model(payload)
    cfg = GameConfig(seed=payload["config"]["seed"], turns=payload["config"]["turns"],
                     players=tuple(payload["policyNames"]))
    seen: list[dict] = []
    game = play_episode(cfg, payload["policyNames"],
                        on_turn=lambda g, acts: seen.append({"results": g.results(),
                                                             "snap": g.snapshot()}))
    assert game.events == payload["events"]  # the league's episode, played again
    start = Game(cfg)
    seen.insert(0, {"results": start.results(), "snap": start.snapshot()})
    assert len(model["frames"]) == len(seen) == cfg.turns + 1
    for frame, want in zip(model["frames"], seen):
        cogs = frame["cogs"]
        assert [c["score"] for c in cogs] == want["results"]["scores"]
        assert [c["coin"] for c in cogs] == want["results"]["coin"]
        assert [c["points"] for c in cogs] == want["results"]["questPoints"]
        assert [c["robbed"] for c in cogs] == want["results"]["robbed"]
        assert [c["room"] for c in cogs] == [c["room"] for c in want["snap"]["cogs"]]
    last = model["frames"][-1]
    assert [c["score"] for c in last["cogs"]] == payload["results"]["scores"]
    assert model["results"] == payload["results"] and last["done"]


def test_each_frame_tells_its_turn_and_stalls_price_the_stock(replay_path: Path) -> None:
    payload = payload_of(replay_path)
    model = viewer.view_model(payload)
    acts = [e for e in payload["events"] if e["kind"] == "act"]
    for k, frame in enumerate(model["frames"]):
        mine = [a for a in acts if a["turn"] == k - 1]
        assert [(a["seat"], a["sentence"]) for a in frame["acts"]] == \
            [(a["seat"], a.get("sentence", "")) for a in mine]
    # Frame 1's stall lines: the snapshot's stock, priced by the town's ask/bid tables.
    from sim.rules.world import STANDARD_TOWN as W
    snap = [e for e in payload["events"] if e["kind"] == "turn"][1]
    for n, stall in enumerate(model["frames"][1]["stalls"]):
        for g, line in zip(W.keepers[n].trade, stall["goods"]):
            stock = snap["npcs"][n]["stock"][g]
            assert (line["stock"], line["ask"], line["bid"]) == (
                viewer.count_name(W, g, stock), W.ask_table[g][stock], W.bid_table[g][stock])


def _happenings(model: dict) -> dict[tuple, list[tuple[int, dict]]]:
    """The acts of a model by happening: a robber's robberies of one cog, else one seat's acts
    with one outcome."""
    groups: dict[tuple, list[tuple[int, dict]]] = {}
    for f in model["frames"]:
        for a in f["acts"]:
            robbed = a["intent"] == "rob" and a["ok"]
            key = (a["seat"], "robbed", a["other"]) if robbed else (a["seat"], a["outcome"])
            groups.setdefault(key, []).append((f["turn"], a))
    return groups


def test_highlights_are_the_most_salient_happenings_each_once(replay_path: Path) -> None:
    model = viewer.view_model(payload_of(replay_path))
    reel, groups = model["highlights"], _happenings(model)
    assert len(reel) == min(viewer.HIGHLIGHTS, len(groups))
    # each highlight is a whole happening: its turns, its count, its best salience
    keys = []
    for h in reel:
        key = next(k for k, acts in groups.items()  # the happening that began with its act
                   if (acts[0][0], acts[0][1]["order"]) == (h["frame"], h["order"]))
        assert h["frames"] == [t for t, _ in groups[key]]
        keys.append(key)
        assert h["count"] == len(groups[key]) and h["frame"] == h["frames"][0]
        assert h["salience"] == max(a["salience"] for _, a in groups[key])
    assert len(set(keys)) == len(keys)  # no happening twice
    # the reel: the most salient happenings, in the order they began
    best = sorted((max(a["salience"] for _, a in acts) for acts in groups.values()),
                  reverse=True)
    assert sorted((h["salience"] for h in reel), reverse=True) == best[:len(reel)]
    assert [(h["frame"], h["order"]) for h in reel] == sorted((h["frame"], h["order"])
                                                              for h in reel)
    # this episode's magpie robs one cog turn after turn: one highlight says so
    robbed = [h for h in reel if h["intent"] == "rob" and h["ok"]]
    assert robbed and len({(h["seat"], h["other"]) for h in robbed}) == len(robbed)
    assert any(h["count"] > 1 and f" {h['count']} times: " in h["outcome"] for h in robbed)


def test_one_robber_robbing_one_cog_again_and_again_is_one_highlight() -> None:
    from sim.rules.world import STANDARD_TOWN as W
    aliases = ["A", "B", "C", "D", "E", "F"]

    def act(turn: int, seat: int, intent: str, salience: int, **e: object) -> dict:
        e = {"intent": intent, "reason": "ok", "turn": turn - 1, "seat": seat,
             "order": seat, "salience": salience, **e}
        return viewer._act_view(e, W, aliases)

    frames = [{"turn": 0, "acts": []}]
    for t in range(1, 11):  # seat 3 robs B every turn: nails, then a hide, then coin
        loot = {"item": 1, "qty": 1} if t <= 6 else {"item": 0, "qty": 1} if t <= 8 \
            else {"item": -1, "qty": 0, "coin": 5}
        frames.append({"turn": t, "acts": [act(t, 3, "rob", 100, other=1, **loot)]})
    frames[4]["acts"].append(act(4, 0, "give", 90, npc=4, item=2, qty=2, coin=16))
    frames[9]["acts"].append(act(9, 5, "rob", 80, other=1, reason="robbery_failed", coin=8))
    reel = viewer.highlights(frames, W, aliases)
    assert [(h["when"], h["seat"], h["count"], h["outcome"]) for h in reel] == [
        ("Turns 1\u201310", 3, 10, "robbed B 10 times: 2 hides, 6 nails and 10 coin in all."),
        ("Turn 4", 0, 1, "delivered 2 rope to Guildmaster Vell: 16 commission points."),
        ("Turn 9", 5, 1, "the attempt on B failed; paid a fine of 8 coin."),
    ]
    assert reel[0]["frames"] == list(range(1, 11)) and reel[0]["salience"] == 100
    # the same act again and again: once, with how often
    frames = [{"turn": t, "acts": [act(t, 2, "trade", 40, other=0, item=1, qty=1, coin=9)]}
              for t in (2, 3, 7)]
    (h,) = viewer.highlights(frames, W, aliases)
    assert (h["when"], h["outcome"]) == ("Turns 2\u20133 and 7",
                                         "offered A 1 nail for 9 coin (3 times).")


def test_goods_are_counted_in_the_singular_and_the_plural(replay_path: Path) -> None:
    from sim.rules.world import STANDARD_TOWN as W
    names = {g.name: g.id for g in W.goods}
    assert [viewer.count_name(W, names["nails"], n) for n in (0, 1, 2)] == \
        ["0 nails", "1 nail", "2 nails"]
    assert [viewer.count_name(W, names["hide"], n) for n in (1, 2)] == ["1 hide", "2 hides"]
    assert [viewer.count_name(W, names["rope"], n) for n in (1, 3)] == ["1 rope", "3 rope"]
    buy = {"intent": "buy", "reason": "ok", "item": names["nails"], "qty": 1, "npc": 1,
           "coin": 4}
    assert viewer.outcome(buy, W, ["A"] * 6, "x") == "bought 1 nail from Smith Bram for 4 coin."
    # nowhere in the page's own words for a whole episode (the seats' sentences are quoted
    # as they were said)
    model = viewer.view_model(payload_of(replay_path))
    words = [h["outcome"] for h in model["highlights"]]
    for f in model["frames"]:
        words += [c["pack"] for c in f["cogs"]] + f["ground"] + [a["outcome"] for a in f["acts"]]
        words += [g["stock"] for st in f["stalls"] for g in st["goods"]]
    text = "\n".join(words)
    assert not re.search(r"\b1 nails\b", text) and re.search(r"\b1 nail\b", text)


def test_outcomes_explain_failures_and_tell_successes() -> None:
    from sim.rules.world import STANDARD_TOWN as W
    aliases = ["A", "B", "C", "D", "E", "F"]
    buy = {"intent": "buy", "reason": "ok", "item": 2, "qty": 2, "npc": 1, "coin": 17}
    assert viewer.outcome(buy, W, aliases, "x") == "bought 2 rope from Smith Bram for 17 coin."
    rob = {"intent": "rob", "reason": "robbery_failed", "other": 1, "coin": 8}
    assert viewer.outcome(rob, W, aliases, "x") == "the attempt on B failed; paid a fine of 8 coin."
    move = {"intent": "move", "reason": "no_such_exit"}
    assert viewer.outcome(move, W, aliases, "The Docks") == \
        "there is no road from The Docks to that place."


def test_the_page_is_self_contained_and_sentences_cannot_break_it(tmp_path: Path) -> None:
    game = Game(GameConfig(seed=3, turns=6))
    evil = 'I wait </script><script>alert(1)</script> "<b>hi</b>"'
    while not game.done:
        game.play_turn([evil] + ["I wait"] * 5)
    page = viewer.render_page(game.replay_payload())
    assert page.count("</script>") == 2  # the data's script and the viewer's script only
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page and "src=" not in page


# --- the command line ----------------------------------------------------------------------------
def test_guild_view_writes_the_page(replay_path: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "page.html"
    assert main(["view", str(replay_path), "-o", str(out)]) == 0
    assert "data-loaded" in out.read_text(encoding="utf-8")
    assert str(out) in capsys.readouterr().out


def _broken(tmp_path: Path, replay_path: Path) -> dict[str, tuple[Path, str]]:
    payload = payload_of(replay_path)
    cases: dict[str, object] = {
        "not json": "{",
        "not a replay": {"protocol": "something else"},
        "no events": {**payload, "events": None},
        "tampered act": {**payload, "events": [
            {**e, "coin": 999} if i == 10 else e for i, e in enumerate(payload["events"])]},
        "false results": {**payload, "results": {**payload["results"], "coin": [0] * 6}},
        "variant town": {**payload, "config": {**payload["config"], "world": {"rooms": []}}},
        "bad seed": {**payload, "config": {**payload["config"], "seed": "x"}},
    }
    words = {"not json": "is not JSON", "not a replay": "is not a cogmud.replay.v1 replay",
             "no events": "lacks its config or events", "tampered act": "does not re-derive",
             "false results": "results differ", "variant town": "--world FILE",
             "bad seed": "config is invalid"}
    made = {}
    for name, body in cases.items():
        p = tmp_path / f"{name.replace(' ', '_')}.json"
        p.write_text(body if isinstance(body, str) else json.dumps(body), encoding="utf-8")
        made[name] = (p, words[name])
    made["missing"] = (tmp_path / "nope.json", "no such file")
    made["directory"] = (tmp_path, "is a directory")
    return made


def test_bad_files_give_one_line_and_exit_2(replay_path: Path, tmp_path: Path, capsys) -> None:
    for name, (path, words) in _broken(tmp_path, replay_path).items():
        assert main(["view", str(path), "-o", str(tmp_path / "x.html")]) == 2, name
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err, (name, err)
        assert err.startswith("guild view: error: ") and "Traceback" not in err
    assert main(["view", str(replay_path), "-o", str(tmp_path / "no" / "dir.html")]) == 2
    assert "cannot write" in capsys.readouterr().err



def _guild_process(*args: str) -> subprocess.CompletedProcess:
    """``guild ARGS`` in a child process with a deadline and 1 GiB of address space, so that a
    command that reads a device until memory runs out, or blocks on a FIFO, fails the test
    instead of taking the machine or hanging it."""
    def limit() -> None:
        import resource  # POSIX

        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    return subprocess.run([sys.executable, "-m", "league", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, preexec_fn=limit)


def test_view_reads_regular_files_only_refused_before_reading(replay_path: Path,
                                                              tmp_path: Path) -> None:
    """/dev/zero would be read without end and a FIFO would block: both refused unread."""
    needs(hasattr(os, "mkfifo") and os.path.exists("/dev/zero"), "FIFOs and /dev/zero (POSIX)")
    fifo = tmp_path / "replay.json"
    os.mkfifo(fifo)
    page = str(tmp_path / "x.html")
    for args in (["/dev/zero"], [str(fifo)], [str(replay_path), "--world", str(fifo)],
                 [str(replay_path), "--world", "/dev/zero"]):
        done = _guild_process("view", *args, "-o", page)
        assert done.returncode == 2, (args, done.stderr[-500:])
        line = one_error_line(done.stderr)
        assert line.startswith("guild view: error: ") and "not a regular file" in line, line
    assert not Path(page).exists()
    # in this process too: refused by stat, nothing opened
    with pytest.raises(LeagueError, match="not a regular file"):
        files.load_replay(fifo)
    with pytest.raises(LeagueError, match="is a directory"):
        files.load_replay(tmp_path)
    assert main(["view", str(replay_path), "-o", page]) == 0  # a replay file still is one


def test_view_refuses_a_replay_over_the_cap_unread(tmp_path: Path, monkeypatch,
                                                   capsys) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as f:  # sparse: no disk used, and never read
        f.truncate(MAX_REPLAY_BYTES + 1)
    monkeypatch.setattr(os, "open", lambda *a, **k: pytest.fail("the file was opened"))
    assert main(["view", str(huge), "-o", str(tmp_path / "x.html")]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"over {MAX_REPLAY_BYTES >> 20} MB" in line, line

def test_a_variant_town_needs_its_world_file(tmp_path: Path, capsys) -> None:
    from sim import load_config

    town = tmp_path / "town.json"
    town.write_text(json.dumps({"goods": {"salt": {"value": 12}}}), encoding="utf-8")
    game = play_episode(load_config(town, seed=5, turns=6), ["factor", "magpie"] * 3)
    replay = tmp_path / "variant.json"
    replay.write_text(json.dumps(game.replay_payload()), encoding="utf-8")
    assert main(["view", str(replay)]) == 2
    assert one_error_line(capsys.readouterr().err).endswith(
        "the replay was played in a world file's town, not the standard one; pass its world "
        "file with --world FILE")
    other = tmp_path / "other.json"  # another town: it said "pass --world", given one
    other.write_text(json.dumps({"goods": {"salt": {"value": 13}}}), encoding="utf-8")
    assert main(["view", str(replay), "--world", str(other)]) == 2
    assert one_error_line(capsys.readouterr().err).endswith(
        "the replay was played in another town than the world given; pass the world file it "
        "was played in")
    assert main(["view", str(replay), "--world", str(town)]) == 0
    assert (tmp_path / "variant.html").is_file()
    plain = tmp_path / "plain.json"  # a standard replay given a world: leave it out
    plain.write_text(json.dumps(Game(GameConfig(seed=5, turns=6)).replay_payload()),
                     encoding="utf-8")
    assert main(["view", str(plain), "--world", str(town), "-o", str(tmp_path / "p.html")]) == 2
    assert one_error_line(capsys.readouterr().err).endswith(
        "the replay was played in the standard town, not the world given; leave out --world")
    world = viewer._load_world(str(town))
    model = viewer.view_model(payload_of(replay), world)
    assert [c["score"] for c in model["frames"][-1]["cogs"]] == game.results()["scores"]


# --- a real browser ------------------------------------------------------------------------------
def test_the_page_in_headless_chromium(replay_path: Path, tmp_path: Path, chromium: Any) -> None:
    payload = payload_of(replay_path)
    html = tmp_path / "page.html"
    assert main(["view", str(replay_path), "-o", str(html)]) == 0
    turns = payload["config"]["turns"]
    page = chromium.new_page(viewport={"width": 1500, "height": 1000})
    try:
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("requestfailed", lambda r: errors.append(f"request {r.url}"))
        page.goto(html.as_uri())
        page.wait_for_selector("body[data-loaded=true]", timeout=10_000)

        def frame() -> int:
            return int(page.get_attribute("body", "data-frame"))

        def scores() -> list[float]:
            return page.eval_on_selector_all(
                "td.score[data-seat]",
                "els => els.map(e => [+e.dataset.seat, +e.dataset.score])")

        # The map: every room, a road per exit pair, dark rooms shaded, six tokens.
        world = payload["config"]["world"]
        assert page.locator("g.room").count() == len(world["rooms"])
        assert page.locator("g.room.dark").count() == sum(r["dark"] for r in world["rooms"])
        roads = {tuple(sorted((r["id"], b))) for r in world["rooms"] for b in r["exits"]}
        assert page.locator("line.road").count() == len(roads)
        assert page.locator("g.token").count() == 6
        assert frame() == 0 and [s for _, s in scores()] == [0.0] * 6
        # Step with the keys and the buttons; scrub half way.
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        assert frame() == 2
        page.click("#back")
        assert frame() == 1
        page.locator("#chronicle .turn-block.current li.act").first.wait_for()
        assert page.locator("#chronicle .turn-block.current li.act").count() == 6
        page.eval_on_selector("#scrubber", "(s, v) => { s.value = v; "
                              "s.dispatchEvent(new Event('input')); }", str(turns // 2))
        assert frame() == turns // 2
        # Play advances by itself; space pauses.
        page.click("#play")
        page.wait_for_function(f"+document.body.dataset.frame > {turns // 2}", timeout=5000)
        page.keyboard.press(" ")
        assert page.inner_text("#play") == "Play"
        # Scrub to the end: the page's scores are the replay's results.
        page.keyboard.press("End")
        assert frame() == turns
        final = scores()
        assert [seat for seat, _ in final] == list(range(6))
        assert [s for _, s in final] == payload["results"]["scores"]
        assert page.inner_text("#frame-label").endswith(payload["results"]["reason"])
        # Tokens stand in the rooms of the last snapshot.
        last = [e for e in payload["events"] if e["kind"] == "turn"][-1]
        rooms = page.eval_on_selector_all("g.token", "els => els.map(e => +e.dataset.room)")
        assert rooms == [c["room"] for c in last["cogs"]]
        # A highlight jumps to its turn.
        first = page.locator("#highlights li").first
        target = int(first.get_attribute("data-frame"))
        first.click()
        assert frame() == target
        page.keyboard.press("End")
        page.wait_for_timeout(700)  # let the tokens finish moving for the picture
        shot = tmp_path / "viewer.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 20_000
        assert errors == []
    finally:
        page.close()


# Policy names with nothing to break a line at: what pushed the scoreboard out of its panel.
LONG_NAMES = ["faulty_policies:SlowButSteadyPolicy", "module.path.to.a.policy:AVeryLongName",
              "magpie", "random", "llm:qwen2.5-7b-instruct@localhost:8000/v1/chat/completions",
              "factor"]
FITS = """() => {
  const panel = document.getElementById("scoreboard").closest(".panel");
  const box = panel.getBoundingClientRect();
  const table = document.getElementById("scoreboard").getBoundingClientRect();
  return [panel.scrollWidth <= panel.clientWidth, table.right <= box.right + 0.5,
          document.documentElement.scrollWidth <= window.innerWidth];
}"""


def test_the_scoreboard_fits_a_1400_pixel_window(replay_path: Path, tmp_path: Path,
                                                 chromium: Any) -> None:
    payload = payload_of(replay_path)
    long = {**payload, "policyNames": LONG_NAMES,
            "results": {**payload["results"], "names": LONG_NAMES}}
    pages = []
    for name, body in (("plain", payload), ("long", long)):
        pages.append(tmp_path / f"{name}.html")
        pages[-1].write_text(viewer.render_page(body), encoding="utf-8")
    errors: list[str] = []
    for width in (1400, 1000):
        page = chromium.new_page(viewport={"width": width, "height": 900})
        try:
            page.on("pageerror", lambda e: errors.append(str(e)))
            for html in pages:
                page.goto(html.as_uri())
                page.wait_for_selector("body[data-loaded=true]", timeout=10_000)
                for k in range(payload["config"]["turns"] + 1):  # every frame
                    assert page.evaluate(FITS) == [True] * 3, (width, html.name, k)
                    page.keyboard.press("ArrowRight")
                reel = page.eval_on_selector_all("#highlights li",
                                                 "els => els.map(e => e.textContent)")
                assert reel and len(set(reel)) == len(reel)
            if width == 1400:
                page.wait_for_timeout(700)  # let the tokens finish moving for the picture
                shot = tmp_path / "viewer-1400.png"
                page.screenshot(path=str(shot), full_page=True)
                assert shot.stat().st_size > 20_000
        finally:
            page.close()
    assert errors == []


def test_sim_replay_refuses_a_town_the_replay_was_not_played_in(tmp_path: Path) -> None:
    # sim.replay read a variant replay as a standard-town game: a mismatch at event 2 ("coin is
    # 21 in the record but the rules give None"), or, for a town differing in one exit only,
    # a silent success in the wrong town.
    from sim import ReplayMismatch, load_config, replay
    from sim.rules.worldfile import load_world

    town = tmp_path / "town.json"
    town.write_text(json.dumps({"goods": {"salt": {"name": "pepper"}}}), encoding="utf-8")
    game = play_episode(load_config(town, seed=5, turns=6), ["factor", "magpie"] * 3)
    payload = game.replay_payload()
    with pytest.raises(ReplayMismatch, match=r"^the replay was played in a world file's town, "
                                             r"not the standard one; pass the town it was "
                                             r"played in \(world=") as e:
        replay(payload["config"], payload["events"])
    assert e.value.index == 0
    world = load_world(town)[0]
    assert replay(payload["config"], payload["events"], world).results() == game.results()
    standard = Game(GameConfig(seed=5, turns=6)).replay_payload()
    with pytest.raises(ReplayMismatch, match="^the replay was played in the standard town, not "
                                             "the world given; replay it without world=$"):
        replay(standard["config"], standard["events"], world)
    cumin = tmp_path / "cumin.json"
    cumin.write_text(json.dumps({"goods": {"salt": {"name": "cumin"}}}), encoding="utf-8")
    with pytest.raises(ReplayMismatch, match="another town than the world given; pass the "
                                             "town it was played in"):
        replay(payload["config"], payload["events"], load_world(cumin)[0])
    for wrong in (str(town), load_world(town)):  # a path, or load_world's pair: said how
        with pytest.raises(ValueError, match=r"a world file is read by sim.load_config"):
            replay(payload["config"], payload["events"], wrong)

