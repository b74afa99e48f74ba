"""Nim's ``std/random`` (xoroshiro128+), reproduced bit for bit (RULES §3).

Every random draw of the game happens at setup; using the same generator as the original is
what makes the same seed give the same town.
"""

from __future__ import annotations

import functools

MASK64 = (1 << 64) - 1
MASK32 = (1 << 32) - 1
_JUMP = (0xBEAC0467EBA5FACB, 0xD86B048B86AA9922)


def step(a0: int, a1: int) -> tuple[int, int, int]:
    """One xoroshiro128+ step on the 64-bit state ``(a0, a1)``: ``(result, a0', a1')``."""
    m = MASK64
    result = (a0 + a1) & m
    a1 ^= a0
    return (result, (((a0 << 55) | (a0 >> 9)) & m) ^ a1 ^ ((a1 << 14) & m),
            ((a1 << 36) | (a1 >> 28)) & m)


def jump(a0: int, a1: int) -> tuple[int, int]:
    """Nim's skipRandomNumbers on the state ``(a0, a1)``, step by step: the reference
    definition (``skip`` gives the same map through ``_jump_images``)."""
    s0 = s1 = 0
    for h in _JUMP:
        for b in range(64):
            if (h >> b) & 1:
                s0 ^= a0
                s1 ^= a1
            _, a0, a1 = step(a0, a1)
    return s0, s1


@functools.cache
def _jump_images() -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """``jump`` of every one-bit state, for ``a0`` then ``a1``: every step of ``jump`` is XORs,
    shifts and rotations, so the jump of a state is the XOR of the jumps of its set bits (two
    jumps per episode drop from 128 steps each to a few XORs)."""
    return (tuple(jump(1 << b, 0) for b in range(64)),
            tuple(jump(0, 1 << b) for b in range(64)))


def skip(state: tuple[int, int]) -> tuple[int, int]:
    """Nim's skipRandomNumbers (``jump``): 128 steps, replaced by the XOR of precomputed images
    (the map is linear over GF(2))."""
    s0 = s1 = 0
    images0, images1 = _jump_images()
    for bits, images in ((state[0], images0), (state[1], images1)):
        while bits:
            low = bits & -bits
            j0, j1 = images[low.bit_length() - 1]
            s0 ^= j0
            s1 ^= j1
            bits ^= low
    return s0, s1


class NimRand:
    """A xoroshiro128+ state with Nim's seeding, ``rand(n)`` and ``shuffle``.

    The state's two 64-bit words ``a0`` and ``a1`` are held as 32-bit halves, so that ``next``
    works on small integers (compiled by mypyc, those are machine words; 64-bit values would
    be heap integers, many times the work). ``step`` is the same map on whole words,
    the reference the tests hold ``next`` to.

    >>> NimRand(2019).next()
    13223559681708962501
    >>> NimRand(123).rand(100)
    96
    """

    __slots__ = ("h0", "l0", "h1", "l1")  # a0 = h0 << 32 | l0, a1 = h1 << 32 | l1

    def __init__(self, seed: int) -> None:
        if seed == 0:
            seed = 2147483647
        # Arithmetic shift of the signed value, then reinterpretation as unsigned 64 bit.
        a0, a1 = skip(((seed >> 16) & MASK64, (seed & 0xFFFF) & MASK64))
        self.h0, self.l0 = a0 >> 32, a0 & MASK32
        self.h1, self.l1 = a1 >> 32, a1 & MASK32
        self.next()

    @property
    def a0(self) -> int:
        return (self.h0 << 32) | self.l0

    @property
    def a1(self) -> int:
        return (self.h1 << 32) | self.l1

    def next(self) -> int:
        """``step`` on the halves: the 64-bit sum, then the new state."""
        h0, l0, h1, l1 = self.h0, self.l0, self.h1, self.l1
        m = MASK32
        low = l0 + l1
        result = (((h0 + h1 + (low >> 32)) & m) << 32) | (low & m)
        h1 ^= h0  # s1 ^= s0
        l1 ^= l0
        # a0 = rotl(s0, 55) ^ s1 ^ (s1 << 14); rotl by 55 is rotr by 9
        self.h0 = (((h0 >> 9) | (l0 << 23)) & m) ^ h1 ^ (((h1 << 14) | (l1 >> 18)) & m)
        self.l0 = (((l0 >> 9) | (h0 << 23)) & m) ^ l1 ^ ((l1 << 14) & m)
        # a1 = rotl(s1, 36): the halves swap places (32), then turn by 4
        self.h1 = ((l1 << 4) | (h1 >> 28)) & m
        self.l1 = ((h1 << 4) | (l1 >> 28)) & m
        return result

    def rand(self, n: int) -> int:
        """Uniform integer in 0..n inclusive; ``rand(0)`` consumes nothing."""
        if n == 0:
            return 0
        # The rejection bound uses n while the result uses n + 1: that is Nim's code.
        bound = MASK64 - (MASK64 % n)
        while True:
            x = self.next()
            if x <= bound:
                return x % (n + 1)

    def shuffle(self, xs: list) -> None:
        """Fisher-Yates from the end, as Nim's ``shuffle``."""
        for i in range(len(xs) - 1, 0, -1):
            j = self.rand(i)
            xs[i], xs[j] = xs[j], xs[i]
