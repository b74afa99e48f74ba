"""What the project's command lines share (``guild``, ``guild train``, ``python -m
feasibility``): a usage mistake is one line on stderr and exit status 2, not argparse's usage
block followed by the error."""

from __future__ import annotations

import argparse
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose usage errors are one line (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")
