"""The report's figures, one module each; every function returns a plotly Figure (or None when
the run has nothing to show) and never touches HTML."""

#: one colour per outcome, the same in every figure
OUTCOME_COLOURS = {"accepted": "#2ca02c", "rejected": "#ff7f0e", "failed": "#d62728", "no code": "#9467bd",
                   "duplicate": "#7f7f7f", "not judged": "#c7c7c7"}


def thin(n: int, keep: int) -> list[int]:
    """At most about ``keep`` indices spread evenly over range(n), the last included (for plots of
    long runs: a point per pixel is all a browser can show anyway)."""
    if n <= keep:
        return list(range(n))
    step = n / keep
    out = sorted({int(i * step) for i in range(keep)} | {n - 1})
    return out
