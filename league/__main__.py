"""``python -m league ...`` is the ``guild`` command (for checkouts without the script)."""

import sys

from league.cli.guild import main

sys.exit(main())
