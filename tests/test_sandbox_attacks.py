"""One test per attack route against the sandbox: nothing may escape.

Each test asserts, as far as the route allows: the violation is reported by name, no file was
written, no connection reached the test's listener, the host's secret never appears in the
report (results, errors, stdout, stderr), and the host is fine. ``run`` applies the static
check; ``_run_unchecked`` skips it to test the run-time layers behind it (restricted
builtins and module views, the audit hook, rlimits and seccomp), using ESCAPE -- a classic
``().__class__.__base__.__subclasses__()`` walk that hands the candidate the real ``os``
module and the real builtins, as if the static check had been fooled.
"""
import os
import socket
import time

import pytest

from evaluators.sandbox import Call, Limits, Sandbox, seccomp

SECRET = "sk-secret-xyz"

ESCAPE = '''
def _os_globals():
    for c in ().__class__.__base__.__subclasses__():
        if c.__name__ == "_wrap_close":
            return c.__init__.__globals__
OS = _os_globals()
REAL = OS["__builtins__"]
IMPORT = REAL["__import__"]
'''


@pytest.fixture(scope="module")
def sb():
    old = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = SECRET  # in the host's environment when the zygote starts
    try:
        with Sandbox(Limits(timeout_s=10.0)) as sandbox:
            yield sandbox
    finally:
        if old is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = old


@pytest.fixture
def listener():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    yield srv
    srv.close()


def z(n=1, **params):
    return [Call("Z_efficient", params, n)]


def contained(rep, *violations):
    """The report leaks no secret and names every expected violation (prefix match)."""
    text = repr(rep) + repr(rep.extra)
    assert SECRET not in text
    for v in violations:
        assert any(x == v or x.startswith(v) for x in rep.violations), (v, rep.violations, rep)


def nothing_accepted(srv):
    with pytest.raises(socket.timeout):
        srv.accept()


def fn(body: str, prelude: str = "") -> str:
    """Candidate source: ``prelude`` at module level, ``body`` inside Z_efficient."""
    lines = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return f"{prelude}\ndef Z_efficient(params, n):\n{lines}\n"


def test_escape_kit_is_stopped_by_the_static_check(sb):
    rep = sb.run(ESCAPE + fn("return 1.0"), z())
    assert rep.error.startswith("forbidden construct(s)") and rep.results == ()
    contained(rep, "dunder:__class__", "dunder:__subclasses__", "dunder:__globals__")


def test_static_import_os(sb):
    rep = sb.run("import os\n" + fn("return 1.0"), z())
    assert rep.error.startswith("forbidden construct(s)") and rep.results == ()
    contained(rep, "import:os")


def test_dunder_import_static_and_at_run_time(sb):
    contained(sb.run(fn("__import__('os')\nreturn 1.0"), z()), "builtin:__import__")
    rep = sb._run_unchecked("__import__('o' + 's')\n" + fn("return 1.0"), z())
    assert rep.error.startswith("candidate module raised ImportError")
    contained(rep, "import:os")


def test_dynamic_import_through_builtins_built_from_strings(sb):
    body = '''
found = [__builtins__.get(name) for name in ("ev" + "al", "ex" + "ec", "op" + "en", "comp" + "ile")]
assert found == [None, None, None, None], found
imp = __builtins__["__im" + "port__"]
imp("o" + "s")
return 1.0'''
    rep = sb._run_unchecked(fn(body), z())
    assert rep.results[0].error.startswith("ImportError")
    contained(rep, "import:os")


def test_importlib(sb):
    contained(sb.run("import importlib\n" + fn("return 1.0"), z()), "import:importlib")
    rep = sb._run_unchecked(fn("import importlib\nreturn 1.0"), z())
    assert not rep.results[0].ok
    contained(rep, "import:importlib")


