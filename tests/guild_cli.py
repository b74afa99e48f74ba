"""``guild`` run in the test's own process, its exit judged as a user would see it."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

from league.cli.guild import main as guild


def run_guild(*args: str) -> tuple[int | str, str, str]:
    """``guild ARGS`` in this process: (exit code, stdout, stderr). An exception escaping
    ``main`` (a traceback, or a sys.exit from a policy's code) becomes the code ``"raised
    ..."``, which no test accepts."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code: int | str = guild(list(args))
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 - what escapes main is what the test judges
        code = f"raised {type(e).__name__}: {str(e)[:300]}"
    return code, out.getvalue(), err.getvalue()
