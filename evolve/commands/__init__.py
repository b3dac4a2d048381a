"""The `evolve` subcommands, one module each; every module has ``register(subparsers)``.

The parser is built on every invocation, `evolve --help` included, so it imports every module here.
A command module therefore imports only light modules at its top, and its heavy dependencies (sympy,
Ray, numba, litellm, scipy, networkx, ... through the engine, the verifier and the tasks) inside the
functions that run the command, each such import marked ``# lazy``. tests/test_cli_startup.py checks
that building the parser imports none of them.
"""

from evolve.commands import (bench, derive, derive_bench, export, inspect, launch, oracle, perf, replay, report, tasks,
                             threshold, tune, verify)

#: in the order `evolve --help` lists them
COMMANDS = (launch, inspect, report, replay, export, verify, oracle, tasks, derive, derive_bench, perf, bench, tune,
            threshold)
