"""What the project's command lines share (``guild``, ``guild train``, ``python -m
feasibility``): a usage mistake is one line on stderr and exit status 2, not argparse's usage
block followed by the error; a reader that leaves (``| head``) is exit status 141, not a
traceback; the stop signals a long command catches."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import stat
import sys
from typing import NoReturn

from .rules.errors import printable as printable  # what the commands print a path with

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE (13): what a shell reports for a program the pipe stopped


class NotRegularFileError(OSError):
    """A path a command reads names a FIFO, a device or a folder, not a regular file."""


def read_head(path: str | os.PathLike, limit: int) -> bytes:
    """At most ``limit`` bytes from the start of the regular file ``path``, for a file a user
    names (a config, a prompt, a model's header): opened without blocking and checked once
    open, so a FIFO is refused rather than waited on and ``/dev/zero`` never read without end.
    Raises :class:`NotRegularFileError`, ``OSError`` (cannot open or read) or ``ValueError``
    (a NUL in the path); the caller words them."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFileError(f"{os.fsdecode(path)} is not a regular file")
        data = bytearray()
        while len(data) < limit and (more := os.read(fd, min(limit - len(data), 1 << 20))):
            data += more
        return bytes(data)
    finally:
        os.close(fd)


def caught_signals() -> tuple[int, ...]:
    """The stop signals a long command (``guild train``, ``guild league``) catches: SIGTERM,
    and Ctrl-C unless it is ignored, as Python leaves it when started so (a shell's background
    job): a Ctrl-C meant for the shell is not the command's."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return (signal.SIGTERM,)
    return (signal.SIGTERM, signal.SIGINT)


def broken_pipe() -> int:
    """After ``BrokenPipeError`` on standard output: :data:`EXIT_BROKEN_PIPE`, with standard
    output pointed at ``os.devnull`` so that Python's final flush does not raise again. The
    reader left; nothing failed, and nothing is printed."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


class OneLineParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose usage errors are one line (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")
