"""The compiled baselines: ``pip install`` compiles the scripted baselines' decisions with mypyc.

A league, the Gymnasium face's five opponents and the feasibility gate ask ``Factor`` and ``Magpie``
for a sentence 84 times an episode, so their rules (``agents.baselines.rules``) and the view they
read (``agents.baselines.view``) are compiled (README, Speed, has the figures).  The mechanism is
the rules' (``sim.native.Group``; docs/build.md): this group runs only as the build of the sources
beside it (its record, ``agents/baselines/native.json``), else from its ``.py`` files, said in one
line; ``GUILD_PURE=1`` runs both groups from source.  It calls the rules through Python imports, so
the rules may run from source while it stays compiled; but it was compiled against their types, so
an edit anywhere in ``sim`` makes it stale as well.

Standard library only at module level: ``setup.py`` reads this description by path.
"""

from __future__ import annotations

import os

COMPILED: tuple[str, ...] = ("agents.baselines.view", "agents.baselines.rules")
# its shared library: agents/baselines/native_baselines__mypyc.*.so, its record beside it
GROUP = "agents.baselines.native_baselines"
# mypyc compiled them against sim's types (a GameState field, a World field, what buy_walk
# returns): an edit anywhere in sim makes this build stale too, as an edit of their own does.
DEPENDS = ("sim",)
WHAT = "scripted baselines"  # what the one-line message calls them
active = False  # whether the compiled modules run in this process (set by choose)


def choose() -> bool:
    """Run the compiled baselines if they are the build of these sources (``agents.baselines``
    calls this before it imports them); returns (and sets) ``active``."""
    global active
    from sim.native import Group

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # ../..
    active = Group.described(globals(), root).choose()
    return active
