"""The LLM proposer behind the proposer protocol (``proposers: {llm: {weight: ...}}``).

It turns a :class:`~search.records.ProposalRequest` into a prompt (the project's evolve prompt:
the interface generated from the task, parent with its verdict, inspirations, failed checks,
negative block, optional structural hints; or, for ``style="paper"``, StatMechBench-v0's initial /
feedback prompt) and asks the model the request names (the engine's choice) through
:class:`search.llm.client.LLMClient` (litellm). The run's ``llm:`` section says which models and
how; ``prompts:`` how prompts are built. The candidate carries the system prompt's text to the
engine, which journals each distinct text once.

With ``prompts.output_format: chain`` the model answers with a derivation (a chain of actions and a
solver in the JSON schema of :mod:`search.derivation.llm_format`) instead of code: the prompt lists
the actions and solvers the structure analysis admits for the task, a parent that came from a chain
is shown by its chain, and the answer is checked step by step and rendered into the program here,
in the proposer (its own sandbox runs the step checks). The candidate carries the checked chain in
``derivation``, as the derivation proposer's do; a malformed answer or a refused step is a failed
candidate whose ``parse_error`` names the step and its check.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluators.sandbox import Sandbox
from search.candidate import Candidate
from search.derivation.feedback import step_lines
from search.derivation.llm_format import chain_answer, prompt_text, propose_from_text
from search.derivation.proposer import DerivationProposer
from search.interface import task_interface
from search.llm.client import LLMClient
from search.negative import NegativeBlock
from search.prompt_builder import BuiltPrompt, ProgramView, PromptBuilder
from search.prompts import text_digest
from search.proposers import ProposerContext, register
from search.records import JudgedProgram, ProposalRequest
from tasks.base import Task
from tasks.structure import analyse


@dataclass(frozen=True)
class LLMOptions:
    weight: float = 0.0


@register
class LLM:
    name = "llm"
    Options = LLMOptions
    requires = ("llm",)          # run config sections it cannot work without
    calls_models = True          # the engine picks its model per slot and gives it the negative block

    def __init__(self, task: Task, options: LLMOptions, context: ProposerContext):
        if context.llm is None:
            raise ValueError("the llm proposer needs the run's `llm:` section (models to call)")
        self.task = task
        self.variant = context.variant
        self.client = LLMClient(context.llm, seed=context.seed)
        self.builder = PromptBuilder(context.prompts)
        self.seed = context.seed
        self._facts: dict | None = None
        self._interface: str | None = None
        self._derivation: str | None = None
        self._checker: DerivationProposer | None = None

    def propose(self, request: ProposalRequest) -> Candidate:
        prompt = self.prompt(request)
        parent = request.parent.candidate if request.parent is not None else None
        read = self.read_chain if prompt.meta.get("format") == "chain" else None
        cand = self.client.propose(self.task.id, prompt, parent, [p.candidate for p in request.inspirations],
                                   model=request.model, read=read)
        cand.id = request.id
        cand.prompt = prompt.messages[-1]["content"]
        cand.system_prompt = prompt.messages[0]["content"]
        cand.prompt_meta["system"] = text_digest(cand.system_prompt)
        return cand

    def prompt(self, request: ProposalRequest) -> BuiltPrompt:
        description = self.task.description(self.variant)
        parent = request.parent
        if request.style == "paper":
            if parent is None:
                return self.builder.paper_initial(description)
            return self.builder.paper_feedback(description, parent.candidate.response or "", parent.feedback)
        negative = NegativeBlock(used=True, items=tuple(request.negative)) if request.negative else None
        facts = self.structure_facts() if self.builder.config.hints else None
        interface = self.interface() if self.builder.config.interface else None
        chain = self.builder.config.output_format == "chain"
        return self.builder.evolve(description, _view(parent) if parent is not None else None,
                                   [_view(p) for p in request.inspirations], structure=facts, negative=negative,
                                   interface=interface, derivation=self.derivation_block() if chain else None)

    def derivation_block(self) -> str:
        """The chain format's block (schema, admitted actions and solvers), once per worker."""
        if self._derivation is None:
            self._derivation = prompt_text(self.task, seed=self.seed)
        return self._derivation

    def read_chain(self, text: str, cid: str) -> Candidate:
        """The candidate of a derivation answer: every step checked on the task, then rendered."""
        if self._checker is None:     # a sandbox only for runs that ask for chains
            self._checker = DerivationProposer(self.seed, sandbox=Sandbox())
        return propose_from_text(self.task, text, cid, checker=self._checker)

    def close(self) -> None:
        """Stop the sandbox of the step checks, if one was started (it also stops at exit)."""
        if self._checker is not None:
            self._checker.sandbox.close()

    def interface(self) -> str:
        """The interface block, read from the task's own samples once per worker ('' when a user
        task's sampler or model cannot give it: the prompt then goes without the block)."""
        if self._interface is None:
            try:
                self._interface = task_interface(self.task, self.seed).text()
            except Exception:  # noqa: BLE001 - a user task's sampler must not stop every proposal
                self._interface = ""
        return self._interface

    def structure_facts(self) -> dict:
        """Structural facts about the task at its largest probe size (prompts' ``hints``)."""
        if self._facts is None:
            n = max(self.task.probe_sizes)
            s = analyse(self.task.to_model(self.task.probe_params(n, 0, 0), n))
            self._facts = {"planar": s.planar, f"treewidth upper bound at n={n}": s.treewidth,
                           f"pathwidth upper bound at n={n}": s.pathwidth, "has fields": s.has_fields,
                           "frustrated": s.frustrated, "max interaction order": s.max_order}
        return self._facts


def _view(program: JudgedProgram) -> ProgramView:
    """The program as a prompt shows it; with the chain it came from, when it has one (a model's
    derivation answer that was refused is shown as answered, with the steps checked before it)."""
    cand = program.candidate
    plan = (cand.prompt_meta or {}).get("derivation_plan")
    if isinstance(plan, dict) and cand.derivation:
        chain = chain_answer(plan)
    elif cand.response_format == "derivation_json" and cand.response:
        chain = cand.response.strip()
    else:
        return ProgramView.of(cand, program.verdict)
    steps = "\n".join(f"- {line}" for line in step_lines(cand.derivation, leaves=True)) or "(none was checked)"
    return ProgramView.of(cand, program.verdict, chain=chain, chain_steps=steps)
