"""Layer 3: the PEP 578 audit hook installed in the sandbox child right before candidate code.

An audit hook cannot be removed once added. While active it refuses (reports the violation
by name through ``report`` and then raises ``PermissionError``), whoever triggers the event:

* ``open`` for writing (mode with w/a/x/+ or write/create/truncate/append flags), of an
  integer fd, and for reading outside the interpreter's library directories (stdlib,
  site-packages, lib-dynload: lazily imported numpy/scipy submodules must read their files);
* ``os.listdir``/``os.scandir`` outside those directories;
* imports of networking/process/raw-memory modules (socket, subprocess, ctypes, mmap, ...);
* code compiled from strings (``compile``/``exec`` events) that names dangerous dunders,
  frame attributes or forbidden builtins -- dataclasses/namedtuple generate harmless code
  this way, injected field names do not;
* every event not on the small allowlist below: process creation (``os.system``, ``os.exec``,
  ``os.posix_spawn``, ``os.fork``, ``subprocess.Popen``, ``os.kill``), ``socket.*``,
  ``ctypes.*``, file-system changes (``os.remove``, ``os.rename``, ``os.mkdir``,
  ``os.chmod``...), ``shutil.*``, ``sys.settrace``, ``gc.get_objects``, ``code.__new__``,
  ``pickle.find_class``, ``mmap.__new__``, ``sys.addaudithook``, ...

Frame and code introspection (``sys._getframe``, ``object.__getattr__`` on ``tb_frame``/
``gi_frame``/``__code__``...) is refused only when the candidate's own code asks for it:
numpy, scipy, dataclasses and collections use it internally.

Violation names: ``audit:<event>`` or ``audit:<event>:<detail>``, e.g.
``audit:open-write:/tmp/x``, ``audit:socket.connect``, ``audit:os.fork``.
"""
from __future__ import annotations

import ast
import os
import sys
import sysconfig

from .policy import generated_code_violations, is_dunder

CANDIDATE_FILENAME = "<candidate>"

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_BENIGN = frozenset({
    "builtins.id", "marshal.loads", "array.__new__", "time.sleep", "sys.excepthook",
    "sys.unraisablehook", "cpython._PySys_ClearAuditHooks", "sys._getframemodulename",
    "locale.setlocale",
})
# Modules for networking, processes, raw memory and file-system changes: no numerical code
# path imports them, so a first import of one after candidate code started is refused.
_DANGEROUS_IMPORTS = frozenset({
    "socket", "_socket", "subprocess", "_posixsubprocess", "multiprocessing",
    "_multiprocessing", "pty", "ssl", "_ssl", "ctypes", "_ctypes", "mmap", "asyncio", "http",
    "urllib", "ftplib", "smtplib", "poplib", "imaplib", "telnetlib", "webbrowser", "sqlite3",
    "_sqlite3", "shutil", "tempfile", "glob", "resource", "fcntl", "termios", "pdb", "bdb",
    "shelve", "dbm", "xmlrpc", "socketserver", "wsgiref", "mailbox", "zipfile", "tarfile",
})
# Attributes the candidate's own code may never assign through type.__setattr__ & co.
# (typing.NamedTuple sets __bases__ itself; nobody may swap a function's __code__).
_NEVER_SET = frozenset({"__code__", "__class__", "__bases__", "__dict__", "__globals__",
                        "__builtins__", "__closure__"})


def allowed_roots() -> tuple[str, ...]:
    """Real paths of the interpreter's library directories (stdlib, site-packages, ...)."""
    roots = set()
    for vars_ in (None, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix,
                         "installed_base": sys.base_prefix, "installed_platbase": sys.base_exec_prefix}):
        paths = sysconfig.get_paths(vars=vars_) if vars_ else sysconfig.get_paths()
        for key in ("stdlib", "platstdlib", "purelib", "platlib"):
            if paths.get(key):
                roots.add(paths[key])
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        if real and any(real.startswith(p + os.sep) for p in prefixes):
            roots.add(entry)
    return tuple(sorted({os.path.realpath(r) for r in roots} | {os.path.abspath(r) for r in roots}))


def _under(path: str, roots) -> bool:
    return any(path == r or path.startswith(r + os.sep) for r in roots)


