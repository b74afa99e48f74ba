"""``python -m league ...`` is the ``guild`` command (for checkouts without the script)."""

import sys

from .cli import main

sys.exit(main())
