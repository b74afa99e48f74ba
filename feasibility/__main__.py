"""``python -m feasibility``: see :mod:`feasibility.cli` (RULES §18)."""

from .cli import main

raise SystemExit(main())
