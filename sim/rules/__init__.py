"""The game itself (docs/rules.md): the town, the seed, the state, one module per rule.

No text parsing, no environment: the rules take structured intents and change a
:class:`~sim.rules.state.GameState`.  Each module implements the RULES sections its docstring
names; formulas that the batched engine also needs are plain functions over numbers and
sequences, so the compiled kernels of ``sim.batched`` call these same functions (numba compiles
them from these sources, ``sim.batched.source``, also where mypyc compiled the scalar ones).
"""
