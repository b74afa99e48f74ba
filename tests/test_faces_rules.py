"""The numeric faces against the rules themselves, not against each other.

The differential tests (``test_batched.py``) hold the batched kernels equal to ``sim.codec``;
faces that drifted from the rules the same way would still agree there.  Here, in states the
rules reach (seeded games after turns of baselines, random legal acts and any acts, seats drawn
to one meeting room; half of them first restored into corners play seldom reaches: full packs,
empty purses, broke shops):

* a mask bit is set exactly when the rules accept the action (its act's ``reason`` is ``ok`` or
  ``waited``): every action of the table is played as the environments play an index
  (``to_intent``), by the seat alone on a copy of the game.  Where the mask allows an act the
  rules refuse, the refusal's cause must be one hidden from the seat (``legal_mask``'s
  docstring lists them) and must hold.  Both the scalar and the batched kernels' mask; a fixed
  set of states shows that every block and every condition of the mask is met.
* the numeric observation is ``Game.observe(seat)``: the whole vector is rebuilt from the
  ``observe`` dict, the aliases and the legal actions alone (``encode_view``, so it carries
  nothing else), and changing what ``observe`` does not
  show (other seats' purses, packs, bonds, whereabouts elsewhere, other rooms and shops, offers
  between others) leaves the whole vector, mask included, unchanged.  Both encoders.
"""

from __future__ import annotations

import copy

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agents import Factor, Magpie
from sim import Game, GameConfig, Intent
from sim.batched.engine import BatchedGuild
from sim.batched.observe import encode as batch_encode
from sim.batched.observe import legal_masks
from sim.codec.action_table import action_table, legal_mask, to_intent
from sim.codec.encode import encode, encode_flat, encode_view, slices, split
from sim.rules.intents import REASONS
from sim.rules.offers import Offer
from sim.rules.world import SEATS, STANDARD_TOWN

W = STANDARD_TOWN
TABLE = action_table(W)
TURNS = 14
ACCEPTED = ("ok", "waited")
SOCIAL = ("gift", "pay", "offer", "hire", "accept", "rob")
SOCIAL_ROWS = np.array([a.block in SOCIAL for a in TABLE])
WAIT = Intent("wait")
DARK = [r.id for r in W.rooms if r.dark]

MASK_SETTINGS = settings(max_examples=50, deadline=None,
                         suppress_health_check=[HealthCheck.too_slow])
VIEW_SETTINGS = settings(max_examples=100, deadline=None,
                         suppress_health_check=[HealthCheck.too_slow])
# A state as ``reachable`` plays it: (seed, turns played, thievery, mix, squeezed).
places = st.tuples(st.integers(0, 2 ** 31 - 2), st.integers(0, TURNS - 1), st.booleans(),
                   st.integers(0, 2 ** 32 - 1), st.booleans())
seats = st.integers(0, SEATS - 1)


# --- reachable states -------------------------------------------------------------------------
def reachable(seed: int, played: int, thievery: bool, mix: int, squeezed: bool = False) -> Game:
    """A game after ``played`` turns: each seat is factor, magpie or a mixed random player
    (drawn from ``mix``) that walks to a meeting room, then plays legal acts (social ones
    often) and now and then any act of the table.

    ``squeezed`` first restores the opening state with the corners that fourteen turns of play
    seldom reach: full packs, empty purses, broke shops, seats already met (a dark room often).
    """
    game = Game(GameConfig(seed=seed, turns=TURNS, thievery=thievery))
    rng = np.random.default_rng(mix)
    meet = int(rng.choice(DARK + [int(rng.integers(W.n_rooms))]))  # dark rooms: robbery works
    if squeezed:
        squeeze(game, rng, meet)
    players = [(Factor(), Magpie(), None, None)[int(rng.integers(4))] for _ in range(SEATS)]
    for _ in range(played):
        game.play_turn([p.act(game, s) if p is not None else _mixed(rng, game, s, meet)
                        for s, p in enumerate(players)])
    return game


def squeeze(game: Game, rng: np.random.Generator, meet: int) -> None:
    """Restore ``game`` with most seats in ``meet`` and odd packs, purses, shop coin and stock."""
    snap = game.snapshot()
    for cog in snap["cogs"]:
        if rng.random() < 0.7:
            cog["room"], cog["prevRoom"] = meet, -1
        cog["coin"] = int(rng.choice([0, 1, 3, 9, 40]))
        pack = [0] * W.n_goods
        for _ in range(int(rng.choice([0, 2, W.carry_limit - 1, W.carry_limit]))):
            pack[int(rng.integers(W.n_goods))] += 1
        cog["items"] = pack
    for npc in snap["npcs"]:
        npc["coin"] = int(rng.choice([0, 2, 5, 30, 120]))
        npc["stock"] = [int(rng.choice([0, 1, x])) for x in npc["stock"]]
    game.restore(snap)


