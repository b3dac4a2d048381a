"""The `evolve` subcommands, one module each; every module has ``register(subparsers)``."""

from evolve.commands import bench, derive, export, inspect, launch, oracle, perf, replay, report, tasks, tune, verify

#: in the order `evolve --help` lists them
COMMANDS = (launch, inspect, report, replay, export, verify, oracle, tasks, derive, perf, bench, tune)
