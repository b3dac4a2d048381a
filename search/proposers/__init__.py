"""Proposers: whatever writes candidate programs, behind one protocol, registered by name.

A proposer is built once per worker process for one task and answers
:class:`~search.records.ProposalRequest` s with :class:`~search.candidate.Candidate` s (a failed
proposal is a Candidate with ``parse_error``, never an exception). The engine draws a proposer
for every slot by the mixing weights of the run config's ``proposers:`` section, where each
proposer has its own typed sub-section (its ``Options`` dataclass, which has a ``weight``)::

    proposers:
      structural: {weight: 1.0}
      llm: {weight: 0.5}

A new proposer is one module in this package: a class with ``name``, ``Options`` and
``propose``, decorated with :func:`register`. Nothing else changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol

from search.candidate import Candidate
from search.llm.config import LLMConfig
from search.prompt_builder import PromptConfig
from search.records import ProposalRequest
from tasks.plugins import Registry
from tasks.base import Task


@dataclass(frozen=True)
class ProposerContext:
    """What every proposer may use besides its own options: the run seed, the task description
    variant shown to models, and the run's shared LLM and prompt settings (``llm:``, ``prompts:``)."""

    seed: int = 0
    variant: str = "canonical"
    llm: LLMConfig | None = None
    prompts: PromptConfig = PromptConfig()


class Proposer(Protocol):
    name: ClassVar[str]
    Options: ClassVar[type]     # its config section; has ``weight: float``
    # declared capabilities (a proposer that leaves one out gets the default in CAPABILITIES):
    requires: ClassVar[tuple[str, ...]]   # run config sections it needs when its weight is > 0
    calls_models: ClassVar[bool]          # it calls language models: the engine chooses the model of each of
                                          # its slots, hands it the negative-prompting block, and ends the run
                                          # when every such proposal of a generation failed at the provider
    uses_known: ClassVar[bool]            # it is told the normalised hashes of every program the run has

    def __init__(self, task: Task, options, context: ProposerContext): ...

    def propose(self, request: ProposalRequest) -> Candidate:
        """One candidate with ``id == request.id``; failures are candidates with ``parse_error``."""


#: the capability flags and their values for a proposer that does not declare them
CAPABILITIES = {"requires": (), "calls_models": False, "uses_known": False}
_registry = Registry(__name__, "proposer", required=("Options", "propose"), defaults=CAPABILITIES)
register = _registry.register  # class decorator: available under cls.name
proposer_class = _registry.lookup  # the class registered under a name (KeyError naming the known ones)
proposer_names = _registry.names  # every registered name, after importing the package's modules
