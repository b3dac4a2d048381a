"""The structural proposer: candidate programs composed from transformation templates chosen by
the structure analysis of a task, with no language model (see ``proposer.py``)."""

from search.structural.proposer import Plan, StructuralProposer, TaskView, assemble, build_view

__all__ = ["Plan", "StructuralProposer", "TaskView", "assemble", "build_view"]
