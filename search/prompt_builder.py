"""Build chat messages from the template files.

Two families of prompts:

- the paper's (StatMechBench-v0, Appendix A): system prompt with the class library, the
  initial user prompt, the feedback user prompt; each request is the system prompt plus one
  user message;
- ours (``evolve``): our system prompt (the paper's schema and class library with our rules:
  ``log_Z``, exactness at every beta, the sandbox's import allowlist) plus a user message
  assembled from the task description, the interface block generated from the task
  (:mod:`search.interface`), optional structural facts (config ``hints``), the parent program
  with its Verdict summary, inspiration programs with theirs, the full report of every failed
  check, the negative-prompting block, a goal line that fits what is shown (a fresh draft, a
  mutation of the parent, a crossover with other programs) and the output-format instructions
  (full JSON, diffs, or a chain of derivation actions instead of code: ``chain``, with the block
  of :func:`search.derivation.llm_format.prompt_text` and the parent's chain when it has one).

Each :class:`BuiltPrompt` carries a ``prompt_id`` naming the templates and their digests and
a ``meta`` dict (plain values) recording how it was built, e.g. whether the negative block was
included; the proposer copies both into the Candidate. Gold answers never enter a prompt:
nothing here reads ``task.gold``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evaluators.sandbox import ALLOWED_IMPORTS
from evaluators.verdict import Verdict
from search.negative import NegativeBlock, NegativeMemory, NegativePolicy
from search.prompts import Templates, fill, load_templates

OUTPUT_FORMATS = ("full", "diff", "chain")
#: what an evolve prompt asks for: a program from scratch, a revision of the parent, or a revision that borrows
MODES = ("fresh", "mutation", "crossover")


@dataclass(frozen=True)
class PromptConfig:
    directory: str | None = None  # overriding template directory
    hints: bool = False  # include structural facts about the task
    interface: bool = True  # include the interface generated from the task (search/interface.py)
    output_format: str = "full"  # "full" | "diff" | "chain" (a derivation: search/derivation/llm_format.py)
    negative: NegativePolicy = field(default_factory=NegativePolicy)
    max_inspirations: int = 2

    def __post_init__(self):
        if self.output_format not in OUTPUT_FORMATS:
            raise ValueError(f"output_format must be one of {OUTPUT_FORMATS}, got {self.output_format!r}")

    @classmethod
    def from_dict(cls, d: dict | None) -> "PromptConfig":
        d = dict(d or {})
        d["negative"] = NegativePolicy.from_dict(d.get("negative"))
        return cls(**d)


@dataclass(frozen=True)
class BuiltPrompt:
    messages: list
    prompt_id: str
    meta: dict


@dataclass(frozen=True)
class ProgramView:
    """A program shown in a prompt: its code, claims and (if evaluated) its Verdict. ``chain`` (the
    derivation answer it was rendered from, in the chain schema) and ``chain_steps`` (its steps as
    checked, one per line) are shown instead of the code in the chain format; ``failure`` says why a
    proposal yielded no program to judge."""

    id: str
    code: str
    tractable_class: str | None = None
    complexity_O: str | None = None
    confidence: float | None = None
    verdict: Verdict | None = None
    chain: str | None = None
    chain_steps: str | None = None
    failure: str | None = None

    @classmethod
    def of(cls, candidate, verdict: Verdict | None = None, **extra) -> "ProgramView":
        """From a :class:`search.candidate.Candidate` (or anything with the same attributes)."""
        return cls(candidate.id, candidate.code or "", candidate.tractable_class, candidate.complexity_O,
                   candidate.confidence, verdict, failure=getattr(candidate, "parse_error", None), **extra)

    def claims(self) -> dict:
        return {"tractable_class": self.tractable_class, "complexity_O": self.complexity_O,
                "confidence": self.confidence}


class PromptBuilder:
    def __init__(self, config: PromptConfig = PromptConfig(), templates: Templates | None = None):
        self.config = config
        self.templates = templates or load_templates(config.directory)

    # -- the paper's prompts ------------------------------------------------------------------
    def system(self) -> str:
        return fill(self.templates["system"], LIBRARY=self.templates["library"])

    def system_evolve(self) -> str:
        return fill(self.templates["system_evolve"], LIBRARY=self.templates["library"],
                    ALLOWED=", ".join(sorted(ALLOWED_IMPORTS)))

    def paper_initial(self, task_description: str) -> BuiltPrompt:
        user = fill(self.templates["initial"], task_description=task_description)
        return BuiltPrompt(self._messages(user), self.templates.prompt_id("system", "library", "initial"),
                           {"kind": "paper_initial", "format": "full", "negative": False, "hints": False})

    def paper_feedback(self, task_description: str, prev_response: str, feedback: str) -> BuiltPrompt:
        user = fill(self.templates["feedback"], task_description=task_description,
                    prev_json=prev_response or "", feedback=feedback or "")
        return BuiltPrompt(self._messages(user), self.templates.prompt_id("system", "library", "feedback"),
                           {"kind": "paper_feedback", "format": "full", "negative": False, "hints": False})

    # -- ours -----------------------------------------------------------------------------
    def evolve(self, task_description: str, parent: ProgramView | None = None, inspirations=(),
               structure: dict | None = None, negative: NegativeBlock | NegativeMemory | None = None,
               output_format: str | None = None, interface: str | None = None,
               derivation: str | None = None) -> BuiltPrompt:
        """Our prompt; ``interface`` is the text of :func:`search.interface.task_interface` (None: no block);
        ``derivation`` the chain format's block (:func:`search.derivation.llm_format.prompt_text`), which
        that format needs."""
        t = self.templates
        fmt = output_format or self.config.output_format
        if fmt not in OUTPUT_FORMATS:
            raise ValueError(f"output_format must be one of {OUTPUT_FORMATS}, got {fmt!r}")
        if fmt == "chain" and not derivation:
            raise ValueError("the chain output format needs the derivation block (llm_format.prompt_text)")
        if fmt == "diff" and (parent is None or not parent.code.strip()):
            fmt = "full"  # nothing to edit
        if isinstance(negative, NegativeMemory):
            negative = negative.block(self.config.negative)
        shown = list(inspirations)[: max(0, self.config.max_inspirations)]
        mode = "fresh" if parent is None else "crossover" if shown else "mutation"
        used_names = ["system_evolve", "library", "evolve", f"goal_{mode}", f"format_{fmt}"]
        interface_block = ""
        if interface:
            interface_block = fill(t["interface"], interface=interface.strip())
            used_names.append("interface")

        hints = bool(self.config.hints and structure)
        structure_block = ""
        if hints:
            facts = "\n".join(f"- {k}: {v}" for k, v in structure.items())
            structure_block = fill(t["structure"], facts=facts)
            used_names.append("structure")
        parent_block = failed_block = ""
        if parent is not None:
            if fmt == "chain" and parent.chain:
                parent_block = _derivation(t["parent_chain"], parent, parent_id=parent.id)
                used_names.append("parent_chain")
            else:
                parent_block = _program(t["parent"], parent, parent_id=parent.id)
                used_names.append("parent")
            checks = failed_checks_text(parent.verdict)
            if checks:
                failed_block = fill(t["failed_checks"], checks=checks)
                used_names.append("failed_checks")
        insp_block = ""
        if shown:
            as_chain = [fmt == "chain" and bool(p.chain) for p in shown]
            insp_block = "\n\n".join(
                _derivation(t["inspiration_chain"], p, index=str(i), candidate_id=p.id) if chain else
                _program(t["inspiration"], p, index=str(i), candidate_id=p.id)
                for i, (p, chain) in enumerate(zip(shown, as_chain), 1))
            used_names += ["inspiration"] if not all(as_chain) else []
            used_names += ["inspiration_chain"] if any(as_chain) else []
        neg_block = ""
        neg_used = bool(negative is not None and negative.used and negative.items)
        if neg_used:
            neg_block = fill(t["negative"], items="\n".join(f"- {x}" for x in negative.items))
            used_names.append("negative")
        slots = {"task_description": task_description, "interface_block": interface_block,
                 "structure_block": structure_block, "goal": t[f"goal_{mode}"],
                 "parent_block": parent_block, "inspirations_block": insp_block,
                 "failed_checks_block": failed_block, "negative_block": neg_block,
                 "output_format": fill(t["format_chain"], derivation=derivation.strip()) if fmt == "chain"
                 else t[f"format_{fmt}"]}
        # drop the empty blocks from the template first, so values (code) are never reflowed
        skeleton = _squeeze(fill(t["evolve"], **{k: "" for k, v in slots.items() if not v}))
        user = fill(skeleton, **{k: v for k, v in slots.items() if v})
        meta = {"kind": "evolve", "mode": mode, "format": fmt, "interface": bool(interface_block), "negative": neg_used,
                "negative_items": len(negative.items) if neg_used else 0, "hints": hints,
                "inspirations": len(shown), "parent": parent.id if parent is not None else None}
        return BuiltPrompt(self._messages(user, self.system_evolve()), t.prompt_id(*used_names), meta)

    def _messages(self, user: str, system: str | None = None) -> list:
        return [{"role": "system", "content": self.system() if system is None else system},
                {"role": "user", "content": user}]


def _program(template: str, p: ProgramView, **extra: str) -> str:
    conf = "unstated" if p.confidence is None else f"{p.confidence:g}"
    return fill(template, tractable_class=p.tractable_class or "unstated", complexity_O=p.complexity_O or "unstated",
                confidence=conf, verdict_summary=_summary(p), code=p.code.rstrip(), **extra)


def _derivation(template: str, p: ProgramView, **extra: str) -> str:
    """A program shown by the derivation it was rendered from (the chain format)."""
    return fill(template, tractable_class=p.tractable_class or "unstated", complexity_O=p.complexity_O or "unstated",
                verdict_summary=_summary(p), chain=p.chain or "", steps=p.chain_steps or "(not recorded)", **extra)


def _summary(p: ProgramView) -> str:
    if p.verdict is None and p.failure:
        return f"no program was judged: {p.failure}"
    return verdict_summary(p.verdict)


def _squeeze(text: str) -> str:
    """At most one blank line in a row (empty blocks leave gaps in the template)."""
    out, blank = [], 0
    for line in text.split("\n"):
        blank = blank + 1 if not line.strip() else 0
        if blank <= 1:
            out.append(line)
    return "\n".join(out).strip("\n")


def verdict_summary(v: Verdict | None) -> str:
    """One line from a Verdict."""
    if v is None:
        return "not evaluated"
    num = v.numerical
    parts = [v.verdict]
    if num.probes:
        err = num.max_rel_err
        parts.append(f"{num.failed}/{num.probes} probes failed"
                     + (f", max relative error {err:.1e}" if isinstance(err, (int, float)) else ""))
        parts.append(f"verified up to n={num.largest_n_verified}")
    cx = v.complexity
    if cx.measured is not None:
        honest = {True: "honest", False: "NOT honest", None: "undecided"}[cx.honest]
        parts.append(f"complexity claimed {cx.claimed}, measured {cx.measured} ({honest})")
    if v.class_.consistent is not None:
        parts.append("class claim consistent" if v.class_.consistent else "class claim inconsistent")
    checks = v.physics.checks
    if checks:
        parts.append(f"physics checks {sum(1 for c in checks if c.passed)}/{len(checks)} passed")
    if v.sandbox.violations:
        parts.append(f"sandbox violations: {', '.join(v.sandbox.violations)}")
    return "; ".join(parts)


def failed_checks_text(v: Verdict | None) -> str:
    """The full report of every failed check of a Verdict ('' for an accepted or missing one)."""
    if v is None or v.accepted:
        return ""
    fb = (v.feedback or "").strip()
    lines = [fb] if fb else []
    for reason in v.class_.reasons:
        if reason not in fb:
            lines.append(f"- class check: {reason}")
    for c in v.physics.checks:
        if not c.passed and c.detail not in fb:
            lines.append(f"- physics check {c.name}: {c.detail}")
    return "\n".join(lines)
