"""Ways out of a seat's sandbox that the sandbox closes (``league.apart.sandbox``,
``league.seat.zygote``).

Two seats of one policy run in one sandbox (and a pooled process that played another seat of a
town meets the next rotation's there): they share no pseudo-terminal and no kernel keyring.  A
policy's folder never reaches the zygote that forks every seat, so a module there named like one
the zygote imports cannot turn the seats' namespaces and limits off.  A rival ``exec:``
program's files and ``sb3:`` zip are hidden like a rival module's, a league folder named
through a symbolic link is hidden like any other, and a policy reached through a link plays as
it does without a sandbox.  Each attack runs as the league runs a seat, in a real sandbox.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import py_compile
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from conftest import needs
from leagues import ROOT, TESTS

from league.apart import sandbox
from league.apart.isolated import IsolatedPolicy, close_all
from league.apart.seat_process import SeatFaultError, SeatProcess
from league.core.episode import Settings, league_policy
from league.seat import zygote
from sim import Game, GameConfig

needs(sys.platform.startswith("linux"), "Linux (the sandbox is Linux namespaces)")
needs(sandbox.problem() is None, f"a sandbox ({sandbox.problem()}; apt-get install bubblewrap)")

MEMORY_MB = 1024
WAIT_S = 60.0  # generous: the machine may be loaded


def lines(proc: SeatProcess, until: float) -> list[dict]:
    """Every JSON line a program wrote until it ended (or ``until``)."""
    out = []
    while True:
        try:
            out.append(json.loads(proc.receive(until, WAIT_S)))
        except SeatFaultError:
            return out


def program(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def seat(launch: zygote.Launch, argv: list[str]) -> SeatProcess:
    return SeatProcess.forked("test", MEMORY_MB, 60, launch=launch, argv=argv)


def exec_launch(argv: list[str]) -> tuple[zygote.Launch, list[str]]:
    files, argv = sandbox.exec_files(argv)
    return sandbox.launch(files, []), argv


def decided(policy: IsolatedPolicy) -> str:
    """The notes of one decision of ``policy`` (a seat of a real game)."""
    try:
        policy.reset(1)
        return policy.act(Game(GameConfig(seed=5, turns=6)), 0).notes
    finally:
        policy.close()


# --- seats of a policy cannot talk -------------------------------------------------------------

PTY = """\
    import json, os, select, sys, time, tty
    mode, token = sys.argv[1], sys.argv[2]
    m, s = os.openpty()
    tty.setraw(s)
    mine = os.ttyname(s)
    if mode == "write":
        os.write(m, f"SECRET-{token}\\n".encode())
        print(json.dumps({"pty": mine}), flush=True)
        sys.stdin.readline()  # held open until the test is done
        raise SystemExit
    read = {}
    for name in sorted(os.listdir("/dev/pts")):
        path = "/dev/pts/" + name
        if path == mine or not name.isdigit():
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
            select.select([fd], [], [], 2.0)
            read[path] = os.read(fd, 200).decode(errors="replace")
        except OSError as e:
            read[path] = type(e).__name__
    print(json.dumps({"pty": mine, "pts": sorted(os.listdir("/dev/pts")), "read": read}),
          flush=True)
