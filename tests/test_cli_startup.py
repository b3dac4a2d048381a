"""`evolve --help` stays fast: building the parser (done on every invocation) imports none of the heavy
packages; each command imports them when it runs (see evolve/commands/__init__.py)."""

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

from evolve.commands import COMMANDS

ROOT = Path(__file__).resolve().parent.parent

HEAVY = ("sympy", "ray", "numba", "litellm", "cotengra", "optuna", "scipy", "networkx")


def test_building_the_parser_imports_no_heavy_package():
    code = ("import sys, evolve.cli; evolve.cli.build_parser(); "
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert ast.literal_eval(out.stdout.strip()) == []


def _command_names() -> list[str]:
    """The names the modules of COMMANDS register (launch registers resume too; inspect lineage, show, runs)."""
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    for module in COMMANDS:
        module.register(sub)
    return list(sub.choices)


def test_help_lists_every_command():
    out = subprocess.run([sys.executable, "-m", "evolve.cli", "--help"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    names = _command_names()
    assert len(names) >= len(COMMANDS)
    missing = [name for name in names if not re.search(rf"^\s+{re.escape(name)}\s", out.stdout, re.MULTILINE)]
    assert not missing, f"`evolve --help` does not list {missing}:\n{out.stdout}"
