"""The structural proposer: structure analysis -> plan -> program, with no language model.

``StructuralProposer(seed).propose(task, parent=None)`` reads the task's family of models through
:func:`tasks.family.family_structure` (chain, planarity, fields, widths, rank-one blocks,
lattice and boundary) and the task's reader, lists the templates that apply (``plans_for``),
and writes the best plan as an ordinary self-contained candidate program: the template's source,
the task's reader, the plan's options as a literal, and ``log_Z`` / ``Z_efficient`` on top. The
claims (class, complexity, confidence, justification) come from the template and the analysis,
and are honest: an exponential method says so.

With a parent whose plan is recorded (``Candidate.prompt_meta["plan"]``), ``propose`` mutates
that plan: it changes one choice of the same template (ordering, form, solver, chunk size,
contraction order, ...) or switches to another applicable template. Everything is deterministic
for a given seed.

Known programs. The plans are few, so random mutations of the best parents soon repeat judged
programs (P01: 25 of 32 proposals were repeats, and a generation of four slots held one program
to judge, which left an evaluator idle). Given the normalised code hashes the run already knows,
``propose`` draws mutations until one writes a program not among them (at most ``FRESH_DRAWS``).
The slots of one generation that mutate the same parent draw from one shared generator and slot
k takes the k-th new program found, so they do not write the same one; without a parent, slot k
takes the k-th best plan not yet known. Told nothing, ``propose`` makes the one draw it always did.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from search.candidate import Candidate
from search.database.dedup import normalised_hash
from search.structural import readers
from search.structural.templates import Claims, all_templates, default_options, get_template, template_names
from tasks.base import Task
from tasks.family import FamilyStructure, family_structure

PROPOSER = "structural"
#: family sizes up to this are read for the templates' claims, which measure their own orders' widths
CLAIM_MAX_N = 10_000
#: probability that a mutation changes an option of the parent's template rather than the template
OPTION_MUTATION_P = 0.7
#: mutations drawn in search of a program the run does not know yet, before a repeat is returned
FRESH_DRAWS = 24

DRIVER = '''

_OPTIONS = {options!r}


def log_Z(params, n):
    """Natural log of the partition function for the task's params at size n."""
    n = int(n)
    read = _read(params, n)
    edges, J, h, rank_one, positions = read[:5]
    constant = float(read[5]) if len(read) > 5 else 0.0   # H gains -constant: log Z gains beta * constant
    beta = float(params["beta"])
    return float(_method_log_z(edges, J, h, rank_one, positions, beta, n, _OPTIONS)) + beta * constant


def Z_efficient(params, n):
    """Z itself (OverflowError once Z exceeds a float: log_Z has no such limit)."""
    return math.exp(log_Z(params, n))
