"""The ``guild`` command line (``main``) and its tools for people: the replay viewer
(``html_viewer``), the terminal game (``terminal``), training and evaluation (``train``,
``evaluate``), SFT export (``export_sft``) and the progress line (``progress``)."""

from league.cli.guild import main

__all__ = ["main"]