def test_eval_and_exec_of_strings(sb):
    contained(sb.run(fn("return eval('1')"), z()), "builtin:eval")
    contained(sb.run(fn("exec('x = 1')\nreturn 1.0"), z()), "builtin:exec")
    rep = sb._run_unchecked(fn("exec('import os')\nreturn eval('1.0')"), z())
    assert rep.results[0].error == "NameError: name 'exec' is not defined"


def test_dunder_chains_from_strings(sb, tmp_path):
    body = '''
import functools, operator
tries = [
    lambda: getattr((), "__cl" + "ass__"),
    lambda: operator.attrgetter("__cl" + "ass__.__base__")(()),
    lambda: operator.methodcaller("__subcl" + "asses__")(object),
    lambda: functools.reduce(getattr, ["__cl" + "ass__", "__base__"], ()),
    lambda: setattr(Z_efficient, "__co" + "de__", None),
]
escaped = 0
for t in tries:
    try:
        t()
        escaped += 1
    except PermissionError:
        pass
return float(escaped)'''
    rep = sb._run_unchecked(fn(body), z())
    assert rep.results[0].value == 0.0
    contained(rep, "dunder:__class__", "dunder:__subclasses__", "dunder:__code__")


def test_class_creation_with_raw_memory_dunders(sb):
    body = '''
import dataclasses
iface = {"shape": (8,), "typestr": "|u1", "data": (4096, False), "version": 3}
tries = [
    lambda: type(int)("X", (), {"__array_int" + "erface__": iface}),
    lambda: type("X", (), {"__array_int" + "erface__": iface}),
    lambda: dataclasses.make_dataclass("X", ["__array_int" + "erface__"]),
    lambda: dataclasses.make_dataclass("X", ["a"], namespace={"__array_int" + "erface__": iface}),
]
escaped = 0
for t in tries:
    try:
        t()
        escaped += 1
    except PermissionError:
        pass
return float(escaped)'''
    rep = sb._run_unchecked(fn(body), z())
    assert rep.results[0].value == 0.0, rep
    contained(rep, "dunder:__array_interface__")


def test_code_compiled_from_strings_is_checked_by_the_audit_hook(sb, tmp_path):
    target = tmp_path / "pwned"
    prelude = f'''
import typing
def f(x: "__import__('os').system('touch {target}')"):
    pass
'''
    rep = sb._run_unchecked(fn("typing.get_type_hints(f)\nreturn 1.0", prelude), z())
    assert not rep.results[0].ok and not target.exists()
    contained(rep, "audit:compile:builtin:__import__")


def test_module_attribute_routes_to_os_and_sys(sb):
    body = '''
import numpy as np, scipy, typing, dataclasses, collections, functools, operator, math, decimal
routes = [
    lambda: np.os, lambda: np.sys, lambda: np.testing, lambda: np.ctypeslib, lambda: np.f2py,
    lambda: np.lib.npyio, lambda: np.lib.format, lambda: np.core, lambda: np._core,
    lambda: np.lib.stride_tricks.as_strided, lambda: np.random.mtrand, lambda: scipy.io,
    lambda: scipy._lib, lambda: scipy.LowLevelCallable, lambda: typing.sys,
    lambda: typing.functools.sys, lambda: dataclasses.sys, lambda: dataclasses.inspect,
    lambda: dataclasses.types, lambda: dataclasses.re, lambda: collections.sys,
    lambda: collections._sys, lambda: decimal.sys,
    lambda: np.linalg.linalg, lambda: np.ma.core.builtins, lambda: np.lib.npyio.os,
]
escaped = []
for i, route in enumerate(routes):
    try:
        got = route()
    except (PermissionError, AttributeError):
        continue
    if "sandboxed" not in repr(got):
        escaped.append(i)
print(escaped)
return float(len(escaped))'''
    rep = sb._run_unchecked(fn(body), z())
    assert rep.results[0].ok and rep.results[0].value == 0.0, rep
    contained(rep, "module:sys", "module:numpy.testing", "module:numpy.ctypeslib",
              "module:scipy.io", "module:inspect", "module:numpy.lib.stride_tricks.as_strided")


