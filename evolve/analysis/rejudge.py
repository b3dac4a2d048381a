"""``evolve replay``: judge every journaled proposal again with today's parser and verifier.

No model is called. For each proposal, in journal order:

- an LLM proposal is re-parsed from its recorded response (diffs applied to the parent's
  journaled code, omitted claims inherited from the parent's), exactly as the proposer would
  parse it today; a derivation answer (``prompts.output_format: chain``) has its chain checked
  step by step and rendered again by today's derivation engine; a proposal that never got a
  response (a provider failure) stays one;
- any other proposal (the structural proposer's) keeps its journaled code and claims;
- every program with code is judged by today's verifier with the run's evaluator settings
  (``evaluator:`` of the run's config; the same code and claims are judged once).

The outcome of each proposal before and after is one of ``accept``, ``reject``, ``no code`` (a
failed proposal) or ``not judged`` (left by the evaluation budget; a duplicate has the outcome of
the program it repeated). A proposal *changed* when it had an outcome and that outcome differs
today, or when both are rejections whose first failed check differs; a program judged today for
the first time is counted as newly judged, not as changed. :func:`rejudge_run` returns a
:class:`ReplayReport`; with ``out`` it writes ``out/replay.jsonl`` (one
:class:`RejudgedProposal` per line) and ``out/summary.json``.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from evaluators.sandbox import Sandbox
from evaluators.verdict import Verdict
from evolve.config import config_from_dict
from evolve.engine.evaluator_worker import EvaluatorWorker
from evolve.store.events import DuplicateEvent, ProposalEvent
from evolve.store.lineage import RunIndex
from evolve.store.run_store import read_config, read_executor_rates
from search.candidate import Candidate
from search.database import normalised_hash
from search.derivation.llm_format import propose_from_text
from search.derivation.proposer import DerivationProposer
from search.failure_reason import failure_of, first_failure
from search.parsing import ParseFailure, parse_response
from tasks.registry import get_task


@dataclass
class RejudgedProposal:
    id: str
    proposer: str | None
    model: str | None
    before: str                     # accept | reject | no code | not judged
    after: str
    changed: bool
    failure_before: str | None = None   # first failed check (rejections) or why there was no code
    failure_after: str | None = None
    verdict: dict | None = None     # today's Verdict (Verdict.to_dict())


@dataclass
class ReplayReport:
    run_dir: str
    task: str
    proposals: list = field(default_factory=list)   # RejudgedProposal, in journal order
    judged: int = 0                 # distinct programs judged today

    @property
    def changed(self) -> list:
        return [p for p in self.proposals if p.changed]

    def summary(self) -> dict:
        moves = Counter(f"{p.before} -> {p.after}" for p in self.changed)
        return {"run_dir": self.run_dir, "task": self.task, "proposals": len(self.proposals),
                "programs_judged": self.judged, "changed": len(self.changed), "transitions": dict(moves),
                "newly_judged": sum(p.before == "not judged" and p.after != "no code" for p in self.proposals),
                "changed_ids": [p.id for p in self.changed]}


def rejudge_run(run_dir: str | Path, out: str | Path | None = None, log=None, evaluator=None) -> ReplayReport:
    """Re-judge every proposal of the run at ``run_dir`` (see the module docstring). ``evaluator``
    replaces today's verifier (anything with ``evaluate(candidate) -> Evaluation``)."""
    idx = RunIndex(run_dir)
    cfg = config_from_dict(read_config(idx.path), base_dir=idx.path)   # registers the run's own task files
    evaluator = evaluator or EvaluatorWorker(cfg.task, cfg.evaluator.verify_options(cfg.seed, read_executor_rates(idx.path)))
    report = ReplayReport(str(run_dir), cfg.task)
    verdicts: dict[tuple, dict] = {}
    duplicates = {e.id: e.of for e in idx.of_kind(DuplicateEvent)}
    seen: set[str] = set()
    chains = ChainReader(cfg.task, cfg.seed)
    try:
        for event in idx.of_kind(ProposalEvent):
            cand = event.candidate
            if cand.id in seen:      # journaled twice (a resumed run): judged once
                continue
            seen.add(cand.id)
            report.proposals.append(_rejudge(idx, cand, evaluator, verdicts, duplicates.get(cand.id), log, chains))
    finally:
        chains.close()
        close = getattr(evaluator, "close", None)
        if close is not None:
            close()
    report.judged = len(verdicts)
    if out is not None:
        write_report(report, Path(out))
    return report


