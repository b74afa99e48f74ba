"""The ``rgb_array`` picture of one seat's view (Gymnasium's ``render_mode="rgb_array"``, what
``RecordVideo`` and Stable-Baselines3's ``make_vec_env`` ask for), drawn with numpy alone.

It shows what the seat is shown and nothing else (RULES §17): the town's map (public: every
room at its ``x``/``y``, its roads, dark rooms darker, a mark where a keeper stands), the seat's
own room outlined with the seats and the goods lying there, and a strip below with the turn, the
seat's purse, its two commissions (a box per unit, filled once delivered) and its pack.  It is
drawn from ``Game.observe(seat)`` and the town, so it cannot carry more than that view.  The
``ansi`` mode gives the same view as text.
"""

from __future__ import annotations

import numpy as np

from ..rules.world import World

WIDTH = 320
MAP = 320  # the map's square; the strip lies below it
STRIP = 64
HEIGHT = MAP + STRIP
MARGIN = 24
HALF = 11  # half a room's side
PURSE_FULL = 100  # coin at which the purse's bar is full

BACKGROUND = (24, 24, 32)
ROAD = (96, 96, 108)
LIT = (196, 186, 156)
DARK = (70, 70, 96)
KEEPER = (150, 96, 48)
HERE = (250, 210, 60)
SELF = (255, 255, 255)
OTHER = (220, 60, 60)
EMPTY = (60, 60, 70)
TURNS = (140, 140, 150)
PURSE = (230, 190, 40)
# one colour per good, by id (a town of more goods reuses them)
GOODS = ((150, 100, 60), (170, 170, 180), (200, 160, 90), (235, 235, 235), (250, 140, 40),
         (120, 200, 220), (120, 200, 110), (200, 110, 200))


def _centre(world: World, room: int) -> tuple[int, int]:
    r = world.rooms[room]
    span = MAP - 2 * MARGIN
    return MARGIN + round(r.y * span / 100), MARGIN + round(r.x * span / 100)


def _box(img: np.ndarray, top: int, left: int, h: int, w: int, colour) -> None:
    img[max(top, 0):max(top + h, 0), max(left, 0):max(left + w, 0)] = colour


def _outline(img: np.ndarray, top: int, left: int, h: int, w: int, colour, t: int = 2) -> None:
    _box(img, top, left, t, w, colour)
    _box(img, top + h - t, left, t, w, colour)
    _box(img, top, left, h, t, colour)
    _box(img, top, left + w - t, h, t, colour)


def _road(img: np.ndarray, a: tuple[int, int], b: tuple[int, int]) -> None:
    n = max(abs(b[0] - a[0]), abs(b[1] - a[1])) + 1
    rows = np.linspace(a[0], b[0], n).round().astype(int)
    cols = np.linspace(a[1], b[1], n).round().astype(int)
    for dr in (0, 1):
        img[np.clip(rows + dr, 0, HEIGHT - 1), np.clip(cols, 0, WIDTH - 1)] = ROAD


def _goods(img: np.ndarray, top: int, left: int, units: list[int], limit: int) -> None:
    """A 6-pixel square per unit (``units``: good ids), in a row of at most ``limit``."""
    for i, good in enumerate(units[:limit]):
        _box(img, top, left + 8 * i, 6, 6, GOODS[good % len(GOODS)])


def seat_picture(world: World, view: dict) -> np.ndarray:
    """The picture (``[HEIGHT, WIDTH, 3]`` uint8) of ``view``, a seat's ``Game.observe`` dict
    in ``world``."""
    img = np.empty((HEIGHT, WIDTH, 3), np.uint8)
    img[:] = BACKGROUND
    good = {g.name: i for i, g in enumerate(world.goods)}
    for a, room in enumerate(world.rooms):
        for b in room.exits:
            if a < b:
                _road(img, _centre(world, a), _centre(world, b))
    keeper_rooms = {k.room for k in world.keepers}
    here = view["room"]["id"]
    for i, room in enumerate(world.rooms):
        y, x = _centre(world, i)
        _box(img, y - HALF, x - HALF, 2 * HALF, 2 * HALF, DARK if room.dark else LIT)
        if i in keeper_rooms:
            _box(img, y - HALF + 2, x + HALF - 7, 5, 5, KEEPER)
    y, x = _centre(world, here)
    _outline(img, y - HALF - 3, x - HALF - 3, 2 * HALF + 6, 2 * HALF + 6, HERE)
    _box(img, y - HALF + 2, x - HALF + 2, 4, 4, SELF)
    for i, _ in enumerate(view["room"]["cogs"][:5]):  # the other seats here: 3, then 2 below
        row, col = divmod(i + 1, 4)
        _box(img, y - HALF + 2 + 5 * row, x - HALF + 2 + 5 * col, 4, 4, OTHER)
    lying = [good[e["item"]] for e in view["room"]["ground"] for _ in range(min(e["count"], 3))]
    for i, g in enumerate(lying[:6]):
        _box(img, y + 2 + 5 * (i // 3), x - HALF + 2 + 6 * (i % 3), 4, 4,
              GOODS[g % len(GOODS)])
    _strip(img, world, view, good)
    return img


def _strip(img: np.ndarray, world: World, view: dict, good: dict[str, int]) -> None:
    top, bar = MAP + 6, WIDTH - 2 * MARGIN
    turns = max(view["turns"], 1)
    _box(img, top, MARGIN, 4, bar, EMPTY)
    _box(img, top, MARGIN, 4, round(bar * min(view["turnsPlayed"], turns) / turns), TURNS)
    _box(img, top + 8, MARGIN, 6, bar, EMPTY)
    _box(img, top + 8, MARGIN, 6, round(bar * min(view["coin"], PURSE_FULL) / PURSE_FULL),
         PURSE)
    for q, c in enumerate(view["quests"][:2]):
        colour = GOODS[good[c["item"]] % len(GOODS)]
        left = MARGIN + q * (bar // 2)
        for unit in range(min(c["count"], 12)):
            if unit < c["delivered"]:
                _box(img, top + 20, left + 10 * unit, 8, 8, colour)
            else:
                _outline(img, top + 20, left + 10 * unit, 8, 8, colour, 1)
    pack = [good[e["item"]] for e in view["items"] for _ in range(e["count"])]
    _goods(img, top + 34, MARGIN, pack, bar // 8)
