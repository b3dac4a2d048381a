"""What the template benchmarks share: a baseline git revision's programs rendered by that
revision's own code, and a rendered program's ``log_Z``.

A program is rendered by running a small script (``render``, printing the program text, or a JSON
list of texts) in a subprocess whose ``PYTHONPATH`` is a ``git archive`` of the revision, so the
baseline is the text a search at that revision would judge.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def rendered(render: str, args: tuple[str, ...] = (), tree: Path = ROOT) -> str:
    """stdout of the script ``render`` (with ``args``) run on the sources at ``tree``."""
    return subprocess.run([sys.executable, "-c", render, *args], cwd=tree,
                          env={"PYTHONPATH": str(tree), "PATH": "", "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
                          check=True, capture_output=True, text=True).stdout


def rendered_at(revision: str, render: str, args: tuple[str, ...] = ()) -> str:
    """stdout of the script ``render`` run on the sources of git ``revision``."""
    archive = subprocess.run(["git", "archive", revision], cwd=ROOT, check=True, capture_output=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        tarfile.open(fileobj=BytesIO(archive)).extractall(tmp, filter="data")
        return rendered(render, args, Path(tmp))


def log_z_of(text: str, name: str):
    """The ``log_Z`` of a program's text (compiled under ``name``, for tracebacks)."""
    space: dict = {}
    exec(compile(text, name, "exec"), space)
    return space["log_Z"]
