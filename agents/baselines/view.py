"""What a policy may read: the seat's restricted view (RULES §17), plus one marked exception.

:class:`SeatView` holds exactly the facts ``game.observe(seat)`` shows, as ids instead of names
(own purse, pack and commissions; the room, its exits, floor, cogs present and keeper table;
offers made to the seat; its standing), plus two things the seat knows about itself that the
JSON frame does not spell out: the room it last walked out of (``prev_room``; the seat made that
move) and whether the town allows robbery (``thievery``; a published rule of the game, RULES
§6.8). It is built straight from the state, without copying, so that a decision stays cheap.

:class:`BaselineView` is the **scripted-baseline view**: the only place in ``agents`` that reads
state a seat cannot see. The original baselines (RULES §21) read the full simulation, and two of
their rules depend on hidden facts; reproducing them byte for byte needs these reads, so they
are confined here and used by ``Factor`` and ``Magpie`` only:

* ``stock(keeper, good)``: any shop's stock. Factor walks toward the nearest shop that trades a
  needed good **with stock > 0** (RULES §21 factor rule 4); other shops' stock is hidden (§17).
* ``carries(other)``: whether another seat holds any goods. Magpie robs the first other seat
  here that carries something (RULES §21 magpie rule 1); other packs are hidden (§17).
"""

from __future__ import annotations

from typing import Any, SupportsIndex

from mypy_extensions import mypyc_attr

from sim import Game
from sim.game import seat_index
from sim.rules.world import SEATS, World

# SeatView's fields, in the order _rebuild takes them.
_FIELDS = ("world", "seat", "turn", "room", "coin", "items", "free", "keeper", "stock", "_state")


@mypyc_attr(allow_interpreted_subclasses=True)  # compiled at install (agents.baselines.native)
class SeatView:
    """One seat's view of the start-of-turn state (RULES §17), read-only and id-based.

    Lists are the game's own lists (not copies): read them, never mutate them. Every fact is
    an attribute; those a decision reads rarely (``turns``, ``prev_room``, ``floor``, ``dark``,
    ``shop_coin``, ``employer``, ``thievery``, ``aliases``) and ``quests``, ``cogs`` and
    ``offers`` (new lists) are read from the state at each read (a scripted decision builds a
    view and reads a few facts, thousands of times a second), so read them while deciding,
    before the turn is played.

    Compiled at install (``agents.baselines.native``), it may still be subclassed: a subclass may
    add methods, properties and attributes, but should not redefine one of the fields above as a
    property, since this class's own properties read its fields directly.
    """

    __slots__ = _FIELDS

    def __init__(self, game: Game, seat: SupportsIndex) -> None:
        seat = seat if type(seat) is int and 0 <= seat < SEATS else seat_index(seat)
        st = game.state
        self._state = st
        w = st.world
        here = st.room[seat]
        self.world: World = w
        self.seat = seat
        self.turn = st.turn
        self.room = here
        self.coin = st.coin[seat]
        self.items = st.items[seat]      # own pack, by good id
        self.free = st.free(seat)
        self.keeper = npc = w.keeper_in_room[here]   # keeper standing here, -1 if none
        self.stock = st.stock[npc] if npc >= 0 else None   # its stock (shown in its table)

    def __reduce__(self) -> tuple[Any, ...]:
        """Copies and pickles keep every field, and a subclass's own attributes (the compiled
        class's default copy would drop those)."""
        return (_rebuild, (type(self), tuple(getattr(self, f) for f in _FIELDS),
                           getattr(self, "__dict__", None)))

    @property
    def turns(self) -> int:
        """The episode's length in turns."""
        return self._state.turns

    @property
    def prev_room(self) -> int:
        """Own history: the room it last walked out of (-1 before its first move)."""
        return self._state.prev_room[self.seat]

    @property
    def floor(self) -> list[int]:
        """Goods on the floor here, by good id."""
        return self._state.floor[self.room]

    @property
    def dark(self) -> bool:
        """Whether this room is dark."""
        return self.world.rooms[self.room].dark

    @property
    def shop_coin(self) -> int:
        """The coin of the keeper here (shown in its table); 0 if none."""
        npc = self.keeper
        return self._state.shop_coin[npc] if npc >= 0 else 0

    @property
    def employer(self) -> int:
        """The seat this one is retained by, -1 if none."""
        st, seat = self._state, self.seat
        return st.retainer_of[seat] if st.retainer_turns[seat] > 0 else -1

    @property
    def thievery(self) -> bool:
        """Whether the town allows robbery (RULES §6.8)."""
        return self._state.thievery

    @property
    def aliases(self) -> list[str]:
        """Every seat's alias, by seat."""
        return self._state.aliases

    @property
    def quests(self) -> list[tuple[int, int]]:
        """Own commissions: (good, units still to deliver), in order."""
        st, seat = self._state, self.seat
        goods, counts, delivered = st.quest_item[seat], st.quest_count[seat], st.delivered[seat]
        # an index loop, not zip and map: compiled (agents.baselines.native), it is far less work
        return [(goods[i], counts[i] - delivered[i]) for i in range(len(goods))]

    @property
    def cogs(self) -> list[int]:
        """The other seats in this room, in seat order."""
        here, seat, rooms = self.room, self.seat, self._state.room
        if rooms.count(here) < 2:  # alone here, as seats mostly are: no scan in Python
            return []
        return [s for s, r in enumerate(rooms) if r == here and s != seat]

    @property
    def offers(self) -> list:
        """Offers made to this seat last turn, open now (oldest first; RULES §9.8)."""
        st, seat, turn = self._state, self.seat, self.turn
        return [o for o in st.offers if o.to == seat and o.posted_turn == turn - 1
                ] if st.offers else []


@mypyc_attr(allow_interpreted_subclasses=True)
class BaselineView(SeatView):
    """The scripted-baseline view: a :class:`SeatView` plus the two hidden reads of RULES §21.

    Used only by :class:`agents.Factor` and :class:`agents.Magpie`, which must write exactly the
    original's sentences, and the original decides from the full state. Learned or third-party
    policies should use :class:`SeatView` or ``game.observe(seat)`` instead.
    """

    __slots__ = ()

    def stock_of(self, keeper: int, good: int) -> int:
        """HIDDEN STATE: ``keeper``'s stock of ``good`` wherever it stands (factor rule 4)."""
        return self._state.stock[keeper][good]

    def carries(self, other: int) -> bool:
        """HIDDEN STATE: whether seat ``other`` holds at least one good (magpie rule 1)."""
        return self._state.carried(other) > 0


def _rebuild(cls: type[SeatView], fields: tuple[Any, ...],
             extra: dict[str, Any] | None) -> SeatView:
    """A copy of a view (``SeatView.__reduce__``)."""
    view = cls.__new__(cls)
    for name, value in zip(_FIELDS, fields):
        setattr(view, name, value)
    if extra:
        view.__dict__.update(extra)
    return view