def _code_names(code, out: set) -> set:
    out.update(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            _code_names(const, out)
    return out


def _source_names(source) -> set:
    tree = source if isinstance(source, ast.AST) else ast.parse(source)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.add("__import__")
    return names


_ROOTS = allowed_roots()  # computed once in the zygote, inherited by every child


def install(report):
    """Add the audit hook, disarmed; returns ``arm(candidate_code)``.

    Until ``arm`` is called the hook lets everything through (the child is still setting
    up); from then on it refuses as described above, and the exec of ``candidate_code``
    itself is the one exec it lets through unchecked. ``report(name)`` records a violation.
    """
    roots = _ROOTS
    busy = [True]
    candidate = [None]
    getframe, realpath, fsdecode = sys._getframe, os.path.realpath, os.fsdecode

    def refuse(violation: str):
        busy[0] = True
        try:
            report(violation)
        finally:
            busy[0] = False
        raise PermissionError(f"sandbox: refused {violation}")

    def caller_filename() -> str:
        """co_filename of the Python frame that triggered the current event."""
        busy[0] = True
        try:
            frame = getframe(3)  # 0: here, 1: handler, 2: hook, 3: code that raised the event
            return frame.f_code.co_filename if frame is not None else ""
        finally:
            busy[0] = False

    def in_library_import() -> bool:
        """True when a library module's top-level code is on the stack above any candidate
        frame: code it compiles or executes cannot carry candidate data."""
        busy[0] = True
        try:
            frame = getframe(3)
            while frame is not None:
                filename = frame.f_code.co_filename
                if filename == CANDIDATE_FILENAME:
                    return False
                if frame.f_code.co_name == "<module>" and (
                        filename.startswith("<frozen") or _under(filename, roots)):
                    return True
                frame = frame.f_back
            return False
        finally:
            busy[0] = False

    def check_path(event, path, write=False):
        if isinstance(path, int):
            refuse(f"audit:{event}-fd:{path}")
        if not isinstance(path, (str, bytes)):
            refuse(f"audit:{event}-pathlike")
        text = fsdecode(path)
        if not write and text.startswith("<") and text.endswith(">"):
            # a pseudo file name ("<string>"): the traceback machinery looking for source
            # lines of generated code; refuse without calling it a violation
            raise PermissionError("sandbox: no source for pseudo files")
        if write:
            refuse(f"audit:{event}-write:{text}")
        busy[0] = True
        try:
            ok = _under(realpath(text), roots)
        finally:
            busy[0] = False
        if not ok:
            refuse(f"audit:{event}-read:{text}")

    def on_open(args):
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        write = (isinstance(mode, str) and any(c in mode for c in "wax+")) \
            or (isinstance(flags, int) and flags >= 0 and flags & _WRITE_FLAGS)
        check_path("open", path, bool(write))

    def on_listdir(event):
        def handler(args):
            path = args[0] if args else "."
            if path is None:
                path = "."
            if isinstance(path, int):
                refuse(f"audit:{event}-fd")
            busy[0] = True
            try:
                ok = isinstance(path, (str, bytes)) and _under(realpath(fsdecode(path)), roots)
            finally:
                busy[0] = False
            if not ok:
                refuse(f"audit:{event}:{fsdecode(path) if isinstance(path, (str, bytes)) else '?'}")
        return handler

    def on_import(args):
        top = str(args[0]).split(".")[0]
        if top in _DANGEROUS_IMPORTS:
            refuse(f"audit:import:{args[0]}")

    def on_compile(args):
        source, filename = (tuple(args) + (None, None))[:2]
        if caller_filename().startswith("<frozen importlib") or in_library_import():
            return  # the import system compiling a library file, or a library's import-time code
        name = str(filename)
        if name.startswith(os.sep) or name.startswith("<frozen"):
            refuse("audit:compile:forged-filename")
        busy[0] = True
        try:
            names = _source_names(source) if source is not None else set()
        except (SyntaxError, ValueError, TypeError):
            names = set()
        finally:
            busy[0] = False
        bad = generated_code_violations(names)
        if bad:
            refuse(f"audit:compile:{bad[0]}")

    def on_exec(args):
        code = args[0] if args else None
        if code is candidate[0] or not hasattr(code, "co_filename"):
            return
        filename = code.co_filename
        if filename.startswith("<frozen") or _under(filename, roots) or in_library_import():
            return  # module code of a library being imported
        bad = generated_code_violations(_code_names(code, set()))
        if bad:
            refuse(f"audit:exec:{bad[0]}")

    def on_getattr(args):
        name = str(args[1]) if len(args) > 1 else "?"
        if caller_filename() == CANDIDATE_FILENAME:
            refuse(f"dunder:{name}" if is_dunder(name) else f"attr:{name}")

    def on_setattr(args):
        name = str(args[1]) if len(args) > 1 else "?"
        if name == "__code__" or (name in _NEVER_SET and caller_filename() == CANDIDATE_FILENAME):
            refuse(f"audit:object.__setattr__:{name}")

    def on_getframe(args):
        if caller_filename() == CANDIDATE_FILENAME:
            refuse("audit:sys._getframe")

    handlers = {
        "open": on_open, "os.listdir": on_listdir("os.listdir"),
        "os.scandir": on_listdir("os.scandir"), "import": on_import, "compile": on_compile,
        "exec": on_exec, "object.__getattr__": on_getattr, "object.__setattr__": on_setattr,
        "object.__delattr__": on_setattr, "sys._getframe": on_getframe,
    }

    def hook(event, args):
        if busy[0]:
            return
        handler = handlers.get(event)
        if handler is not None:
            handler(args)
        elif event not in _BENIGN:
            refuse(f"audit:{event}")

    sys.addaudithook(hook)

    def arm(candidate_code) -> None:
        candidate[0] = candidate_code
        busy[0] = False

    return arm
