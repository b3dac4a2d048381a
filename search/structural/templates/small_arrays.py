"""A helper that templates render into their programs for the tiny arrays of per-spin loops (a
chain's transfer vector, a tree's bucket): numpy reductions cost microseconds of call overhead
there, more than reading a short list (numpy only, since it runs in the sandbox)."""

from __future__ import annotations

#: an array of at most this many entries has its extremes read by Python's max / min of a list
LIST_EXTREMES = 64


def _extremes(t):
    """(largest, smallest) entry of an array, as floats."""
    if t.size <= LIST_EXTREMES:
        entries = t.ravel().tolist()
        return max(entries), min(entries)
    return float(t.max()), float(t.min())


def _largest(t):
    """The largest entry of an array, as a float."""
    return max(t.ravel().tolist()) if t.size <= LIST_EXTREMES else float(t.max())


FUNCTIONS = (_extremes, _largest)
CONSTANTS = f"LIST_EXTREMES = {LIST_EXTREMES}\n"
