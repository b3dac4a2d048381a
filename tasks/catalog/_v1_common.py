"""Shared pieces of the StatMechBench-v1 task modules (T07-T16); defines no task."""

from __future__ import annotations

V1_CITATION = ("StatMechBench-v1 task card, written for this project in the style of the StatMechBench-v0 "
               "cards (Appendix B of 'Exploring Structures in Physics Problems: Can AI Agents Discover "
               "Statistical Mechanical Mappings?').")