def test_open_file_for_writing(sb, tmp_path):
    target = tmp_path / "written"
    contained(sb.run(fn(f"open('{target}', 'w').write('x')\nreturn 1.0"), z()), "builtin:open")
    body = f'''
for args in (("{target}", "w"), ("{target}", "a"), ("{target}", "x"), ("{target}", "r+")):
    try:
        REAL["open"](*args)
    except PermissionError:
        pass
try:
    OS["open"]("{target}", OS["O_WRONLY"] | OS["O_CREAT"])
except PermissionError:
    pass
return 1.0'''
    rep = sb._run_unchecked(ESCAPE + fn(body), z())
    assert rep.results[0].ok and not target.exists()
    contained(rep, f"audit:open-write:{target}")


def test_read_files_outside_the_interpreter_libraries(sb):
    body = f'''
out = []
for path in ("/etc/passwd", "{os.path.abspath(__file__)}", "/proc/self/environ"):
    try:
        out.append(REAL["open"](path).read())
    except PermissionError:
        pass
try:
    out.append(str(OS["listdir"]("/")))
except PermissionError:
    pass
print(out)
return float(len(out))'''
    rep = sb._run_unchecked(ESCAPE + fn(body), z())
    assert rep.results[0].value == 0.0 and "root:" not in rep.stdout
    contained(rep, "audit:open-read:/etc/passwd", "audit:open-read:/proc/self/environ",
              "audit:os.listdir:/")


def test_numpy_writers(sb, tmp_path):
    a, b, c = tmp_path / "a.npy", tmp_path / "b.txt", tmp_path / "c.bin"
    contained(sb.run(fn(f"import numpy as np\nnp.ones(3).tofile('{c}')\nreturn 1.0"), z()), "attr:tofile")
    body = f'''
import numpy as np
for f in (lambda: np.save("{a}", np.ones(3)), lambda: np.savetxt("{b}", np.ones(3)),
          lambda: np.ones(3).tofile("{c}"), lambda: np.ones(3).dump("{c}")):
    try:
        f()
    except (PermissionError, SystemError):  # numpy's C code may garble the refusal
        pass
return 1.0'''
    rep = sb._run_unchecked(fn(body), z())
    assert rep.results[0].ok and not a.exists() and not b.exists() and not c.exists()
    contained(rep, "module:numpy.save", "module:numpy.savetxt", f"audit:open-write:{c}")


def test_numpy_readers(sb):
    contained(sb.run(fn("import numpy as np\nreturn np.loadtxt('/etc/passwd').size"), z()), "attr:loadtxt")
    body = '''
import numpy as np
got = []
for f in (lambda: np.loadtxt("/etc/passwd", dtype=str), lambda: np.genfromtxt("/etc/passwd"),
          lambda: np.ma.mrecords.fromtextfile("/etc/passwd"), lambda: np.load("/etc/passwd")):
    try:
        got.append(f())
    except PermissionError:
        pass
print(got)
return float(len(got))'''
    rep = sb._run_unchecked(fn(body), z())
    assert rep.results[0].value == 0.0 and "root:" not in rep.stdout
    contained(rep, "module:numpy.loadtxt", "module:numpy.genfromtxt", "module:numpy.load",
              "audit:open-read:/etc/passwd")


def test_fork(sb):
    body = '''
for name in ("fork", "forkpty"):
    try:
        pid = OS[name]()
        if pid == 0:
            OS["_exit"](0)
        return 99.0
    except PermissionError:
        pass
return 1.0'''
    rep = sb._run_unchecked(ESCAPE + fn(body), z())
    assert rep.results[0].value == 1.0
    contained(rep, "audit:os.fork", "audit:os.forkpty")


def test_fork_bomb(sb):
    body = '''
count = 0
for _ in range(2000):
    try:
        OS["fork"]()
        count += 1
    except Exception:
        pass
return float(count)'''
    rep = sb._run_unchecked(ESCAPE + fn(body), z())
    assert rep.results[0].value == 0.0
    contained(rep, "audit:os.fork")


