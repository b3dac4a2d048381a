"""Loud failures of a run: the model preflight before the first generation, and the verdict on a
run whose every proposal failed. Both raise :class:`RunFailed`, which ``evolve launch`` and
``evolve resume`` print and turn into exit status 1; the run directory records the reason
(``preflight`` events, the ``finish`` reason and ``status.json`` state ``failed``).
"""

from __future__ import annotations

import os

from evolve.config import Config
from evolve.store.events import PreflightEvent, ProposalEvent, decode
from evolve.store.failures import common_failure
from evolve.store.journal import read_journal
from search.llm.preflight import preflight
from search.proposers import proposer_class


class RunFailed(RuntimeError):
    """The run could not do its work; the message says why in one line."""


def uses_llm(cfg: Config) -> bool:
    """Whether the run calls models: an ``llm`` section and a weighted proposer that declares ``calls_models``."""
    return cfg.llm is not None and any(w > 0 and proposer_class(name).calls_models for name, w in cfg.weights().items())


def check_models(cfg: Config, store) -> None:
    """Preflight every model the run may call; RunFailed naming each one that cannot answer."""
    if not uses_llm(cfg):
        return
    if not cfg.llm.preflight:
        store.log("model preflight skipped (llm.preflight: false): a model that cannot answer shows only as failed "
                  "proposals")
        return
    results = preflight(cfg.llm)
    for r in results:
        store.record(PreflightEvent(r.model, r.ok, r.seconds, r.error, r.error_kind))
        store.log(f"preflight {r.model}: " + (f"ok in {r.seconds:.2f} s" if r.ok else f"FAILED ({r.error_kind}): {r.error}"))
    bad = [r for r in results if not r.ok]
    if bad:
        raise RunFailed("model preflight failed: " + "; ".join(r.error or r.model for r in bad))


def check_proposals(store) -> None:
    """RunFailed when every proposal journaled in ``store``'s run failed (none produced code)."""
    records = read_journal(store.path / "journal.msgpack").records
    cands = {}
    for rec in records:
        if rec.get("kind") == "proposal":
            event = decode(rec)
            if isinstance(event, ProposalEvent):
                cands.setdefault(event.candidate.id, event.candidate)
    summary = common_failure(list(cands.values()))
    if summary is not None:
        raise RunFailed(summary.line())


def environment_problems(cfg: Config) -> list[str]:
    """'model: VARIABLE' for every model the run may call whose key variable is unset here."""
    return cfg.llm.unset_key_envs(os.environ) if uses_llm(cfg) else []