def _mixed(rng: np.random.Generator, game: Game, seat: int, meet: int) -> Intent:
    st_ = game.state
    here, u = st_.room[seat], rng.random()
    if u < 0.3 and here != meet:
        return Intent("move", to_room=W.step_toward(here, meet))
    if u < 0.9:
        legal = np.array(legal_mask(st_, seat))
        social = legal & SOCIAL_ROWS
        pool = np.flatnonzero(social if social.any() and rng.random() < 0.6 else legal)
        index = int(rng.choice(pool))
    else:
        index = int(rng.integers(len(TABLE)))
    return to_intent(index, W, seat, here)


# --- what the rules say of one act ------------------------------------------------------------
def alone(game: Game, seat: int, index: int) -> str:
    """The reason of action ``index`` played by ``seat`` on a copy while the others wait."""
    fork = copy.copy(game)
    fork.state = copy.deepcopy(game.state, {id(game.world): game.world})
    fork.events = []
    acts = [WAIT] * SEATS
    acts[seat] = to_intent(index, game.world, seat, game.state.room[seat])
    return fork.play_turn(acts)[seat]["reason"]


def hidden_cause(game: Game, seat: int, index: int, reason: str) -> bool:
    """Whether a refusal has a cause the seat cannot see: the receiver's full pack (gift), the
    offerer's goods or purse (accept), the victim's guards or empty pack and purse (rob)."""
    s = game.state
    a = TABLE[index]
    other, here = (seat + a.rel) % SEATS, s.room[seat]
    if a.block == "gift":
        return reason == "carry_limit" and s.free(other) == 0
    if a.block == "accept":
        offer = next((o for o in s.offers
                      if o.to == seat and o.sender == other and o.posted_turn == s.turn - 1),
                     None)
        if offer is None:
            return False
        short = (s.items[other][offer.item] < offer.qty if offer.kind == "trade"
                 else s.coin[other] < offer.coin)
        return reason == "offer_expired" and short
    if a.block == "rob":
        if reason == "robbery_failed":
            return any(s.retainer_of[g] == other and s.retainer_turns[g] > 0
                       and s.room[g] == here for g in range(SEATS))
        if reason == "nothing_to_take":
            return s.coin[other] == 0 and (sum(s.items[other]) == 0 or s.free(seat) == 0)
    return False


def batched_engine(game: Game) -> BatchedGuild:
    """A one-row batched engine holding ``game``'s state."""
    e = BatchedGuild(1, turns=game.state.turns, thievery=game.state.thievery, world=game.world)
    e.load_games([game])
    return e


def mask_disagreements(game: Game, seat: int, masks: dict[str, list[bool]],
                       seen: set | None = None) -> list[str]:
    """Every action where a face's mask bit and the rules' verdict differ (hidden causes
    aside), as readable lines; ``seen`` collects (block, scalar bit, reason) triples."""
    out = []
    for i, a in enumerate(TABLE):
        reason = alone(game, seat, i)
        ok = reason in ACCEPTED
        for face, mask in masks.items():
            bit = bool(mask[i])
            if bit != ok and not (bit and hidden_cause(game, seat, i, reason)):
                out.append(f"{face} mask: action {i} {a} is {int(bit)} but the rules say "
                           f"{reason!r} (turn {game.turn}, seat {seat})")
        if seen is not None:
            seen.add((a.block, int(masks["scalar"][i]), reason))
    return out


def masks_of(game: Game, seat: int) -> dict[str, list[bool]]:
    """The scalar mask and the batched kernels' mask (a one-row engine holding the game)."""
    e = batched_engine(game)
    return {"scalar": legal_mask(game.state, seat),
            "batched": legal_masks(e, np.array([0]), np.array([seat]))[0].tolist()}


# --- 2a: the mask is the rules' verdict --------------------------------------------------------
@MASK_SETTINGS
@given(place=places, seat=seats)
def test_mask_bit_is_set_exactly_when_the_rules_accept_the_act(place: tuple, seat: int) -> None:
    game = reachable(*place)
    assert mask_disagreements(game, seat, masks_of(game, seat)) == []


# Each block accepted where its bit is set, each condition of the mask meeting a refusal where
# its bit is clear, and causes hidden from the seat refusing where it is set: (block, bit, reason).
MUST_MEET = {(a.block, 1, "waited" if a.block == "wait" else "ok") for a in TABLE} | {
    ("take", 0, "no_such_item"), ("take", 0, "carry_limit"), ("drop", 0, "not_carrying"),
    ("buy", 0, "cannot_afford"), ("buy", 0, "carry_limit"), ("buy", 0, "out_of_stock"),
    ("sell", 0, "not_carrying"), ("sell", 0, "npc_broke"), ("sell", 0, "not_wanted"),
    ("deliver", 0, "no_matching_commission"), ("gift", 0, "not_carrying"),
    ("gift", 0, "not_in_room"), ("pay", 0, "no_target"), ("hire", 0, "cannot_afford"),
    ("offer", 0, "not_carrying"), ("accept", 0, "no_such_offer"), ("accept", 0, "offer_expired"),
    ("rob", 0, "robbery_failed"), ("rob", 0, "thievery_forbidden"),
    ("rob", 0, "bound_by_contract"), ("move", 0, "no_such_exit"), ("quest", 0, "no_npc_here"),
    ("gift", 1, "carry_limit"), ("rob", 1, "nothing_to_take"),
}