'''


@dataclass(frozen=True)
class Instance:
    """One model of the family as the templates see it: merged pair couplings (i < j) and the drawing."""

    n: int
    edges: np.ndarray          # (m, 2) int64, zero couplings dropped
    positions: np.ndarray | None


@dataclass(frozen=True)
class TaskView:
    """What the templates need to know about a task's family of models."""

    task_id: str
    family: FamilyStructure
    max_order: int
    has_fields: bool
    planar: bool | None
    chain: bool
    rank_one: bool             # the reader gives rank-one blocks
    rank_one_uniform: bool     # exactly one block with |u_i| constant on its support
    has_pairs: bool            # the reader gives non-zero pair couplings
    has_positions: bool        # the reader gives a straight-line embedding at every probe size
    lattice_side: bool         # every instance is an L x L lattice (n = L^2)
    torus: bool
    #: the family's models up to CLAIM_MAX_N spins (empty: the templates claim from the family's widths)
    instances: tuple[Instance, ...] = field(default=(), compare=False, repr=False)
    #: the templates' measured widths per (template, option), filled on first use
    widths: dict = field(default_factory=dict, compare=False, repr=False)


def build_view(task: Task, seed: int = 0) -> TaskView:
    """Analyse the task's family (cached by tasks.family) and run its reader at the probe sizes."""
    fam = family_structure(task, seed=seed)
    outs = [readers.read(task, task.probe_params(n, seed, 0), n) for n in task.probe_sizes]
    rank_one = any(len(o[3]) for o in outs)
    uniform = all(len(o[3]) == 1 and _constant_magnitude(o[3][0][0]) for o in outs)
    has_pairs = any(len(o[1]) and np.any(np.asarray(o[1]) != 0.0) for o in outs)
    shapes = [s.lattice_shape for s in fam.structures]
    square = all(s is not None and s[0] == s[1] and s[0] > 1 for s in shapes)
    return TaskView(
        task_id=task.id, family=fam, max_order=fam.max_order,
        has_fields=fam.has_fields or any(np.any(np.asarray(o[2]) != 0.0) for o in outs),
        planar=fam.planar, chain=fam.chain, rank_one=rank_one, rank_one_uniform=rank_one and uniform,
        has_pairs=bool(has_pairs), has_positions=all(o[4] is not None for o in outs),
        lattice_side=square, torus=fam.toroidal,
        instances=() if rank_one else tuple(_instance(task, n, seed) for n in fam.sizes if n <= CLAIM_MAX_N),
    )


def _instance(task: Task, n: int, seed: int) -> Instance:
    """The reader's model at size n on the parameters the family analysis used."""
    out = readers.read(task, task.probe_params(n, seed, 0), n)
    edges = readers.normal_form(n, out[0], out[1], out[2], [])[0]
    return Instance(n, edges, None if out[4] is None else np.asarray(out[4], dtype=np.float64).reshape(n, 2))


def _constant_magnitude(u) -> bool:
    a = np.abs(np.asarray(u, dtype=np.float64))
    a = a[a != 0.0]
    return bool(len(a) == 0 or np.allclose(a, a[0], rtol=1e-12, atol=0.0))


@dataclass(frozen=True)
class Plan:
    """A template with its choices, and the claims it makes."""

    template: str
    options: dict = field(hash=False)
    claims: Claims = field(hash=False)

    def to_dict(self) -> dict:
        c = self.claims
        return {"template": self.template, "options": dict(self.options),
                "claims": {"tractable_class": c.tractable_class, "complexity_O": c.complexity_O,
                           "confidence": c.confidence, "justification": c.justification, "cost_rank": c.cost_rank}}

    @classmethod
    def from_dict(cls, d: dict) -> "Plan":
        return cls(d["template"], dict(d["options"]), Claims(**d["claims"]))


def make_plan(view: TaskView, template: str, options: dict | None = None) -> Plan:
    tpl = get_template(template)
    opts = {**default_options(tpl.OPTION_SPACE), **(options or {})}
    return Plan(template, opts, tpl.claims(view, opts))


def _rank(plan: Plan) -> tuple:
    return (plan.claims.cost_rank, -plan.claims.confidence, template_names().index(plan.template))


def applicable_templates(view: TaskView) -> list[str]:
    return [t.NAME for t in all_templates() if t.applies(view) is None]


def assemble(task: Task, plan: Plan) -> str:
    """The candidate program of ``plan`` for ``task``."""
    tpl = get_template(plan.template)
    c = plan.claims
    header = (f'"""Structural proposer: the {plan.template} plan for task {task.id}.\n\n'
              f"Options: {dict(plan.options)}. Claims: {c.tractable_class}, {c.complexity_O}.\n"
              f'"""\n\nimport math\n')
    return "\n".join([header, tpl.source(plan.options), "", readers.reader_source(task)]) + \
        DRIVER.format(options=dict(plan.options))


class StructuralProposer:
    """Offline proposer: programs composed from transformation templates chosen by structure."""

    name = PROPOSER

    def __init__(self, seed: int = 0):
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        self._views: dict[str, TaskView] = {}
        self._hashes: dict[tuple, str] = {}   # (task, plan key) -> normalised hash of its program

    def view(self, task: Task) -> TaskView:
        if task.id not in self._views:
            self._views[task.id] = build_view(task, seed=self.seed)
        return self._views[task.id]

    def plans_for(self, task: Task) -> list[Plan]:
        """One plan per applicable template (default options), best first."""
        view = self.view(task)
        return sorted((make_plan(view, name) for name in applicable_templates(view)), key=_rank)

    def code_hash(self, task: Task, plan: Plan) -> str:
        """The normalised hash of ``plan``'s program (what the engine deduplicates by), memoised."""
        key = (task.id, plan.template, tuple(sorted(plan.options.items())))
        if key not in self._hashes:
            self._hashes[key] = normalised_hash(assemble(task, plan))
        return self._hashes[key]

    def propose(self, task: Task, parent: Candidate | None = None, rng: np.random.Generator | None = None,
                known: frozenset[str] = frozenset(), rank: int = 0,
                siblings: np.random.Generator | None = None) -> Candidate:
        """The best plan for ``task`` (the ``rank``-th best not in ``known``), or a mutation of
        ``parent``'s plan (one whose program is not in ``known``, while the draws find one; with
        ``siblings``, the rank-th such, see ``_fresh_mutation``)."""
        rng = self.rng if rng is None else rng
        cid = f"{int(rng.integers(1 << 48)):012x}"
        try:
            readers.reader_source(task)
            plans = self.plans_for(task)
        except (readers.NoReader, ValueError) as exc:
            return Candidate.failed(cid, task.id, f"structural proposer: {exc}", proposer=PROPOSER)
        if not plans:
            return Candidate.failed(cid, task.id, "structural proposer: no template applies to this task",
                                    proposer=PROPOSER)
        parent_plan = _parent_plan(parent)
        if parent_plan is None:
            plan, operation = self._initial(task, plans, known, rank)
        else:
            plan, operation = self._fresh_mutation(task, parent_plan, rng, known, siblings, rank)
        c = plan.claims
        return Candidate(
            id=cid, task=task.id, code=assemble(task, plan), tractable_class=c.tractable_class,
            complexity_O=c.complexity_O, confidence=c.confidence, justification=c.justification,
            proposer=PROPOSER, parent_ids=[parent.id] if parent is not None else [],
            prompt_meta={"plan": plan.to_dict(), "operation": operation},
            notes=[f"plans available: {', '.join(p.template for p in plans)}"],
        )

    def _initial(self, task: Task, plans: list[Plan], known: frozenset[str], rank: int) -> tuple[Plan, str]:
        """Without a parent: the ``rank``-th best plan whose program is not known (the best plan when
        every one is)."""
        unknown = [p for p in plans if not known or self.code_hash(task, p) not in known]
        plan = unknown[rank % len(unknown)] if unknown else plans[0]
        if plan is plans[0]:
            return plan, "initial: best plan from the structure analysis"
        return plan, (f"initial: plan {plans.index(plan) + 1} of {len(plans)} from the structure analysis "
                      f"(slot {rank}; the better ones are known or taken by earlier slots)")

    def _fresh_mutation(self, task: Task, plan: Plan, rng: np.random.Generator, known: frozenset[str],
                        siblings: np.random.Generator | None, rank: int) -> tuple[Plan, str]:
        """A mutation of ``plan`` whose program is not in ``known``; the slot's own first draw when
        nothing is known or no draw finds one. ``siblings``: a generator the slots of one generation
        with this parent share: their draws list the same new programs in the same order and slot
        ``rank`` takes the rank-th (modulo how many there are), so they do not write the same one."""
        first = self.mutate(task, plan, rng)
        if not known:
            return first
        draws = siblings if siblings is not None else rng
        found: dict[str, tuple[Plan, str]] = {}   # new programs by hash, in the order drawn
        drawn = first if siblings is None else self.mutate(task, plan, draws)
        for _ in range(FRESH_DRAWS):
            code = self.code_hash(task, drawn[0])
            if code not in known:
                found.setdefault(code, drawn)
                if len(found) > rank:
                    break
            drawn = self.mutate(task, plan, draws)
        return list(found.values())[rank % len(found)] if found else first

    def mutate(self, task: Task, plan: Plan, rng: np.random.Generator) -> tuple[Plan, str]:
        """A different plan: one option of the same template changed, or another applicable template."""
        view = self.view(task)
        names = applicable_templates(view)
        space = get_template(plan.template).OPTION_SPACE if plan.template in names else {}
        option_moves = [(k, v) for k, values in space.items() for v in values if plan.options.get(k) != v]
        switches = [n for n in names if n != plan.template]
        if option_moves and (not switches or rng.random() < OPTION_MUTATION_P):
            key, value = option_moves[int(rng.integers(len(option_moves)))]
            new = make_plan(view, plan.template, {**plan.options, key: value})
            return new, f"mutate {plan.template}: {key} {plan.options.get(key)!r} -> {value!r}"
        if switches:
            # with the new template's options drawn too: with its defaults only, a parent had a
            # handful of distinct children (5 on P01) and most proposals repeated a judged program
            name = switches[int(rng.integers(len(switches)))]
            options = {k: values[int(rng.integers(len(values)))]
                       for k, values in get_template(name).OPTION_SPACE.items()}
            return make_plan(view, name, options), f"switch template: {plan.template} -> {name} {options}"
        return make_plan(view, plan.template, plan.options), "no alternative: the same plan again"


def _parent_plan(parent: Candidate | None) -> Plan | None:
    if parent is None:
        return None
    raw = (parent.prompt_meta or {}).get("plan")
    if not isinstance(raw, dict):
        return None
    try:
        return Plan.from_dict(raw)
    except (KeyError, TypeError):
        return None