"""


def write_then_read(launch, argv: list[str], token: str) -> tuple[dict, list[dict]]:
    """A seat that writes ``token`` where it can (its first answer), then, while it lives,
    another seat of the same sandbox that looks for it (its answers)."""
    writer = seat(launch, [*argv, "write", token])
    try:
        wrote = json.loads(writer.receive(time.monotonic() + WAIT_S, WAIT_S))
        reader = seat(launch, [*argv, "read", token])
        try:
            return wrote, lines(reader, time.monotonic() + WAIT_S)
        finally:
            reader.kill()
    finally:
        writer.kill()


def test_seats_of_one_sandbox_share_no_pseudo_terminal(tmp_path: Path) -> None:
    """One seat opens a pseudo-terminal and writes what it knows there; another seat of the
    same sandbox, started meanwhile, finds no terminal of it to read (each has a devpts of its
    own), though it has pseudo-terminals of its own."""
    token = uuid.uuid4().hex
    launch, argv = exec_launch([sys.executable, str(program(tmp_path, "pty.py", PTY))])
    wrote, got = write_then_read(launch, argv, token)
    assert wrote["pty"].startswith("/dev/pts/")
    assert len(got) == 1, got
    assert got[0]["pty"] == "/dev/pts/0" and got[0]["pts"] == ["0", "ptmx"], got
    assert got[0]["read"] == {} and token not in json.dumps(got), got


KEYS = """\
    import ctypes, json, mmap, platform, sys
    libc = ctypes.CDLL(None, use_errno=True)
    ADD_KEY, KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}[platform.machine()]
    mode, token = sys.argv[1], sys.argv[2]
    if mode == "write":
        kid = libc.syscall(ADD_KEY, b"user", f"collude-{token}".encode(), b"payload", 7,
                           ctypes.c_long(-4))  # the user keyring
        err = ctypes.get_errno()
        libc.syscall(KEYCTL, 5, ctypes.c_long(kid), ctypes.c_ulong(0x3F3F3F3F))  # all for all
        print(json.dumps({"added": kid, "errno": err, "i386": i386()}), flush=True)
        sys.stdin.readline()
        raise SystemExit
    with open("/proc/keys") as f:
        print(json.dumps({"keys": f.read()}), flush=True)
"""
I386 = """\
    def i386():
        \"\"\"keyctl(KEYCTL_GET_KEYRING_ID, user keyring, create) as a 32-bit program calls it
        (int 0x80): its own call number, which a filter of the 64-bit ones would let by.\"\"\"
        if platform.machine() != "x86_64":
            return None
        word = lambda n: n.to_bytes(4, "little")  # noqa: E731
        code = (b"\\xb8" + word(288) + b"\\xbb" + word(0) + b"\\xb9" + word(2**32 - 4)
                + b"\\xba" + word(1) + b"\\x53\\x5b\\xcd\\x80\\xc3")  # mov eax, ebx, ecx,
                # edx; push, pop; int 0x80; ret
        m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        m.write(code)
        f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
        return f()
"""


def test_seats_of_one_sandbox_share_no_kernel_keyring(tmp_path: Path) -> None:
    """A seat cannot add a key (in 64-bit or 32-bit calls) that another seat of its uid would
    list in ``/proc/keys`` and read."""
    needs(platform.machine() in ("x86_64", "aarch64"), "an x86_64 or aarch64 machine")
    token = uuid.uuid4().hex
    text = textwrap.dedent(KEYS).replace("if mode ==", textwrap.dedent(I386) + "if mode ==", 1)
    path = tmp_path / "keys.py"
    path.write_text(text, encoding="utf-8")
    launch, argv = exec_launch([sys.executable, str(path)])
    added, got = write_then_read(launch, argv, token)
    assert added["added"] == -1 and added["errno"] == 1, added  # EPERM
    assert added["i386"] is None or added["i386"] < 0, added  # -EPERM (-ENOSYS without ia32)
    assert len(got) == 1 and token not in got[0]["keys"], got


def run_filter(program: list[tuple[int, int, int, int]], arch: int, nr: int) -> int:
    """What a classic BPF seccomp program returns for a call (only what it uses: loads of
    the arch and number, AND, JEQ, RET)."""
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == 0x20:
            acc = {0: nr, 4: arch}[k]
        elif code == 0x54:
            acc &= k
        elif code == 0x15:
            pc += jt if acc == k else jf
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")
        pc += 1


def test_the_keyring_filter_refuses_the_key_calls_of_every_architecture_and_nothing_else(
        ) -> None:
    """The filter as the kernel runs it, for each architecture a seat's program may call in
    (a 32-bit one on a 64-bit machine numbers its calls otherwise; x32 sets a bit)."""
    program = zygote._keyring_filter()
    denied = zygote.SECCOMP_ERRNO | 1  # EPERM
    for arch, numbers in zygote.KEYRING_CALLS.items():
        for nr in numbers:
            assert run_filter(program, arch, nr) == denied, (hex(arch), nr)
            assert run_filter(program, arch, nr | zygote.X32_BIT) == denied
        others = {0, 1, 39, 57, 59, 231, *range(200, 320)} - set(numbers)
        for nr in others:
            assert run_filter(program, arch, nr) == zygote.SECCOMP_ALLOW, (hex(arch), nr)
    assert run_filter(program, 0x12345678, 250) == zygote.SECCOMP_ALLOW  # not one of them


# --- the zygote runs no code of a policy's folder ---------------------------------------------

SHADOW = """\
    # in the policy's folder, named like modules the seat zygote imports: in the zygote, it
    # turns every seat's namespaces and limits off
    import importlib.util, os, sys, sysconfig
    std = os.path.join(sysconfig.get_paths()["stdlib"], __name__ + ".py")
    if os.path.exists(std):  # be the real module too, so that nothing breaks
        real = importlib.util.spec_from_file_location("_real_" + __name__, std)
        mod = importlib.util.module_from_spec(real)
        real.loader.exec_module(mod)
        globals().update({k: v for k, v in vars(mod).items() if not k.startswith("__")})
    import resource
    for where in (sys.modules.get("__main__"), sys.modules.get("league.seat.zygote")):
        if where is not None and hasattr(where, "_own_namespaces"):
            where._own_namespaces = lambda *a, **k: None
            where._pid1 = lambda alive: None
    resource.setrlimit = lambda *a, **k: None
    RAN_IN = os.getpid()
