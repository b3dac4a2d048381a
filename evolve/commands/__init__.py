"""The `evolve` subcommands, one module each; every module has ``register(subparsers)``."""

from evolve.commands import bench, inspect, launch, oracle, perf, report, tasks, tune, verify

#: in the order `evolve --help` lists them
COMMANDS = (launch, inspect, report, verify, oracle, tasks, perf, bench, tune)
