"""The rules as Python functions, for the batched engine.

numba compiles the kernels (``kernels_step``, ``kernels_observe``) together with the rules'
own functions by reading their Python code, and the engine's Python side hands rule functions
numpy values and row views that stand in for a ``GameState``.  When ``pip install`` has compiled
the rules with mypyc (``sim.native``), their functions have no Python code and take only their
declared types; so the batched engine uses copies of those rule modules, and of its kernels,
loaded from the same ``.py`` files.  Without a compiled build these are the ordinary modules.
"""

from __future__ import annotations

from .. import native

RULES = ("commissions", "observation", "prices", "resolve", "robbery", "scoring", "state", "turn")

(commissions, observation, prices, resolve, robbery, scoring, state, turn, kernels_step,
 kernels_observe) = native.source_modules(
    *(f"sim.rules.{m}" for m in RULES), "sim.batched.kernels_step", "sim.batched.kernels_observe")