"""
PROBE = """\
    import json, os, resource, sys, sysconfig
    from agents.policy import Decision

    class Bot:
        def act(self, game, seat):
            found = {name: getattr(sys.modules.get(name), "__file__", None)
                     for name in ("difflib", "sitecustomize")}
            here = os.path.dirname(os.path.abspath(__file__))
            std = max(i for i, p in enumerate(sys.path)
                      if p.startswith(sysconfig.get_path("stdlib")))
            return Decision(game.admissible[0], notes=json.dumps({
                "pid": os.getpid(), "as": resource.getrlimit(resource.RLIMIT_AS)[0],
                "found": found, "after_std": sys.path.index(here) > std}))
"""


def test_a_policys_folder_never_reaches_the_seat_zygote(tmp_path: Path) -> None:
    """A policy whose folder holds ``difflib.py`` (which the zygote imports) and
    ``sitecustomize.py`` (which an interpreter imports at its start) next to its module: its
    seat is still pid 1 of its own namespace, under its address-space limit, with the
    standard library's ``difflib``, and its folder comes after the standard library."""
    folder = tmp_path / "pol"
    for name in ("difflib.py", "sitecustomize.py"):
        program(folder, name, SHADOW)
    program(folder, "probe.py", PROBE)
    launch = sandbox.launch([folder], [str(folder)])
    policy = IsolatedPolicy(["unused"], name="probe:Bot", timeout=WAIT_S, memory_mb=MEMORY_MB,
                            hosted="probe:Bot", launch=launch)
    got = json.loads(decided(policy))
    assert got["pid"] == 1 and got["as"] == MEMORY_MB << 20, got
    assert not str(got["found"]["difflib"]).startswith(str(folder)), got
    assert got["found"]["sitecustomize"] is None or not str(
        got["found"]["sitecustomize"]).startswith(str(folder)), got
    assert got["after_std"], got


def test_a_module_named_like_a_standard_one_is_refused_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its seat would import the standard module (the zygote has it already): the league
    refuses the policy, naming why, instead of a seat that cannot build it."""
    program(tmp_path, "difflib.py", "class Bot:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=r"^policy 'difflib:Bot': its module 'difflib' is named "
                                         r"like a module of Python's standard library"):
        league_policy("difflib:Bot", Settings(policies=("difflib:Bot", "factor")))


@pytest.mark.parametrize(("spec", "why"), [
    ("test:Bot", "a module of Python's standard library"),  # installed, not a stdlib name
    ("sim:Bot", "one of the league's own packages"),
    ("agents.mine:Bot", "one of the league's own packages"),
])
def test_a_module_named_like_an_installed_standard_one_or_ours_is_refused(
        spec: str, why: str) -> None:
    """The seat would import the interpreter's ``test`` package or our own ``sim``: refused
    in one line, rather than failing later with "module 'test' has no 'Bot'"."""
    refused = sandbox.shadowed(spec)
    assert refused is not None and "\n" not in refused and why in refused, refused


def test_a_policy_of_our_own_packages_is_not_refused() -> None:
    """``agents.baselines:Magpie`` is ours: its seat imports it as the league does."""
    assert sandbox.shadowed("agents.baselines:Magpie") is None
    assert sandbox.shadowed("agents.baselines.scripted:Factor") is None


@pytest.mark.parametrize("spec", ["nt:Bot", "winreg:Bot"])
def test_a_module_named_like_another_systems_standard_one_is_not_refused(spec: str) -> None:
    """``nt`` and ``winreg`` are Windows' own: on Linux nothing shadows a policy so named."""
    assert sandbox.shadowed(spec) is None


