"""Answers that are not exact programs, from the chains a derivation explored: when nothing polynomial is
exact, the checked reduction (the best exact plan's chain) followed by rigorous bounds or by a converged
approximation is the useful output (issue 35, Tier 3).

- bounds: the mean-field lower bound and the tree-reweighted upper bound on the same state, one program
  defining log_Z_bounds(params, n) -> (lo, hi) (search/derivation/solvers/mean_field.py,
  tree_reweighted.py);
- approximation: the boundary MPS at a ladder of bond dimensions, log_Z_approx(params, n) -> [[chi, value],
  ...] (search/derivation/solvers/boundary_mps.py), where the model is planar or near-planar.

Each answer is taken at the node of the best exact plan when its solvers apply there (so the reduction
found for the exact program is reused), else at the shallowest explored node where they apply. Its chain's
steps were checked by the search; the answer itself is checked in the sandbox on the derivation's check
instances against the task's references (bounds hold up to rounding; the approximation's last value is
within HONESTY_FACTOR times its last change), as the verifier will judge it (evaluators/bounds_check.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evaluators.answer_kinds import item_calls, read_answer, wrapped_code
from evaluators.bounds_check import Case, judge_instance
from evaluators.checks.complexity_claim import ClaimParseError, parse_claim
from evaluators.sandbox import Limits
from search.derivation import render
from search.derivation.actions import get_action
from search.derivation.record import Check, _plain
from search.derivation.solvers import ANSWER_SOLVERS

#: the answer kinds a derivation offers, with the solvers each needs (in the program's order)
KINDS = (("bounds", ("mean_field", "tree_reweighted")), ("approximation", ("boundary_mps",)))


@dataclass
class AnswerPlan:
    """One non-exact answer: its chain, its solvers with their options, its claims, program and check."""

    kind: str
    actions: tuple
    solvers: tuple                          # ((name, options), ...)
    complexity: str
    justification: str
    program: str = ""
    check: Check = field(default_factory=lambda: Check(None))

    @property
    def key(self) -> str:
        return " -> ".join([a for a, _ in self.actions] + ["+".join(name for name, _ in self.solvers)])

    def to_dict(self) -> dict:
        return _plain({"kind": self.kind, "actions": [[a, o] for a, o in self.actions],
                       "solvers": [[s, o] for s, o in self.solvers], "complexity": self.complexity,
                       "check": {"passed": self.check.passed, "sandbox": self.check.sandbox,
                                 "instances": self.check.instances, "detail": self.check.detail}})


def _largest(claims: list[str], lattice: bool) -> str:
    def rank(text):
        try:
            g = parse_claim(text, lattice)
            return (g.rank, g.rate)
        except ClaimParseError:
            return (9, 0.0)
    return max(claims, key=rank)


def derive_answers(ctx, nodes, best_node, source: str) -> list[AnswerPlan]:
    """The answers of each kind at the first node (the best exact plan's, then those explored) where
    their solvers apply, rendered and checked."""
    out = []
    for kind, names in KINDS:
        solvers = [ANSWER_SOLVERS[name] for name in names]
        node = next((nd for nd in [best_node, *nodes] if nd is not None
                     and all(s.applies(nd.view) is None for s in solvers)), None)
        if node is None:
            continue
        pieces = [(s, {k: v[0] for k, v in s.OPTION_SPACE.items()}) for s in solvers]
        claims = [s.claims(node.view, o) for s, o in pieces]
        costs = [c[1] for c in claims] + [get_action(a).COST for a, _ in node.chain]
        plan = AnswerPlan(kind, tuple(node.chain), tuple((s.NAME, o) for s, o in pieces),
                          _largest(costs, ctx.task.square_lattice), " ".join(c[2] for c in claims))
        actions = [(get_action(a), o) for a, o in node.chain]
        chain = " -> ".join([s.action for s in node.steps] + [plan.key.split(" -> ")[-1]])
        header = (f'"""Derivation proposer: task {ctx.task.id}, {source}; an answer of kind {kind}, not an exact '
                  f"value.\n\nChain: {chain}.\nClaims: no_efficient_known, {plan.complexity}.\n"
                  + "".join(f"  step {k}: {s.action} - {s.summary}\n" for k, s in enumerate(node.steps))
                  + "".join(f"  {s.NAME}: {s.SUMMARY}\n" for s in solvers) + '"""')
        plan.program = render.answer_program(header, ctx.reader.source, actions, kind, pieces)
        plan.check = check_answer(ctx, plan)
        out.append(plan)
    return out


def check_answer(ctx, plan: AnswerPlan) -> Check:
    """The rendered answer in the sandbox on the check instances, judged as the verifier judges it."""
    labels = [f"n={i.n}" for i in ctx.instances]
    if ctx.sandbox is None or not ctx.instances:
        return Check(None, instances=labels, detail="no sandbox or no check instance")
    calls = [c for i in ctx.instances for c in item_calls(plan.kind, i.params, i.n)]
    report = ctx.sandbox.run(wrapped_code(plan.program, plan.kind), calls, Limits(timeout_s=120.0, cpu_s=125))
    per = len(item_calls(plan.kind, {}, 1))
    worst, failure = 0.0, None
    for k, inst in enumerate(ctx.instances):
        got = report.results[k * per:(k + 1) * per]
        if not got:
            return Check(False, instances=labels, detail=f"the answer did not run in the sandbox: {report.error}")
        judged = judge_instance(plan.kind, Case(inst.n, inst.params, "probe", "typical", "", inst.reference),
                                read_answer(plan.kind, got))
        if judged.error is not None or judged.valid is False:
            failure = failure or (f"at n = {inst.n}: " + (judged.error or "the bounds do not hold" if plan.kind == "bounds"
                                                          else judged.error or "the claimed convergence is not real"))
        worst = max(worst, judged.violation or 0.0, judged.error_per_spin or 0.0)
    return Check(failure is None, sandbox=worst, instances=labels, detail=failure)