def test_mask_states_meet_every_condition() -> None:
    """The states are not too easy: in four fixed ones (every seat), every block is accepted
    where the mask allows it, each of the mask's conditions is what refuses an act, and a
    hidden cause refuses an allowed one."""
    seen: set = set()
    for place in [(224, 6, True, 24, True), (205, 10, True, 5, False),
                  (203, 6, False, 3, False), (309, 13, True, 9, False)]:
        game = reachable(*place)
        for seat in range(SEATS):
            assert mask_disagreements(game, seat, masks_of(game, seat), seen) == []
    assert MUST_MEET - seen == set()


# --- 2b: the numeric observation is what observe() shows ---------------------------------------
def batched_row(game: Game, seat: int) -> np.ndarray:
    e = batched_engine(game)
    return batch_encode(e, np.array([0]), np.array([seat]))[0]


@VIEW_SETTINGS
@given(place=places, seat=seats)
def test_numeric_observation_carries_what_observe_shows(place: tuple, seat: int) -> None:
    """The vector built from the ``observe`` dict alone (and the town, the aliases and the
    legal actions, which the seat knows: ``encode_view``, what a policy in a sandbox builds) is
    the one built from the state, scalar and batched."""
    game = reachable(*place)
    legal = [i for i, ok in enumerate(legal_mask(game.state, seat)) if ok]
    want = encode_view(game.observe(seat), W, game.aliases, legal)
    got = encode_flat(game.state, seat)
    assert got.tolist() == want.tolist(), [
        k for k, (a, b) in slices(W).items() if got[a:b].tolist() != want[a:b].tolist()]
    assert batched_row(game, seat).tolist() == want.tolist()
    assert {k: v.tolist() for k, v in split(want, W).items()} == {
        k: v.tolist() for k, v in encode(game.state, seat).items()}


def hide(game: Game, seat: int, rng: np.random.Generator) -> None:
    """Change, in place, what ``observe(seat)`` does not show: other seats' purses, packs,
    commissions, notes, last acts and bonds among themselves; where they stand outside the
    seat's room; other rooms' floors and lines; shops elsewhere (unless a hint reads them);
    offers between others, and offers to the seat posted this turn (seen only next turn)."""
    s = game.state
    here = s.room[seat]
    others = [o for o in range(SEATS) if o != seat]
    elsewhere = [r for r in range(W.n_rooms) if r != here]
    for o in others:
        s.coin[o] = int(rng.integers(0, 200))
        pack = [0] * W.n_goods
        for _ in range(int(rng.integers(0, W.carry_limit + 1))):
            pack[int(rng.integers(W.n_goods))] += 1
        s.items[o] = pack
        s.delivered[o] = [int(rng.integers(0, c + 1)) for c in s.quest_count[o]]
        s.notes[o] = "a secret plan"
        s.last_reason[o] = str(rng.choice(REASONS))
        if s.room[o] != here:
            s.room[o], s.prev_room[o] = int(rng.choice(elsewhere)), -1
        if s.retainer_of[o] != seat and not (s.retainer_of[seat] == o
                                             and s.retainer_turns[seat] > 0):
            boss = int(rng.choice([-1] + [b for b in others if b != o]))
            s.retainer_of[o], s.retainer_turns[o] = boss, 0 if boss < 0 else int(
                rng.integers(1, 4))
    for r in elsewhere:
        s.floor[r] = [int(x) for x in rng.integers(0, 4, W.n_goods)]
        s.heard_log[r] = ["a line elsewhere"] * int(rng.integers(0, 3))
    s.room_log = [["a line this turn"] for _ in range(W.n_rooms)]
    if not s.hint[seat]:
        for k, keeper in enumerate(W.keepers):
            if keeper.room != here:
                s.stock[k] = [int(x) for x in rng.integers(0, 13, W.n_goods)]
                s.shop_coin[k] = int(rng.integers(0, 300))
    posted = {(o.sender, o.posted_turn) for o in s.offers}
    for sender in others:
        to = int(rng.choice([t for t in others if t != sender] + [seat]))
        turn = s.turn if to == seat else s.turn - int(rng.integers(0, 2))
        if turn >= 0 and (sender, turn) not in posted:
            s.offers.append(Offer("hire", sender, to, -1, 0, int(rng.integers(1, 9)), turn))


@VIEW_SETTINGS
@given(place=places, seat=seats, hidden=st.integers(0, 2 ** 32 - 1))
def test_numeric_observation_carries_nothing_observe_hides(place: tuple, seat: int,
                                                          hidden: int) -> None:
    game = reachable(*place)
    view, flat, row = game.observe(seat), encode_flat(game.state, seat), batched_row(game, seat)
    hide(game, seat, np.random.default_rng(hidden))
    assume(game.observe(seat) == view)  # what was changed is indeed hidden from the seat
    np.testing.assert_array_equal(encode_flat(game.state, seat), flat)
    np.testing.assert_array_equal(batched_row(game, seat), row)
