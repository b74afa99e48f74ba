"""``python agents/llm/local_serve.py ARGS``: llama-cpp-python's server, tied to its parent.

``llm:local`` (``agents.llm.local``) starts the server through this module rather than
``python -m llama_cpp.server`` so that the server never outlives the league process that
started it, however that process ends (even ``SIGKILL``): the parent holds the write end of
the server's stdin, and a thread here exits the server when it reads end-of-file. ARGS are
``llama_cpp.server``'s own.
"""

from __future__ import annotations

import os
import sys
import threading


def _exit_with_parent() -> None:
    """Exit as soon as stdin reaches end-of-file (the parent closed it, or died).

    File descriptor 0 is read directly, not through ``sys.stdin``: a thread blocked in
    ``sys.stdin.buffer.read`` holds that stream's lock, and when the server fails to load its
    model the interpreter, shutting down, aborts on it (SIGABRT) instead of ending with the
    error, the line ``agents.llm.local`` reports."""
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        return  # no stdin to watch (started without one): nothing ties the server to a parent
    os._exit(0)


def main(argv: list[str]) -> None:
    """Run ``llama_cpp.server`` with ``argv`` until the parent goes."""
    threading.Thread(target=_exit_with_parent, daemon=True).start()
    from llama_cpp.server.__main__ import main as serve

    sys.argv = ["llama_cpp.server", *argv]
    serve()


if __name__ == "__main__":
    main(sys.argv[1:])
