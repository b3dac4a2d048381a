"""A gauge action whose runtime flips one coupling's sign: it changes Z, so the derivation
engine's check of the step must refuse it (the tests of derive and of the LLM chain both use it)."""

from types import SimpleNamespace

import numpy as np

from search.derivation.actions import ACTIONS


def install_bad_gauge(monkeypatch) -> None:
    """Replace ACTIONS["gauge"] by the faulty one for the test (monkeypatch undoes it)."""
    real = ACTIONS["gauge"]

    def _act_bad_gauge(model, options):
        out = real.ENTRY(model, options)
        idx, w = out["terms"][0]
        return {**out, "terms": [(idx, np.r_[-w[:1], w[1:]])] + out["terms"][1:]}

    fake = SimpleNamespace(**{k: getattr(real, k) for k in dir(real) if not k.startswith("__")})
    fake.ENTRY, fake.FUNCTIONS = _act_bad_gauge, real.FUNCTIONS + (_act_bad_gauge,)
    monkeypatch.setitem(ACTIONS, "gauge", fake)
