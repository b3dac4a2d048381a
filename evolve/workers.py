"""The two worker kinds of a search, as plain classes the runtime wraps in Ray actors.

Proposers turn a small request (parent and inspirations as small dicts, seeds, which
proposer) into a candidate dict; evaluators judge one candidate dict in their own sandbox.
Only these small records cross process boundaries, never the population. A user task reaches
a worker as its file's text (``tasks.registry.TaskFile.payload``), registered at start-up.
"""

from __future__ import annotations

import os
import socket
import time

import numpy as np


class ProposerWorker:
    """Builds candidates. Structural proposals are deterministic in (seed, generation, slot)."""

    def __init__(self, task_id: str, seed: int, variant: str = "canonical",
                 llm: dict | None = None, prompts: dict | None = None, task_files: list[dict] | None = None):
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        from search.structural import StructuralProposer

        self.task = _task(task_id, task_files)
        self.seed = seed
        self.variant = variant
        self.structural = StructuralProposer(seed)
        self.llm = self.builder = None
        if llm is not None:
            from search.llm_config import LLMConfig
            from search.llm_proposer import LLMProposer
            from search.prompt_builder import PromptBuilder, PromptConfig

            self.llm = LLMProposer(LLMConfig.from_dict(llm), seed=seed)
            self.builder = PromptBuilder(PromptConfig.from_dict(prompts))

    def propose(self, request: dict) -> dict:
        """request: kind ("structural" | "llm"), id, generation, slot, parent and inspirations
        (candidate dicts with a "verdict" key, or None), model (llm), negative (list of str)."""
        from search.candidate import Candidate

        parent = Candidate.from_dict(_strip(request["parent"])) if request.get("parent") else None
        inspirations = [Candidate.from_dict(_strip(p)) for p in request.get("inspirations", [])]
        rng = np.random.default_rng([self.seed, request["generation"], request["slot"]])
        prompt = None
        if request["kind"] == "structural":
            cand = self.structural.propose(self.task, parent=parent, rng=rng)
        else:
            cand, prompt = self._llm_proposal(request, parent, inspirations)
        out = cand.to_dict()
        if prompt is not None:  # the journal keeps what the model was asked (the system prompt is in prompt_id)
            out["prompt"] = prompt.messages[-1]["content"]
        out["id"] = request["id"]
        out.setdefault("created", time.time())
        return out

    def _llm_proposal(self, request: dict, parent, inspirations):
        from search.negative import NegativeBlock
        from search.prompt_builder import ProgramView
        from tasks.structure import analyse

        if self.llm is None:
            raise RuntimeError("an llm proposal was requested but the run has no llm section")
        view = ProgramView.of(parent, request["parent"].get("verdict")) if parent is not None else None
        views = [ProgramView.of(c, p.get("verdict")) for c, p in zip(inspirations, request.get("inspirations", []))]
        items = list(request.get("negative") or [])
        negative = NegativeBlock(used=True, items=tuple(items)) if items else None
        facts = _structure_facts(self.task, analyse) if self.builder.config.hints else None
        prompt = self.builder.evolve(self.task.description(self.variant), view, views, structure=facts, negative=negative)
        return self.llm.propose(self.task.id, prompt, parent, inspirations, model=request.get("model")), prompt


class EvaluatorWorker:
    """Judges candidates with its own warm sandbox."""

    def __init__(self, task_id: str, options: dict, task_files: list[dict] | None = None):
        from evaluators.sandbox import Sandbox
        from evaluators.verify import VerifyOptions

        self.task = _task(task_id, task_files)
        self.options = VerifyOptions(**options)
        self.sandbox = Sandbox()
        self.where = f"{socket.gethostname()}:{os.getpid()}"

    def evaluate(self, candidate: dict) -> dict:
        """{"id", "verdict" (Verdict dict), "seconds", "worker"} for one candidate dict with code."""
        from evaluators.submission import Submission
        from evaluators.verify import verify

        start = time.perf_counter()
        sub = Submission(candidate["code"], candidate.get("tractable_class"), candidate.get("complexity_O"),
                         candidate.get("confidence"), candidate.get("justification"))
        from search.database import score_of

        verdict = verify(self.task, sub, self.options, self.sandbox).to_dict()
        return {"id": candidate["id"], "verdict": verdict, "score": [float(x) for x in score_of(verdict, candidate["code"])],
                "seconds": time.perf_counter() - start, "worker": self.where}

    def close(self) -> None:
        self.sandbox.close()


def _task(task_id: str, task_files: list[dict] | None):
    """The task, after registering the user task files shipped with the request: a worker is its
    own process (maybe on another node), so it gets the files' text, not their paths."""
    from tasks.registry import get_task, register_task_payloads

    register_task_payloads(task_files)
    return get_task(task_id)


def _strip(d: dict) -> dict:
    return {k: v for k, v in d.items() if k not in ("verdict", "score", "island", "features", "signature")}


def _structure_facts(task, analyse) -> dict:
    n = max(task.probe_sizes)
    s = analyse(task.to_model(task.probe_params(n, 0, 0), n))
    return {"planar": s.planar, f"treewidth upper bound at n={n}": s.treewidth,
            f"pathwidth upper bound at n={n}": s.pathwidth, "has fields": s.has_fields,
            "frustrated": s.frustrated, "max interaction order": s.max_order}
