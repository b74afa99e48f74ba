"""Nim's ``std/random`` (xoroshiro128+), reproduced bit for bit (RULES §3).

Every random draw of the game happens at setup; using the same generator as the original is
what makes the same seed give the same town.
"""

from __future__ import annotations

import functools

MASK64 = (1 << 64) - 1
_JUMP = (0xBEAC0467EBA5FACB, 0xD86B048B86AA9922)


def jump(a0: int, a1: int) -> tuple[int, int]:
    """Nim's skipRandomNumbers on the state ``(a0, a1)``, step by step with ``next`` inlined:
    the reference definition (``NimRand`` uses the same map through ``_jump_images``)."""
    s0 = s1 = 0
    m = MASK64
    for h in _JUMP:
        for b in range(64):
            if (h >> b) & 1:
                s0 ^= a0
                s1 ^= a1
            t = a1 ^ a0
            a0 = (((a0 << 55) | (a0 >> 9)) & m) ^ t ^ ((t << 14) & m)
            a1 = ((t << 36) | (t >> 28)) & m
    return s0, s1


@functools.cache
def _jump_images() -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """``jump`` of every one-bit state, for ``a0`` then ``a1``: every step of ``jump`` is XORs,
    shifts and rotations, so the jump of a state is the XOR of the jumps of its set bits (two
    jumps per episode drop from 128 steps each to a few XORs)."""
    return (tuple(jump(1 << b, 0) for b in range(64)),
            tuple(jump(0, 1 << b) for b in range(64)))


class NimRand:
    """A xoroshiro128+ state with Nim's seeding, ``rand(n)`` and ``shuffle``.

    >>> NimRand(2019).next()
    13223559681708962501
    >>> NimRand(123).rand(100)
    96
    """

    __slots__ = ("a0", "a1")

    def __init__(self, seed: int) -> None:
        if seed == 0:
            seed = 2147483647
        # Arithmetic shift of the signed value, then reinterpretation as unsigned 64 bit.
        self.a0 = (seed >> 16) & MASK64
        self.a1 = (seed & 0xFFFF) & MASK64
        self._jump()
        self.next()

    def next(self) -> int:
        s0, s1 = self.a0, self.a1
        m = MASK64
        result = (s0 + s1) & m
        s1 ^= s0
        # a0 = rotl(s0, 55) ^ s1 ^ (s1 << 14); a1 = rotl(s1, 36), rotations inlined (hot)
        self.a0 = (((s0 << 55) | (s0 >> 9)) & m) ^ s1 ^ ((s1 << 14) & m)
        self.a1 = ((s1 << 36) | (s1 >> 28)) & m
        return result

    def _jump(self) -> None:
        """Nim's skipRandomNumbers: 128 steps, replaced by the XOR of precomputed images (it
        is linear over GF(2): see ``jump``)."""
        a0, a1 = self.a0, self.a1
        s0 = s1 = 0
        images0, images1 = _jump_images()
        for bits, images in ((a0, images0), (a1, images1)):
            while bits:
                low = bits & -bits
                j0, j1 = images[low.bit_length() - 1]
                s0 ^= j0
                s1 ^= j1
                bits ^= low
        self.a0, self.a1 = s0, s1

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
