"""Growth fits to noisy (n, seconds) timings: the right kind across many noisy draws."""

import math

import numpy as np
import pytest

from evaluators.checks.timing_fit import fit_growth

SIGMA = 0.2  # multiplicative lognormal noise, as on a loaded 2-core machine

# name -> (sizes n, seconds(n), kind, rate) at sizes like the ladder plus a few extra points
SERIES = {
    "n^1 (P01 ladder + extras)": ([100, 1000, 10_000, 30_000, 100_000, 300_000], lambda n: 1e-6 * n, "poly", 1.0),
    "n^3 (P04 ladder + extras)": ([64, 128, 256, 512, 1024], lambda n: 1e-9 * n ** 3, "poly", 3.0),
    "n 2^sqrt(n) (P03 sides L = 4..16)": ([L * L for L in range(4, 17)],
                                          lambda n: 1e-6 * n * 2 ** math.sqrt(n), "exp_sqrt", 1.0),
    "2^n (P06 n = 8..24)": (list(range(8, 25, 2)), lambda n: 1e-7 * 2.0 ** n, "exp", 1.0),
}


def draw(sizes, f, seed, sigma=SIGMA):
    rng = np.random.default_rng(seed)
    return [(n, f(n) * float(np.exp(rng.normal(0.0, sigma)))) for n in sizes]


@pytest.mark.parametrize("name", list(SERIES))
def test_right_kind_in_at_least_95_of_100_noisy_draws(name):
    sizes, f, kind, rate = SERIES[name]
    fits = [fit_growth(draw(sizes, f, seed)) for seed in range(100)]
    assert all(fit.usable for fit in fits)
    right = [fit for fit in fits if fit.growth.kind == kind]
    assert len(right) >= 95, (name, [fit.detail for fit in fits if fit.growth.kind != kind][:3])
    rates = [fit.growth.rate for fit in right]
    assert np.median(rates) == pytest.approx(rate, abs=0.15 * max(rate, 1.0))


@pytest.mark.parametrize("name", list(SERIES))
def test_established_never_exceeds_the_truth_kind(name):
    # what the timings "prove" must not overshoot: a false accusation is the costly error
    sizes, f, kind, _ = SERIES[name]
    rank = ("poly", "exp_sqrt", "exp").index(kind)
    for seed in range(100):
        fit = fit_growth(draw(sizes, f, seed))
        assert fit.established.rank <= rank


def test_noise_free_fits_are_exact():
    fit = fit_growth([(n, 1e-8 * n ** 2.5) for n in (100, 200, 400, 800, 1600)])
    assert fit.usable and fit.growth.kind == "poly" and fit.growth.rate == pytest.approx(2.5, abs=1e-6)
    assert fit.quality == pytest.approx(1.0)
    fit = fit_growth([(n, 1e-7 * n * 2.0 ** (0.5 * n)) for n in range(20, 41, 4)])
    assert fit.growth.kind == "exp" and fit.growth.rate == pytest.approx(0.5, abs=1e-6)


def test_duplicates_keep_the_fastest_time():
    pts = [(n, 1e-6 * n) for n in (1000, 10_000, 100_000, 1_000_000)]
    pts += [(n, 5 * t) for n, t in pts]  # the same sizes, slowed down by load
    fit = fit_growth(pts)
    assert fit.growth.rate == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("series", [
    [(n, 0.05 + 1e-9 * n) for n in (100, 1000, 10_000, 100_000)],            # constant overhead
    [(n, 1.0 + 1e-8 * n) for n in (6, 10, 14, 100, 1000, 10_000, 100_000)],  # slow import every run
    [(n, 1e-5 + 1e-9 * n) for n in (100, 1000, 10_000, 100_000)],            # below timer noise
    [(n, 1e-7 * n) for n in (100, 1000, 10_000, 100_000)],                   # only 2 points above 2 ms
    [(16, 0.01), (24, 2.5)],                                                 # too few sizes
    [(16, 0.01), (18, 0.04), (20, 0.16)],                                    # narrow and too few
    [],
])
def test_overhead_dominated_or_thin_series_are_not_usable(series):
    fit = fit_growth(series)
    assert not fit.usable and fit.growth is None and fit.established is None
    assert fit.detail.startswith("timings not usable:")


def test_fixed_overhead_is_subtracted():
    # 10 ms per call of fixed cost (an import) on top of n^2 work
    pts = [(n, 0.01 + 1e-9 * n ** 2) for n in (10, 30, 3000, 6000, 12_000, 24_000)]
    fit = fit_growth(pts)
    assert fit.usable and fit.growth.kind == "poly"
    assert fit.growth.rate == pytest.approx(2.0, abs=0.1)
    assert "overhead" in fit.detail


def test_detail_reports_every_model():
    fit = fit_growth(draw(*SERIES["2^n (P06 n = 8..24)"][:2], seed=1))
    for word in ("poly", "exp_sqrt", "exp", "R^2", "chose exp", "n = 16..24"):
        assert word in fit.detail


def test_a_size_slower_than_a_larger_one_is_load():
    clean = [(n, 1e-6 * n) for n in (1000, 3000, 10_000, 30_000, 100_000)]
    spiked = list(clean)
    spiked[1] = (3000, 0.2)  # a load spike, slower than n = 100000
    a, b = fit_growth(clean), fit_growth(spiked)
    assert b.usable and b.growth.kind == "poly"
    assert b.growth.rate == pytest.approx(a.growth.rate, abs=0.15)
