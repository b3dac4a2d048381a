"""Negative prompting: remember what was already tried and ask for something else.

Per run and per island, a :class:`NegativeMemory` keeps the class labels and method families
of earlier candidates and short descriptions of routes that failed: what was tried and the first
check that failed, with its reason (:func:`search.failure_reason.first_failure`). A :class:`NegativePolicy` decides when the block goes into a prompt (after so many
accepted candidates, or so many failures) and how many items it lists. The built block says
whether it was used, and candidates record it, so the diversity of proposals (distinct method
families and class labels per 100) can be compared with and without it
(:func:`diversity_per_100`).

:func:`classify_method` guesses a candidate's method family from its code: its structure (AST:
powers of two, loops with matrix products, determinants, einsum) and the routes it names, in any
of their usual spellings (Kac-Ward, Kac Ward, kac_ward, KacWard; Pfaffian, Kasteleyn, FKT; ...).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import lru_cache

from evaluators.verdict import Verdict
from search.failure_reason import first_failure

METHOD_FAMILIES = (
    "tensor network", "pfaffian/kac-ward", "gauge + magnetisation sum", "row transfer",
    "enumeration", "chain transfer matrix", "dynamic programming", "closed form", "other",
)


@dataclass(frozen=True)
class NegativePolicy:
    """When to include the block: from ``start_after_accepted`` accepted candidates or
    ``start_after_failures`` failed ones (whichever comes first; both None = from the first
    remembered approach on), listing at most ``max_items`` items."""

    enabled: bool = False
    start_after_accepted: int | None = 1
    start_after_failures: int | None = None
    max_items: int = 8

    def active(self, accepted: int, failures: int) -> bool:
        if not self.enabled:
            return False
        if self.start_after_accepted is None and self.start_after_failures is None:
            return True
        return ((self.start_after_accepted is not None and accepted >= self.start_after_accepted)
                or (self.start_after_failures is not None and failures >= self.start_after_failures))

    @classmethod
    def from_dict(cls, d: dict | None) -> "NegativePolicy":
        return cls(**(d or {}))


@dataclass(frozen=True)
class NegativeBlock:
    used: bool
    items: tuple[str, ...] = ()


@dataclass
class NegativeMemory:
    """What one island (or a whole run) has tried. Plain data; ``to_dict``/``from_dict`` for checkpoints."""

    approaches: dict = field(default_factory=dict)  # "label / family" -> {"tried", "accepted"}
    failed_routes: list = field(default_factory=list)  # short texts, newest last, no duplicates
    accepted: int = 0
    failures: int = 0

    def record(self, tractable_class: str | None, code: str | None, accepted: bool,
               verdict: Verdict | None = None, reason: str | None = None) -> None:
        """Remember one candidate: its Verdict when it was judged (the failed route names the first
        failed check), or ``reason`` for a proposal without code (a failure)."""
        family = classify_method(code) if code else None
        key = f"{tractable_class or 'unclaimed class'} / {family or 'no code'}"
        entry = self.approaches.setdefault(key, {"tried": 0, "accepted": 0})
        entry["tried"] += 1
        if accepted:
            self.accepted += 1
            entry["accepted"] += 1
            return
        self.failures += 1
        route = failed_route(tractable_class, family, first_failure(verdict) if verdict is not None else reason)
        if route and route not in self.failed_routes:
            self.failed_routes.append(route)

    def block(self, policy: NegativePolicy) -> NegativeBlock:
        """The items to list under ``policy`` (``used`` False when the policy is not active yet or nothing is known)."""
        if not policy.active(self.accepted, self.failures):
            return NegativeBlock(False)
        items = []
        for key, e in sorted(self.approaches.items(), key=lambda kv: (-kv[1]["accepted"], -kv[1]["tried"], kv[0])):
            state = f"accepted {e['accepted']} time(s)" if e["accepted"] else "never accepted"
            items.append(f"{key} (tried {e['tried']} time(s), {state})")
        items.extend(f"failed route: {r}" for r in reversed(self.failed_routes))
        items = items[:max(0, policy.max_items)]
        return NegativeBlock(bool(items), tuple(items))

    def to_dict(self) -> dict:
        return {"approaches": {k: dict(v) for k, v in self.approaches.items()},
                "failed_routes": list(self.failed_routes), "accepted": self.accepted, "failures": self.failures}

    @classmethod
    def from_dict(cls, d: dict) -> "NegativeMemory":
        return cls({k: dict(v) for k, v in d["approaches"].items()}, list(d["failed_routes"]),
                   int(d["accepted"]), int(d["failures"]))


class NegativeLedger:
    """One memory per island (use island 0 for a run without islands)."""

    def __init__(self, memories: dict[int, NegativeMemory] | None = None):
        self.memories = dict(memories or {})

    def island(self, index: int) -> NegativeMemory:
        return self.memories.setdefault(int(index), NegativeMemory())

    def to_dict(self) -> dict:
        return {str(k): m.to_dict() for k, m in sorted(self.memories.items())}

    @classmethod
    def from_dict(cls, d: dict) -> "NegativeLedger":
        return cls({int(k): NegativeMemory.from_dict(v) for k, v in d.items()})


def failed_route(tractable_class: str | None, family: str | None, failure: str | None) -> str:
    """A one-line description of a failed route: what was tried and the failure that happened
    (``failure``: :func:`search.failure_reason.first_failure`, or why no code came)."""
    what = f"{tractable_class or 'unclaimed class'} via {family or 'no runnable code'}"
    return f"{what}: {failure}" if failure else what


# -- method families from code --------------------------------------------------------------

_SEP = r"[\s_\-\u2010-\u2015]*"   # Kac-Ward, Kac Ward, kac_ward, KacWard, Kac–Ward


def _spelled(*words: str) -> re.Pattern:
    return re.compile(_SEP.join(words), re.I)


#: routes as people write them, in code, identifiers and comments ("transfer matrix" alone names no
#: family: chain and row transfers share it, and the code's structure tells them apart)
ROUTE_NAMES = {
    "pfaffian/kac-ward": (_spelled("kac", "ward"), _spelled("pfaff"), _spelled("kasteleyn"), re.compile(r"\bFKT\b"),
                          _spelled("fisher", "kasteleyn"), _spelled("dimer", "cover")),
    "tensor network": (_spelled("tensor", "network"), _spelled("cotengra"), _spelled("opt", "einsum"),
                       _spelled("tensor", "contraction")),
    "gauge + magnetisation sum": (_spelled("mattis"), _spelled("curie", "weiss"), _spelled("magneti[sz]ation", "sum")),
    "row transfer": (_spelled("row", "transfer"), _spelled("row", "by", "row"), _spelled("column", "transfer"),
                     _spelled("strip", "transfer")),
    "dynamic programming": (_spelled("dynamic", "programming"), _spelled("belief", "propagation"),
                            _spelled("message", "passing"), _spelled("junction", "tree"),
                            _spelled("(variable|bucket)", "elimination"), _spelled("sum", "product")),
    "enumeration": (_spelled("brute", "force"), _spelled("exhaustive", "(sum|enumeration|search)")),
}


_NEGATED = re.compile(r"\b(no|not|non|unlike|instead of|without|rather than|cannot|can't|never)\b[^\n.;:]{0,40}$",
                      re.I)


def named_routes(text: str) -> set[str]:
    """Method families ``text`` names in one of their usual spellings, except where the name is
    negated just before it on the same line ("no Pfaffian with fields", "instead of Kac-Ward")."""
    found = set()
    for family, patterns in ROUTE_NAMES.items():
        for pattern in patterns:
            for m in pattern.finditer(text):
                line_start = text.rfind("\n", 0, m.start()) + 1
                if not _NEGATED.search(text[line_start:m.start()]):
                    found.add(family)
                    break
            if family in found:
                break
    return found


_PFAFF = re.compile(r"pfaff|kasteleyn|kac_?ward|kacward", re.I)
_GAUGE = re.compile(r"\b(comb|binom|gammaln|lgamma|factorial)\b")
_TN = re.compile(r"\b(einsum|tensordot|cotengra|opt_einsum|contract)\b")
_DP = re.compile(r"\b(dp|memo|lru_cache|cache|message|messages|belief|junction|eliminat\w*|logsumexp)\b", re.I)
_HYPER = re.compile(r"\b(cosh|sinh|tanh|log1p|logaddexp)\b")
_MATPROD = re.compile(r"(@|\bmatmul\b|\bdot\b|\bmatrix_power\b|\beigvalsh?\b|\beigh?\b)")


def method_families(code: str) -> list[str]:
    """Every family the code names (comments, identifiers), then every other family whose marks
    its structure carries, each group in :data:`METHOD_FAMILIES` order: a route the author names
    outranks a utility call (an ``einsum`` computing dot products is no tensor network)."""
    named = named_routes(code)
    found: set[str] = set()
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        tree = None
    names = _identifiers(tree) if tree is not None else set(re.findall(r"[A-Za-z_]\w*", code))
    text = " ".join(names)
    if _TN.search(text):
        found.add("tensor network")
    if _PFAFF.search(text) or ({"slogdet", "det"} & names):   # identifiers; comments count through named_routes
        found.add("pfaffian/kac-ward")
    if _GAUGE.search(text):
        found.add("gauge + magnetisation sum")
    exps = _powers_of_two(tree) if tree is not None else set()
    if exps - {"n"}:
        found.add("row transfer")
    if "n" in exps:
        found.add("enumeration")
    has_loop = tree is not None and any(isinstance(x, (ast.For, ast.While, ast.comprehension)) for x in ast.walk(tree))
    if has_loop and _MATPROD.search(code) and not exps:
        found.add("chain transfer matrix")
    if has_loop and _DP.search(text):
        found.add("dynamic programming")
    if not has_loop and _HYPER.search(text):
        found.add("closed form")
    return [f for f in METHOD_FAMILIES if f in named] + [f for f in METHOD_FAMILIES if f in found - named]


def classify_method(code: str | None) -> str:
    """The most specific family (first of :func:`method_families`), or "other"."""
    if not code:
        return "other"
    return _classify(code)


@lru_cache(maxsize=512)   # the negative ledger and the database's features classify each program
def _classify(code: str) -> str:
    fams = method_families(code)
    return fams[0] if fams else "other"


def _identifiers(tree: ast.AST) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.Lambda)) and hasattr(node, "name"):
            out.add(node.name)
        elif isinstance(node, ast.alias):
            out.update(node.name.split("."))
    return out


def _powers_of_two(tree: ast.AST) -> set[str]:
    """Names (or "n") that appear as exponents of 2**x, 1 << x or product(..., repeat=x)."""
    out = set()
    for node in ast.walk(tree):
        exp = None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and _const(node.left) == 2:
            exp = node.right
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.LShift) and _const(node.left) == 1:
            exp = node.right
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "product":
            exp = next((k.value for k in node.keywords if k.arg == "repeat"), None)
        if exp is not None:
            names = {x.id for x in ast.walk(exp) if isinstance(x, ast.Name)}
            squared = isinstance(exp, ast.BinOp) and (  # L*L or L**2: all n spins of a square
                (isinstance(exp.op, ast.Mult) and ast.dump(exp.left) == ast.dump(exp.right))
                or (isinstance(exp.op, ast.Pow) and _const(exp.right) == 2))
            whole = not names or names & {"n", "N", "n_spins", "num_spins"} or squared
            out.add("n" if whole else sorted(names)[0])
    return out


def _const(node) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def diversity_per_100(records: list[dict], signatures: dict[str, str] | None = None) -> dict:
    """Distinct method families (routes), class labels and behaviour signatures per 100 proposals,
    split by negative-block use.

    ``records`` are candidate dicts (``Candidate.to_dict()``); the block's use is read from
    ``prompt_meta["negative"]``. ``signatures`` maps candidate id to its behaviour signature
    (:func:`search.database.behaviour_signature` of its Verdict; proposals without one do not
    count). Returns ``{"with": {...}, "without": {...}}``, each with ``proposals``,
    ``families_per_100``, ``labels_per_100`` and ``signatures_per_100``.
    """
    signatures = signatures or {}
    out = {}
    for key, want in (("with", True), ("without", False)):
        rs = [r for r in records if bool((r.get("prompt_meta") or {}).get("negative")) is want]
        fams = {classify_method(r.get("code")) for r in rs if r.get("code")}
        labels = {r.get("tractable_class") for r in rs if r.get("tractable_class")}
        sigs = {signatures[r["id"]] for r in rs if r.get("id") in signatures}
        k = len(rs)
        out[key] = {"proposals": k, "families_per_100": 100.0 * len(fams) / k if k else 0.0,
                    "labels_per_100": 100.0 * len(labels) / k if k else 0.0,
                    "signatures_per_100": 100.0 * len(sigs) / k if k else 0.0}
    return out