CACHED = """\
    from agents.policy import Decision

    class Bot:
        def act(self, game, seat):
            return Decision(game.admissible[0], notes=%r)
"""


def test_a_packages_cached_bytecode_is_never_run(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A package whose ``__pycache__`` holds bytecode of other code (unchecked: Python would
    not compare it with its source), which ``league.json``'s digest leaves out: its seat runs
    the source."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    program(tmp_path / "cpkg", "__init__.py", "")
    bot = program(tmp_path / "cpkg", "bot.py", CACHED % "source")
    other = program(tmp_path, "other.py", CACHED % "cached")
    py_compile.compile(str(other), cfile=importlib.util.cache_from_source(str(bot)),
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    spec = "cpkg.bot:Bot"
    assert decided(league_policy(spec, Settings(policies=(spec, "factor")))) == "source"


# --- what a seat sees of its rivals and the league ---------------------------------------------

LISTER = """\
    import json, os, sys
    from agents.policy import Decision

    def seen(root, names=()):
        # the start of each file under root (or of those named), or why it cannot be read
        if not names:
            names = [os.path.relpath(os.path.join(folder, name), root)
                     for folder, _, found in os.walk(root) for name in found]
        out = {}
        for name in names:
            try:
                with open(os.path.join(root, name), errors="replace") as f:
                    out[name] = f.read(16)
            except OSError as e:
                out[name] = type(e).__name__
        return out

    class Bot:  # a module policy: what its top package holds
        def act(self, game, seat):
            root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            return Decision(game.admissible[0], notes=json.dumps(seen(root)))

    if __name__ == "__main__":  # an exec: program: what its first argument holds
        for line in sys.stdin:
            request = json.loads(line)
            if request["type"] == "act":
                notes = json.dumps(seen(sys.argv[1], sys.argv[2:]))
                print(json.dumps({"action": request["legal"][0], "notes": notes}), flush=True)
            else:
                print("{}", flush=True)
"""


def test_a_rival_exec_programs_files_and_sb3_zip_are_hidden_in_a_shared_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Alice's module, Bob's ``exec:`` program (with the strategy file its command line names)
    and Carol's ``sb3:`` zip in one ``subs`` package: Alice's seat, which sees the package
    whole, reads nothing of Bob's or Carol's."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    subs = tmp_path / "subs"
    for init in ("__init__.py", "alice/__init__.py"):
        program(subs, init, "")
    program(subs / "alice", "bot.py", LISTER)
    program(subs / "bob", "bot.py", "BOB-CODE\n")
    program(subs / "bob", "strategy.txt", "BOB-STRATEGY\n")
    program(subs / "carol", "model.zip", "CAROL-WEIGHTS\n")
    bob = "exec:python3 subs/bob/bot.py subs/bob/strategy.txt"
    policies = ("subs.alice.bot:Bot", bob, "sb3:subs/carol/model.zip")
    assert sandbox.own_files(bob) == [subs / "bob" / "bot.py", subs / "bob" / "strategy.txt"]
    policy = league_policy("subs.alice.bot:Bot", Settings(policies=policies))
    got = json.loads(decided(policy))
    assert got["alice/bot.py"] == "import json, os,", got  # it looked: its own is there
    assert not any("BOB" in text or "CAROL" in text for text in got.values()), got


def test_an_exec_programs_folder_hides_the_rivals_in_it(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """An ``exec:`` program whose command line names our repository (which holds our
    packages, so it is no policy's own): the sandbox shows it that folder, but not the files
    of a rival module policy that lies in it."""
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.chdir(tmp_path)  # the names it reads, relative to ROOT, are no paths here
    rival = "sandbox_cheats:ReadsLeague"
    lister = program(tmp_path, "lister.py", LISTER)
    spec = f"exec:{sys.executable} {lister} {ROOT} sim/__init__.py tests/sandbox_cheats.py"
    policy = league_policy(spec, Settings(policies=(spec, rival)))
    got = json.loads(decided(policy))
    assert got["sim/__init__.py"] == (ROOT / "sim" / "__init__.py").read_text()[:16], got
    assert got["tests/sandbox_cheats.py"] in ("", "PermissionError"), got


def test_a_folder_an_exec_program_names_hides_the_rivals_in_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ``exec:`` program given a folder of its entrant's (``subs/``) that also holds a
    rival module policy's package and a rival ``sb3:`` zip: it reads its own files there,
    nothing of the rivals'."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    subs = tmp_path / "subs"
    program(subs / "alice", "lister.py", LISTER)
    for init in ("__init__.py", "bob/__init__.py"):
        program(subs, init, "")
    program(subs / "bob", "bot.py", "BOB-CODE\n")
    program(subs / "carol", "model.zip", "CAROL-WEIGHTS\n")
    spec = f"exec:{sys.executable} {subs / 'alice' / 'lister.py'} {subs}"
    policies = (spec, "subs.bob.bot:Bot", "sb3:subs/carol/model.zip")
    got = json.loads(decided(league_policy(spec, Settings(policies=policies))))
    assert got["alice/lister.py"] == "import json, os,", got  # it looked: its own is there
    assert not any("BOB" in text or "CAROL" in text for text in got.values()), got


def test_a_league_folder_named_through_a_link_is_hidden(tmp_path: Path) -> None:
    """``--out`` given through a symbolic link into the folder an ``exec:`` program is given:
    the program finds nothing of the league's results (the league hides the folder by its
    real path, as it binds every folder)."""
    real = tmp_path / "S"
    lister = program(real, "lister.py", LISTER)
    program(real / "out", "results.jsonl", '{"seed": 123456789}\n')
    (tmp_path / "Slink").symlink_to(real)
    out = tmp_path / "Slink" / "out"
    spec = f"exec:{sys.executable} {lister} {real}"
    policy = league_policy(spec, Settings(policies=(spec,), hidden=(os.path.abspath(out),)))
    got = json.loads(decided(policy))
    assert "lister.py" in got and not any(k.startswith("out") for k in got), got


# --- a policy reached through a link -----------------------------------------------------------

def test_a_module_reached_through_a_link_plays_in_its_sandbox(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder on ``PYTHONPATH`` that is a link (``Plink`` to ``P``), and a module there that
    is a link to a file elsewhere: both build and play in their sandbox, as they do without
    one; so does an ``exec:`` program named through the link."""
    bot = ("from agents.policy import Decision\n"
           "class Bot:\n"
           "    def act(self, game, seat):\n"
           "        return Decision(game.admissible[0], notes=__name__)\n")
    program(tmp_path / "P", "pbot.py", bot)
    program(tmp_path / "Q", "realbot.py", bot)
    (tmp_path / "P" / "linkbot.py").symlink_to(tmp_path / "Q" / "realbot.py")
    (tmp_path / "Plink").symlink_to(tmp_path / "P")
    monkeypatch.syspath_prepend(str(tmp_path / "Plink"))
    for spec in ("pbot:Bot", "linkbot:Bot"):
        policy = league_policy(spec, Settings(policies=(spec, "factor")))
        policy.probe()  # builds in its sandbox, or says why not
        assert decided(policy) == spec.split(":")[0]
    # an exec: program named through the linked folder, given it: it runs, and reads there
    lister = program(tmp_path / "P", "lister.py", LISTER)
    spec = f"exec:{sys.executable} {tmp_path / 'Plink' / lister.name} {tmp_path / 'Plink'}"
    got = json.loads(decided(league_policy(spec, Settings(policies=(spec,)))))
    assert got["pbot.py"] == bot[:16] and got["lister.py"] == "import json, os,", got


def teardown_module() -> None:
    close_all()  # the pooled seat processes and the zygotes of these tests' sandboxes
