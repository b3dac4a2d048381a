"""Exact reference values for a task's parameters, cached in memory.

Probe sizes are judged against brute-force enumeration, as in the paper.
"""

from __future__ import annotations

import json
from functools import lru_cache

from evaluators.oracles.naive import naive_log_z
from tasks.base import Task


def reference_log_z(task: Task, params: dict, n: int) -> float:
    """Exact natural log Z of ``task`` at ``params`` and size ``n``."""
    return _cached(task.id, json.dumps(params, sort_keys=True), n, task)


@lru_cache(maxsize=4096)
def _cached(task_id: str, params_json: str, n: int, task: Task) -> float:
    return naive_log_z(task.to_model(json.loads(params_json), n))