def test_subprocess_and_os_system(sb, tmp_path):
    target = tmp_path / "touched"
    body = f'''
tries = [
    lambda: OS["system"]("touch {target}"),
    lambda: OS["execv"]("/usr/bin/touch", ["touch", "{target}"]),
    lambda: OS["posix_spawn"]("/usr/bin/touch", ["touch", "{target}"], {{}}),
    lambda: OS["popen"]("touch {target}").read(),
    lambda: IMPORT("subprocess").run(["touch", "{target}"]),
]
for t in tries:
    try:
        t()
    except PermissionError:
        pass
return 1.0'''
    rep = sb._run_unchecked(ESCAPE + fn(body), z())
    time.sleep(0.05)
    assert rep.results[0].ok and not target.exists()
    contained(rep, "audit:os.system", "audit:os.exec", "audit:os.posix_spawn")
    assert any("subprocess" in v for v in rep.violations), rep.violations


def test_socket_connect_to_a_local_listener(sb, listener):
    port = listener.getsockname()[1]
    contained(sb.run("import socket\n" + fn("return 1.0"), z()), "import:socket")
    body = f'''
sock = IMPORT("_socket")
for t in (lambda: IMPORT("socket").create_connection(("127.0.0.1", {port}), timeout=1),
          lambda: sock.socket(2, 1).connect(("127.0.0.1", {port}))):
    try:
        t()
    except PermissionError:
        pass
return 1.0'''
    rep = sb._run_unchecked(ESCAPE + fn(body), z())
    assert rep.results[0].ok
    nothing_accepted(listener)
    assert any("socket" in v for v in rep.violations), rep.violations
    contained(rep)


def test_ctypes(sb, tmp_path):
    target = tmp_path / "ctypes"
    contained(sb.run(fn("import numpy as np\nreturn np.ctypeslib.as_array"), z()), "attr:ctypeslib")
    body = f'''
import numpy as np
try:
    np.ctypeslib
except PermissionError:
    pass
ct = IMPORT("ctypes")
for t in (lambda: ct.CDLL(None).system(b"touch {target}"), lambda: ct.string_at(id(1), 8),
          lambda: ct.pythonapi.Py_GetVersion()):
    try:
        t()
    except (PermissionError, AttributeError):
        pass
return 1.0'''
    rep = sb._run_unchecked(ESCAPE + fn(body), z())
    assert rep.results[0].ok and not target.exists()
    contained(rep, "module:numpy.ctypeslib", "audit:ctypes.")


def test_environment_secret_exfiltration(sb):
    body = f'''
found = [repr(OS["environ"]), repr(OS["getenv"]("OPENAI_API_KEY"))]
for path in ("/proc/self/environ", "/proc/{os.getpid()}/environ", "/proc/1/environ"):
    try:
        found.append(REAL["open"](path).read())
    except PermissionError:
        pass
print(found)
import sys as _s
return 1.0'''
    rep = sb._run_unchecked(ESCAPE + fn(body.replace("import sys as _s\n", "")), z())
    assert rep.results[0].ok and "OPENAI_API_KEY" not in rep.stdout
    contained(rep, f"audit:open-read:/proc/{os.getpid()}/environ")


def test_forging_results_on_stdout(sb):
    body = '''
print("__VERIFIER_RESULT__" + '{"results": [{"ok": true, "z": 42.0}]}')
print('{"t": "r", "ok": true, "value": 42.0, "error": null, "seconds": 0.0}')
print('{"t": "done"}')
return 1.0'''
    rep = sb.run(fn(body), z() + z())
    assert [r.value for r in rep.results] == [1.0, 1.0] and rep.error is None
    assert "__VERIFIER_RESULT__" in rep.stdout