class ChainReader:
    """Derivation answers read again: each chain checked and rendered by today's engine (the sandbox
    for the step checks starts with the first derivation answer)."""

    def __init__(self, task_id: str, seed: int):
        self.task_id, self.seed = task_id, seed
        self.checker: DerivationProposer | None = None

    def __call__(self, text: str, cid: str) -> Candidate:
        if self.checker is None:
            self.checker = DerivationProposer(self.seed, sandbox=Sandbox())
        return propose_from_text(get_task(self.task_id), text, cid, checker=self.checker)

    def close(self) -> None:
        if self.checker is not None:
            self.checker.sandbox.close()


def _rejudge(idx: RunIndex, cand: Candidate, evaluator, verdicts: dict, duplicate_of: str | None,
             log, chains=None) -> RejudgedProposal:
    before, failure_before, stage_before = _outcome_before(idx, cand, duplicate_of)
    today = reparse(idx, cand, chains)
    verdict = None
    if not today.ok:
        after, failure_after, stage_after = "no code", today.parse_error, None
    else:
        key = (normalised_hash(today.code), today.tractable_class, today.complexity_O)
        if key not in verdicts:
            verdicts[key] = evaluator.evaluate(today).verdict.to_dict()
            if log is not None:
                log(f"judged {cand.id}: {verdicts[key]['verdict']}")
        verdict = verdicts[key]
        after = verdict["verdict"]
        judged = Verdict.from_dict(verdict)
        failure_after, stage_after = first_failure(judged), _stage(judged)
    # a Verdict journaled before its failure was typed is compared by the failed stage alone (its line was
    # worded from other fields); a typed one by the whole line
    same_failure = failure_before == failure_after if stage_before is None or stage_before[1] else \
        stage_before[0] == (stage_after[0] if stage_after else None)
    changed = before != "not judged" and (before != after or (before == "reject" and not same_failure))
    return RejudgedProposal(cand.id, cand.proposer, cand.model, before, after, changed, failure_before, failure_after,
                            verdict)


#: what reading a response decides (everything else of a proposal is its journaled provenance)
_READ = ("code", "tractable_class", "complexity_O", "confidence", "justification", "parse_error", "error_kind",
         "response_format")


def reparse(idx: RunIndex, cand: Candidate, chains=None) -> Candidate:
    """The proposal as today's parser reads its recorded response (a copy; non-LLM proposals unchanged).
    ``chains(text, id) -> Candidate`` reads derivation answers (without it they stay as journaled)."""
    if cand.response is None:
        return cand
    if cand.response_format == "derivation_json":
        if chains is None:
            return cand
        read = chains(cand.response, cand.id)
        return Candidate.from_dict({**cand.to_dict(), **{k: getattr(read, k) for k in _READ},
                                    "derivation": read.derivation, "prompt_meta": {**cand.prompt_meta,
                                                                                   **read.prompt_meta}})
    parent = idx.proposals.get(cand.parent_ids[0]) if cand.parent_ids else None
    parsed = parse_response(cand.response, parent.code if parent is not None else None,
                            parent.claims() if parent is not None else None)
    base = {k: v for k, v in cand.to_dict().items() if k not in _READ}
    if isinstance(parsed, ParseFailure):
        return Candidate.from_dict({**base, "parse_error": parsed.reason, "error_kind": parsed.kind})
    return Candidate.from_dict({**base, "code": parsed.code, "tractable_class": parsed.tractable_class,
                                "complexity_O": parsed.complexity_O, "confidence": parsed.confidence,
                                "justification": parsed.justification, "response_format": parsed.format})


def _outcome_before(idx: RunIndex, cand: Candidate, duplicate_of: str | None) -> tuple[str, str | None]:
    if not cand.ok:
        return "no code", cand.parse_error, None
    ev = idx.evaluations.get(cand.id) or (idx.evaluations.get(duplicate_of) if duplicate_of else None)
    if ev is None:
        return "not judged", None, None
    return ev.verdict.verdict, first_failure(ev.verdict), _stage(ev.verdict)


def _stage(verdict: Verdict) -> tuple[str, bool] | None:
    """(the first failed stage, whether the Verdict recorded it itself) of a rejection; None if accepted."""
    failure = failure_of(verdict)
    return None if failure is None else (failure.stage, verdict.failure is not None)


def write_report(report: ReplayReport, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "replay.jsonl", "w", encoding="utf-8") as fh:
        for p in report.proposals:
            fh.write(json.dumps(asdict(p), default=str) + "\n")
    (out / "summary.json").write_text(json.dumps(report.summary(), indent=1), encoding="utf-8")
