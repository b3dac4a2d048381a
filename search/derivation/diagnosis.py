"""Why a derivation found nothing polynomial, in words: the structure it measured and, for every chain
prefix it explored, why each action and each polynomial solver did not apply.

The lines are part of the derivation's record (``Derivation.diagnosis``, and the solver entry of
``Derivation.record()``), so `evolve derive` prints them and the Verdict's feedback of a derivation
candidate carries them to the next prompt (search/derivation/feedback.py).
"""

from __future__ import annotations

#: prefixes of the search shown at most (the formula as read first)
MAX_PREFIXES = 4


def structure_line(view) -> str:
    """What the structure analysis measured on the states of one chain prefix."""
    if view.kind != "model":
        return f"a {view.kind} sum (no spin model yet)"
    fam = view.family
    parts = [f"n = {', '.join(str(n) for n in view.n_spins)} spins"]
    if fam is not None:
        parts.append(f"terms on up to {fam.max_order} spins")
        parts.append("fields" if fam.has_fields else "no fields")
        planar = {True: "planar", False: "not planar", None: "planarity undetermined"}[fam.planar]
        parts.append(f"interaction graph {planar}")
        widths = ", ".join(str(w) for w in fam.treewidth)
        parts.append(f"treewidth bound {widths} ({fam.treewidth_growth} in n)")
        parts.append({"uniform": "equal couplings", "gauge": "signs removable by a gauge",
                      "frustrated": "frustrated"}[fam.disorder])
    if view.rank_one:
        parts.append("a rank-one (all-to-all) block")
    if view.frustration:
        parts.append(f"proof of frustration: {view.frustration}")
    return "; ".join(parts)


def diagnose(nodes, actions, solvers, polynomial: bool) -> list[str]:
    """Lines for the record: empty when a polynomial chain was found. ``nodes`` are the search's chain
    prefixes in the order explored ((chain, view) pairs), ``actions`` and ``solvers`` the libraries."""
    if polynomial:
        return []
    lines = []
    for chain, view in nodes[:MAX_PREFIXES]:
        where = "the formula as read" if not chain else "after " + " -> ".join(a for a, _ in chain)
        lines.append(f"{where}: {structure_line(view)}")
        refused = [f"{a.NAME} ({a.admits(view)})" for a in actions.values() if a.admits(view) is not None]
        if refused:
            lines.append("  actions that do not apply: " + "; ".join(refused))
        no = []
        for s in solvers.values():
            reason = s.applies(view)
            if reason is not None:
                no.append(f"{s.NAME} ({reason})")
        if no:
            lines.append("  solvers that do not apply: " + "; ".join(no))
    if len(nodes) > MAX_PREFIXES:
        lines.append(f"({len(nodes) - MAX_PREFIXES} more chain prefixes explored, none with a polynomial solver)")
    return lines
