"""``evolve export``: one JSON record per proposal of a run, for analysis and fine-tuning.

``evolve export runs/<id> --format jsonl [--out FILE]`` writes one line per proposal, in journal
order (schema 1)::

    {"schema": 1, "run_id", "task", "id", "generation", "slot", "island",
     "proposer", "model", "parent_ids",              # parent first, then inspirations
     "messages": [{"role": "system", "content"}, {"role": "user", "content"}],   # [] without a prompt
     "prompt_id", "prompt_meta", "response", "response_format",
     "program": {"code", "tractable_class", "complexity_O", "confidence", "justification"} | null,
     "parse_error", "error_kind",                    # why there is no program (parse | diff | api)
     "diff_from_parent": "unified diff of the code against the first parent's" | "",
     "verdict": Verdict.to_dict() | null,            # null: not judged (no code, a duplicate, the budget)
     "duplicate_of", "first_failure",                # the first failed check of a rejection
     "score", "fitness",                             # search.database score and fitness in [0, 1]
     "reward",                                       # the bandit's reward: child fitness over the parent's, >= 0
     "tokens_in", "tokens_out", "cost_usd", "latency_s", "created"}

``messages`` are the exact chat messages the model answered: the system prompt (journaled once
per distinct text and named by ``prompt_meta.system``) and the user prompt; ``response`` the
model's raw text. The reward is :func:`evolve.engine.models.outcome_reward`, the number the
engine fed to the model bandit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from evolve.engine.models import outcome_reward
from evolve.store.events import DuplicateEvent, ProposalEvent, SystemPromptEvent
from evolve.store.lineage import RunIndex, code_diff, index
from search.database import fitness
from search.failure_reason import first_failure
from search.records import JudgedProgram

SCHEMA = 1


def export_records(run_dir: str | Path | RunIndex) -> Iterator[dict]:
    """The records of every proposal of the run at ``run_dir`` (or its RunIndex), in journal order."""
    idx = index(run_dir)
    systems = {e.digest: e.text for e in idx.of_kind(SystemPromptEvent)}
    duplicates = {e.id: e.of for e in idx.of_kind(DuplicateEvent)}
    seen: set[str] = set()
    for event in idx.of_kind(ProposalEvent):
        cand = event.candidate
        if cand.id in seen:
            continue
        seen.add(cand.id)
        ev = idx.evaluations.get(cand.id)
        parent_id = cand.parent_ids[0] if cand.parent_ids else None
        parent = idx.proposals.get(parent_id) if parent_id else None
        judged_parent = JudgedProgram(parent, idx.evaluations.get(parent_id)) if parent is not None else None
        program = JudgedProgram(cand, ev, duplicates.get(cand.id))
        yield {
            "schema": SCHEMA, "run_id": idx.run_id, "task": cand.task, "id": cand.id,
            "generation": event.generation, "slot": event.slot, "island": event.island,
            "proposer": cand.proposer, "model": cand.model, "parent_ids": list(cand.parent_ids),
            "messages": cand.chat_messages(systems.get(str(cand.prompt_meta.get("system")))), "prompt_id": cand.prompt_id, "prompt_meta": dict(cand.prompt_meta),
            "response": cand.response, "response_format": cand.response_format,
            "program": None if not cand.ok else {"code": cand.code, **cand.claims()},
            "parse_error": cand.parse_error, "error_kind": cand.error_kind,
            "diff_from_parent": code_diff(parent.code, cand.code, parent.id, cand.id) if parent is not None else "",
            "verdict": None if ev is None else ev.verdict.to_dict(),
            "duplicate_of": duplicates.get(cand.id), "first_failure": None if ev is None else first_failure(ev.verdict),
            "score": None if ev is None else list(ev.score), "fitness": None if ev is None else fitness(ev.score),
            "reward": outcome_reward(program, judged_parent),
            "tokens_in": cand.tokens_in, "tokens_out": cand.tokens_out, "cost_usd": cand.cost_usd,
            "latency_s": cand.latency_s, "created": cand.created,
        }


def write_jsonl(records, fh) -> int:
    """Write ``records`` one per line to the text stream ``fh``; returns how many."""
    count = 0
    for rec in records:
        fh.write(json.dumps(rec, default=str) + "\n")
        count += 1
    return count