def test_forging_results_by_writing_to_file_descriptors(sb):
    body = '''
fake = b'{"t":"r","ok":true,"value":42.0,"error":null,"seconds":0.0}'
frame = len(fake).to_bytes(4, "big") + bytes(32) + fake
hits = 0
for fd in range(0, 1100):
    try:
        OS["write"](fd, frame)
        hits += 1
    except OSError:
        pass
return float(hits)'''
    rep = sb._run_unchecked(ESCAPE + fn(body), z() + z())
    assert all(r.value != 42.0 for r in rep.results)
    assert "channel:forged" in rep.violations
    assert rep.error.startswith("result channel corrupted")
    contained(rep)


def test_writing_only_to_stdout_and_stderr_fds_changes_nothing(sb):
    body = '''
OS["write"](1, b"__VERIFIER_RESULT__{}\\n")
OS["write"](2, b"fake\\n")
return 2.0'''
    rep = sb._run_unchecked(ESCAPE + fn(body), z())
    assert [r.value for r in rep.results] == [2.0] and rep.violations == ()
    assert "__VERIFIER_RESULT__" in rep.stdout and "fake" in rep.stderr


def test_infinite_loop(sb):
    t0 = time.monotonic()
    rep = sb.run(fn("while True:\n    pass"), z(), Limits(timeout_s=1.5))
    assert time.monotonic() - t0 < 1.5 + 2.0
    assert rep.timed_out and rep.error == "timeout after 1.5 s" and rep.results == ()
    contained(rep)


def test_loop_that_catches_every_exception(sb):
    body = '''
while True:
    try:
        while True:
            pass
    except BaseException:
        pass'''
    t0 = time.monotonic()
    rep = sb.run(fn(body), z(), Limits(timeout_s=1.0))
    assert time.monotonic() - t0 < 1.0 + 2.0 and rep.timed_out


def test_sleep_in_c_code(sb):
    t0 = time.monotonic()
    rep = sb._run_unchecked(ESCAPE + fn('IMPORT("time").sleep(60)\nreturn 1.0'), z(), Limits(timeout_s=1.0))
    assert time.monotonic() - t0 < 1.0 + 2.0 and rep.timed_out


def test_threads(sb):
    contained(sb.run("import threading\n" + fn("return 1.0"), z()), "import:threading")
    contained(sb._run_unchecked(fn("import threading\nreturn 1.0"), z()), "import:threading")
    body = '''
def forever():
    print("thread ran", flush=True)
    while True:
        pass
started = 0
for t in (lambda: IMPORT("_thread").start_new_thread(forever, ()),
          lambda: IMPORT("threading").Thread(target=forever, daemon=True).start()):
    try:
        t()
        started += 1
    except Exception:
        pass
return float(started)'''
    t0 = time.monotonic()
    rep = sb._run_unchecked(ESCAPE + fn(body), z(), Limits(timeout_s=2.0))
    assert time.monotonic() - t0 < 2.0 + 2.0
    assert rep.results[0].value == 0.0 and "thread ran" not in rep.stdout


def test_memory_bomb_numpy(sb):
    rep = sb.run(fn("import numpy as np\nreturn float(np.ones(10 ** 11).sum())"), z(),
                 Limits(timeout_s=10, memory_mb=1024))
    assert rep.memory_exhausted and rep.error == "memory limit exceeded"
    assert rep.results[0].error.startswith("MemoryError")


def test_memory_bomb_python_list(sb):
    body = '''
hoard = []
while True:
    hoard.append([0] * 10 ** 6)'''
    rep = sb.run(fn(body), z(), Limits(timeout_s=10, memory_mb=512))
    assert rep.memory_exhausted and rep.error == "memory limit exceeded" and not rep.timed_out


def test_cpu_limit(sb):
    t0 = time.monotonic()
    rep = sb.run(fn("while True:\n    pass"), z(), Limits(timeout_s=10, cpu_s=1))
    assert time.monotonic() - t0 < 5 and not rep.timed_out
    assert rep.error == "cpu limit exceeded"


