"""T12 (the Mattis torus) at scale (issue 34, item 2): the gauge-then-Kaufman oracle against the
transfer matrix where both run, at tiny couplings, at Onsager's K_c and cold (beta J = 13, 20, 1000);
its cold values at L = 256 (n = 65536) against the ground-state expansion; and the derived program
(read_formula -> gauge -> kaufman) against the oracle at L = 256. The four-Pfaffian torus oracle
(an independent Kasteleyn method) is compared with it in tests/test_torus_pfaffian.py.

All values are natural logs of Z.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluators.oracles.kaufman import kaufman_applies
from evaluators.oracles.registry import exact_log_z
from search.derivation import derive
from tasks.registry import get_task

KC = 0.5 * math.log1p(math.sqrt(2.0))


def _model(n: int, beta_j: float, seed: int = 0, J: float = 1.0):
    task = get_task("T12")
    p = task.sample_params(np.random.default_rng(seed), n)
    return task.to_model({**p, "J": J, "beta": beta_j / J}, n), {**p, "J": J, "beta": beta_j / J}


def test_the_ladder_reaches_l_256():
    assert max(get_task("T12").ladder_sizes) == 256 * 256


@pytest.mark.parametrize("n", [25, 36])
@pytest.mark.parametrize("beta_j, J", [(1e-160, 1e-160), (1e-3, 1.0), (KC, 1.0), (13.0, 1.0), (20.0, 1.0),
                                       (1000.0, 1.0), (1000.0, 1e3)])
def test_gauge_kaufman_equals_the_transfer_matrix(n, beta_j, J):
    m, _ = _model(n, beta_j, seed=n, J=J)
    assert kaufman_applies(m) is None
    got = exact_log_z(m, method="kaufman").log_z
    ref = exact_log_z(m, method="transfer_matrix").log_z
    assert got == pytest.approx(ref, rel=1e-13, abs=1e-12)


@pytest.mark.parametrize("K", [13.0, 20.0, 1000.0])
def test_cold_values_at_l_256_are_the_ground_state_expansion(K):
    """log Z = 2 n K + log 2 + log1p(n e^(-8K) + 2 n e^(-12K) + ...): two ground states (the gauged
    ferromagnet and its flip), n single flips costing 8K, 2n flipped pairs 12K."""
    n = 256 * 256
    m, _ = _model(n, K, seed=3)
    got = exact_log_z(m)
    assert got.method == "kaufman"
    expected = 2 * n * K + math.log(2.0) + math.log1p(n * math.exp(-8 * K) + 2 * n * math.exp(-12 * K))
    assert got.log_z == pytest.approx(expected, rel=1e-15)
    # the degeneracy is seen: without the log 2 the value is off by far more than the tolerance
    assert abs(got.log_z - (expected - math.log(2.0))) > 1e3 * 1e-15 * expected


def test_warm_value_at_l_256_has_the_bulk_free_energy():
    """At beta J = 0.3 (high temperature) log Z / n -> log 2 + 2 log cosh K + log(1 + ...): compare
    per site with L = 64 (finite-size corrections are exponentially small off criticality)."""
    a = exact_log_z(_model(256 * 256, 0.3, seed=1)[0]).log_z / 65536
    b = exact_log_z(_model(64 * 64, 0.3, seed=2)[0]).log_z / 4096
    assert a == pytest.approx(b, rel=1e-12) and a > math.log(2.0) + 2 * math.log(math.cosh(0.3))


def test_the_derived_program_agrees_with_the_oracle_at_l_256(sandbox):
    d = derive(get_task("T12"), sandbox=sandbox)
    assert d.chain == "read_formula -> gauge -> kaufman"
    namespace: dict = {}
    exec(compile(d.program, "<T12 derived>", "exec"), namespace)
    n = 256 * 256
    for beta_j, J in ((1e-150, 1e-150), (KC, 0.7), (13.0, 1.0), (1000.0, 1.0)):
        m, p = _model(n, beta_j, seed=5, J=J)
        assert namespace["log_Z"](p, n) == pytest.approx(exact_log_z(m).log_z, rel=1e-13)
