"""The sentinel: a small process that ends what its driver leaves behind, however the driver dies.

``evolve launch`` and ``evolve resume`` (the *driver*) start one sentinel each, in a session of its
own, with a pipe on its stdin. With ``--ray`` the sentinel starts the local Ray cluster of the run
(it calls ``ray.init(address="local")``, so Ray's GCS, raylet, dashboard and runtime agents and every worker are
its descendants) and answers ``ready <GCS address>`` on stdout; the driver then joins that
cluster. It is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so Ray processes whose parent dies
are re-parented to it instead of to init, and it asks the kernel for ``SIGTERM`` when its parent
dies (``PR_SET_PDEATHSIG``).

Lines the driver writes on the sentinel's stdin:

- ``run <path>``: the run directory being written;
- ``done``: the driver is ending normally.

When stdin ends without ``done`` (the pipe closes whenever the driver exits, SIGKILL included)
or the parent-death signal arrives, the driver died: the run's status.json, if it still says
``running``, becomes ``failed`` with the reason. Either way the sentinel then shuts its Ray cluster
down and kills every descendant left (Ray's own agents outlive a killed raylet by a minute on
their own), and exits.
"""

from __future__ import annotations

import argparse
import ctypes
import logging
import os
import signal
import sys
import time
from pathlib import Path

from evolve.store.status import mark_failed_if_running

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


class DriverGone(BaseException):
    """The parent-death signal arrived (or the driver gave up on us). A BaseException, so that no
    ``except Exception`` on the way (Ray's own retry loops inside ``ray.init`` included) swallows it."""


def _prctl(option: int, value: int) -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):      # not Linux: the stdin pipe alone tells us
        return False


def _on_parent_death(signum, frame):
    raise DriverGone()


def _children_of() -> dict[int, list[int]]:
    """ppid -> live (not zombie) child pids, from /proc."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                rest = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if rest[0] != b"Z":
            tree.setdefault(int(rest[1]), []).append(int(entry))
    return tree


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (Linux /proc)."""
    tree, out, todo = _children_of(), [], [pid]
    while todo:
        kids = tree.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_descendants(grace_s: float = 2.0, limit_s: float = 15.0) -> None:
    """SIGTERM every descendant, SIGKILL what is left after ``grace_s``, until none remain."""
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        _reap()
        pids = descendants(os.getpid()) if os.path.isdir("/proc") else []
        if not pids:
            return
        sig = signal.SIGTERM if time.monotonic() - start < grace_s else signal.SIGKILL
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


def start_local_ray():
    """A new local cluster of the run's own; the GCS address to join. ``address="local"``: a bare
    ``ray.init()`` would join whatever head ``ray start`` recorded in Ray's temp dir (another user's,
    or a dead one whose files remain) instead of starting one."""
    # Ray is imported here, not at the top: a sentinel for a run on an existing cluster never needs it
    import ray

    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    ray.init(address="local", include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    return ray, ray.get_runtime_context().gcs_address


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m evolve.engine.sentinel")
    p.add_argument("--driver", type=int, required=True, help="pid of the driver process")
    p.add_argument("--ray", action="store_true", help="start the driver's local Ray cluster")
    args = p.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # the terminal's Ctrl-C is the driver's to handle
    signal.signal(signal.SIGTERM, _on_parent_death)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    ray = None
    run_dir, finished = None, False
    try:
        if os.getppid() != args.driver:
            raise DriverGone()                    # it died before the death signal was asked for
        if args.ray:
            try:
                ray, address = start_local_ray()
            except Exception as exc:  # noqa: BLE001 - reported to the driver in one line, whatever it is
                print(f"error {type(exc).__name__}: {' '.join(str(exc).split())}", flush=True)
                return 1
            print(f"ready {address}", flush=True)
        for line in sys.stdin:
            word, _, rest = line.strip().partition(" ")
            if word == "run":
                run_dir = Path(rest)
            elif word == "done":
                finished = True
                break
    except DriverGone:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if not finished and run_dir is not None:
            mark_failed_if_running(run_dir, f"the driver (pid {args.driver}) died before the run ended (killed by a "
                                            f"signal or out of memory?); `evolve resume {run_dir}` continues it")
        if ray is not None:
            try:
                ray.shutdown()
            except Exception:  # noqa: BLE001 - whatever is left is killed below
                pass
        kill_descendants()
    return 0


if __name__ == "__main__":
    sys.exit(main())