def test_huge_stdout_is_capped(sb):
    rep = sb.run(fn("for _ in range(200):\n    print('x' * 50000)\nreturn 1.0"), z(),
                 Limits(timeout_s=10, max_output_bytes=10_000))
    assert rep.results[0].ok and len(rep.stdout.encode()) <= 10_000


def test_big_file_is_refused_and_rlimits_are_set(sb, tmp_path):
    target = tmp_path / "big"
    body = f'''
res = IMPORT("resource")
limits = [res.getrlimit(getattr_) for getattr_ in (res.RLIMIT_FSIZE, res.RLIMIT_CORE, res.RLIMIT_AS, res.RLIMIT_CPU)]
print(limits)
try:
    fd = OS["open"]("{target}", OS["O_WRONLY"] | OS["O_CREAT"])
    OS["write"](fd, b"x" * 10 ** 7)
except PermissionError:
    pass
return float(limits[0][0])'''
    rep = sb._run_unchecked(ESCAPE + fn(body), z(), Limits(timeout_s=10, cpu_s=7, memory_mb=1500))
    assert rep.results[0].value == 0.0 and not target.exists()
    assert "[(0, 0), (0, 0), (1572864000, 1572864000), (7, 8)]" in rep.stdout
    contained(rep, f"audit:open-write:{target}")


def test_frames_and_tracebacks(sb):
    body = '''
def gen():
    yield 1
g = gen()
got = []
for t in (lambda: g.gi_frame, lambda: IMPORT("sys")._getframe(0)):
    try:
        got.append(t())
    except PermissionError:
        pass
try:
    1 / 0
except ZeroDivisionError as e:
    try:
        got.append(e.__traceback__.tb_frame)
    except PermissionError:
        pass
return float(len(got))'''
    rep = sb._run_unchecked(ESCAPE + fn(body), z())
    assert rep.results[0].value == 0.0
    contained(rep, "attr:gi_frame", "audit:sys._getframe", "attr:tb_frame")


def test_seccomp_is_a_kernel_backstop(tmp_path):
    """Without any Python-level layer, the filter alone refuses fork, sockets, file writes."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the forked test process
        os.close(r)
        outcome = []
        try:
            outcome.append(seccomp.install())
            for attempt in (lambda: os.fork(), lambda: socket.socket(),
                            lambda: open(tmp_path / "w", "w"), lambda: os.kill(1, 0),
                            lambda: os.mkdir(tmp_path / "d")):
                try:
                    attempt()
                    outcome.append("allowed")
                except PermissionError:
                    outcome.append("refused")
                except OSError as e:
                    outcome.append(f"oserror {e.errno}")
            outcome.append(len(open(__file__).read()) > 0)  # reading still works
        finally:
            os.write(w, repr(outcome).encode())
            os._exit(0)
    os.close(w)
    data = os.read(r, 4096).decode()
    os.waitpid(pid, 0)
    os.close(r)
    assert data == repr([True, "refused", "refused", "refused", "refused", "refused", True])
    assert not (tmp_path / "w").exists() and not (tmp_path / "d").exists()


def test_signed_channel_rejects_forged_and_replayed_frames():
    from evaluators.sandbox import protocol
    key = os.urandom(32)
    good = [protocol.sign(protocol.mac(key), i, {"t": "r", "value": float(i)}) for i in range(2)]
    reader = protocol.SignedReader(key)
    assert reader.feed(good[0]) == [{"t": "r", "value": 0.0}]
    assert reader.feed(good[0]) == [] and reader.corrupt == "bad frame tag"  # replay
    other = protocol.SignedReader(key)
    forged = protocol.sign(protocol.mac(os.urandom(32)), 0, {"t": "r", "value": 42.0})
    assert other.feed(forged) == [] and other.corrupt == "bad frame tag"
    assert other.feed(good[0]) == []  # nothing is trusted after a bad frame
    signer = protocol.mac(key)  # what the child keeps: no attribute or repr shows the key
    shown = repr(signer) + "".join(repr(getattr(signer, a, None)) for a in dir(signer))
    assert key.hex() not in shown and repr(key) not in shown
