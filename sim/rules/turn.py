"""The turn: open (RULES §6.2), resolve in seven classes by initiative (§6.3), settle (§6.4).

Twin: ``sim.batched.kernels_step.step_rows`` plays the same turn on arrays (calling
``acting_seat`` and ``tick_retainers`` from here); ``tests/test_batched.py``'s
``test_batched_equals_scalar_turn_by_turn`` and ``test_batched_equals_scalar_in_a_variant_town``
compare the two states after every turn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from . import resolve
from .events import act_event, end_event, turn_event
from .intents import Intent
from .outcome import Outcome
from .prices import STOCK_CAP
from .robbery import rob
from .speech import resolve_say, speak
from .state import GameState, snapshot
from .world import SEATS

Resolver = Callable[[GameState, Outcome, Intent], None]

# The resolution class of each intent kind (§6.3); give is class 2 only when a keeper is named.
# The batched engine derives its class table from resolution_class.
CLASS_OF = {"say": 1, "buy": 2, "sell": 2, "quest": 2, "take": 3, "drop": 3, "trade": 4,
            "hire": 4, "accept": 4, "rob": 5, "move": 6, "wait": 7, "none": 7}
SPEECH_CLASS, LAST_CLASS = 1, 7  # class 1 is speech; acts resolve in classes 2..7

RESOLVERS: dict[str, Resolver] = {
    "buy": resolve.buy, "sell": resolve.sell, "quest": resolve.quest,
    "take": resolve.take, "drop": resolve.drop, "trade": resolve.trade, "hire": resolve.hire,
    "accept": resolve.accept, "rob": rob, "move": resolve.move, "wait": resolve.wait,
    "none": resolve.none,
}


def acting_seat(turn: int, k: int) -> int:
    """The seat at initiative position ``k``: turn 0 is 0..5, turn 1 is 1..5,0, and so on."""
    return (k + turn) % SEATS


# Seats in acting order for each turn mod 6 (a table: a turn reads it, never builds it).
INITIATIVE = tuple(tuple(acting_seat(turn, k) for k in range(SEATS)) for turn in range(SEATS))


def initiative(turn: int) -> tuple[int, ...]:
    """Seats in acting order (§6.3): 0..5 rotated to start at ``acting_seat(turn, 0)``."""
    return INITIATIVE[turn % SEATS]


def resolution_class(kind: str, names_keeper: bool) -> int:
    """The class (1-7) in which an intent of ``kind`` resolves (§6.3).

    >>> [resolution_class("give", True), resolution_class("give", False)]
    [2, 4]
    """
    if kind == "give":
        return 2 if names_keeper else 4
    return CLASS_OF[kind]


def class_of(it: Intent) -> int:
    return resolution_class(it.kind, it.npc >= 0)


def restock_good(trade, turn: int) -> int:
    """The good a keeper trading ``trade`` restocks at the open of ``turn`` (§6.2), or -1."""
    return trade[turn % len(trade)] if len(trade) else -1


def tick_retainers(retainer_of, retainer_turns) -> None:
    """§6.2: every bond loses a turn; one that reaches 0 ends (its seat is free again)."""
    for s in range(len(retainer_turns)):
        if retainer_turns[s] > 0:
            retainer_turns[s] -= 1
            if retainer_turns[s] == 0:
                retainer_of[s] = -1


def open_turn(st: GameState, events: list) -> None:
    """Expire offers, tick retainers, restock (not on turn 0), rotate logs, log a snapshot."""
    turn = st.turn
    st.offers = [o for o in st.offers if o.posted_turn >= turn - 1]
    tick_retainers(st.retainer_of, st.retainer_turns)
    if turn > 0:
        restock(st)
    st.heard_log = st.room_log
    st.room_log = [[] for _ in st.heard_log]  # one fresh log per room
    events.append(turn_event(snapshot(st)))


def restock(st: GameState) -> None:
    """Every shop adds one unit of ``trade[turn mod len(trade)]`` unless it holds 12 (§6.2)."""
    for n, k in enumerate(st.world.keepers):
        good = restock_good(k.trade, st.turn)
        if good >= 0 and st.stock[n][good] < STOCK_CAP:
            st.stock[n][good] += 1


def resolve_turn(st: GameState, intents: Sequence[Intent], sentences: Sequence[str],
                 says: Sequence[str], scripted: Sequence[bool], events: list) -> list[dict]:
    """Resolve the six intents against the start-of-turn state; returns acts in seat order."""
    order = initiative(st.turn)
    rooms = st.room.copy()  # start-of-turn rooms: where each act is logged
    st.hint[:] = [False] * SEATS
    acts: list[dict | None] = [None] * SEATS
    classes = [class_of(it) for it in intents]
    # Class 1: speech, for every seat with something to say; say intents are emitted here.
    for k, seat in enumerate(order):
        it = intents[seat]
        if (says[seat] or it.text or it.kind == "say") and speak(st, seat, rooms[seat],
                                                                  says[seat], it):
            a = Outcome(seat, k, rooms[seat], it)
            resolve_say(a)
            acts[seat] = record_act(st, a, sentences[seat], says[seat], scripted[seat], events)
    # Classes 2..7, in initiative order within a class.
    for cls in range(SPEECH_CLASS + 1, LAST_CLASS + 1):
        for k in range(SEATS):
            seat = order[k]
            if classes[seat] != cls or acts[seat] is not None:  # a say is already emitted
                continue
            it = intents[seat]
            a = Outcome(seat, k, rooms[seat], it)
            if it.kind == "give":
                (resolve.give_to_keeper if cls == 2 else resolve.give_to_cog)(st, a, it)
            else:
                RESOLVERS[it.kind](st, a, it)
            acts[seat] = record_act(st, a, sentences[seat], says[seat], scripted[seat], events)
    st.turns_played += 1
    st.turn += 1
    if st.turns_played < st.turns:
        open_turn(st, events)
    else:
        # The closing snapshot: its turn is turnsPlayed, which st.turn now equals.
        events.append(turn_event(snapshot(st)))
        settle(st, "complete", events)
    return acts  # type: ignore[return-value]


def record_act(st: GameState, a: Outcome, sentence: str, say: str, scripted: bool,
               events: list) -> dict:
    """Log a resolved act (§15.1) and keep it as the seat's last act (what its next
    observation reports); returns the event."""
    seat = a.seat
    ev = act_event(st.turn, a, sentence, say, st.notes[seat], scripted)
    events.append(ev)
    st.last_sentence[seat] = sentence
    st.last_reason[seat] = a.reason
    st.last_room[seat] = a.room
    return ev


def settle(st: GameState, reason: str, events: list) -> None:
    """End the episode; a replay's recorded reason wins over the one computed here."""
    st.done = True
    st.reason = st.recorded_reason or reason
    events.append(end_event(st.turns_played, st.reason))
