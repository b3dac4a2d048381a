"""The executor's costs per flop and per write: fitted from recorded contractions, kept per machine
in the cache directory, recorded by the oracle's linear contractions, and used by the path search
only as a value passed in: a run learns them once, records them in its directory, and its
evaluators (and its resumes) search by the recorded ones."""

import json

import networkx as nx
import numpy as np
import pytest

import evaluators.verify as verify_module
from evaluators.oracles import tensor_network as tn
from evaluators.oracles.contraction import executor_rates as er
from evaluators.oracles.contraction import path_search as ps
from evaluators.oracles.contraction.executor_rates import DEFAULT_RATES, ExecutorRates, fit_rates
from evaluators.oracles.transfer_matrix import transfer_matrix_log_z
from evaluators.submission import Submission
from evolve.config import config_from_dict
from evolve.store.run_store import EXECUTOR_RATES_FILE, RunStore, read_executor_rates
from tasks.model import IsingModel
from tasks.registry import get_task

A, B = 1.6e-11, 3.8e-9    # a fit over five contractions on this round's AVX-512 host


def _records(a=A, b=B, ratios=(0.01, 0.02, 0.04, 0.08)):
    """Contractions that cost exactly a s/flop and b s/write, at several writes per flop."""
    return [(f, f * r, a * f + b * f * r) for f, r in zip((2e11, 5e11, 3e11, 7e11), ratios)]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache of its own, and the learning on (tests/conftest.py turns it off for the suite)."""
    monkeypatch.setenv("STATMECH_CACHE", str(tmp_path))
    monkeypatch.delenv(er.SWITCH, raising=False)
    return tmp_path


def test_the_fit_recovers_the_costs_and_the_search_factor():
    rates = fit_rates(_records())
    assert rates.source == "fitted"
    assert rates.seconds_per_flop == pytest.approx(A, rel=1e-9)
    assert rates.seconds_per_write == pytest.approx(B, rel=1e-9)
    assert rates.combo_factor == 238 and rates.minimize == "combo-238"
    assert rates.predicted_seconds(1e11, 1e9) == pytest.approx(1e11 * A + 1e9 * B)


def test_records_that_cannot_separate_the_costs_only_scale_the_default():
    """One record, records at about one ratio of writes to flops, or too few records give the
    default's ratio at the speed that explains them (least squares in one scale)."""
    for records in (_records()[:1], _records(ratios=(0.02, 0.02, 0.022, 0.021)), _records()[:3]):
        rates = fit_rates(records)
        assert rates.source == "scaled" and rates.combo_factor == DEFAULT_RATES.combo_factor
        predicted = [rates.predicted_seconds(f, w) for f, w, _ in records]
        if len(records) == 1:   # one record: exactly its speed
            (f, w, t), = records
            assert rates.seconds_per_flop / DEFAULT_RATES.seconds_per_flop == pytest.approx(
                t / DEFAULT_RATES.predicted_seconds(f, w), rel=1e-12)
        ratio = np.array(predicted) / [t for *_, t in records]   # least squares in relative error
        assert np.dot(ratio - 1.0, ratio) == pytest.approx(0.0, abs=1e-9)


def test_one_contraction_slowed_by_other_work_does_not_decide_the_fit():
    records = _records() + [(4e11, 1e10, 2.5 * (A * 4e11 + B * 1e10))]   # 2.5x as long as it should be
    rates = fit_rates(records)
    assert rates.source == "fitted" and 180 <= rates.combo_factor <= 300   # 238 without it


def test_bad_numbers_in_the_file_are_passed_over(cache):
    """json reads Infinity; a record of inf or 1e300 must not make every later search fail."""
    er.record_contraction(1e11, 1e9, 10.0)
    path, = cache.glob("oracle/executor-rates-*.json")
    path.write_text('{"schema": 1, "contractions": [[Infinity, 1e9, 3.0], [1e300, 1e9, 3.0], '
                    '[1e11, NaN, 3.0], [1e11, 1e9, 10.0]]}')
    rates = er.learned_rates()
    assert rates.source == "scaled" and rates.predicted_seconds(1e11, 1e9) == pytest.approx(10.0)
    assert ps.hyper_optimizer(8, costs=rates).minimize == f"combo-{DEFAULT_RATES.combo_factor}"


def test_implausible_costs_are_not_believed():
    """A fit or a scale a thousand times off the default's costs gives the default."""
    assert fit_rates([(1e11, 1e9, 1e-6)]) is DEFAULT_RATES
    assert fit_rates([(f, w, t * 1e5) for f, w, t in _records()]) is DEFAULT_RATES
    with pytest.raises(ValueError):
        ExecutorRates(0.0, 1e-9)


def test_the_switch_turns_the_learning_off(cache, monkeypatch):
    for f, w, t in _records():
        er.record_contraction(f, w, t)
    monkeypatch.setenv(er.SWITCH, "default")
    assert er.learned_rates() is DEFAULT_RATES
    er.record_contraction(1e11, 1e9, 10.0)
    monkeypatch.delenv(er.SWITCH)
    assert er.recorded() == _records()        # nothing written while it was off


def test_records_are_kept_per_host(cache, monkeypatch):
    er.record_contraction(1e11, 1e9, 10.0)
    monkeypatch.setattr(er.platform, "node", lambda: "another-host")
    assert er.recorded() == [] and er.learned_rates() is DEFAULT_RATES


def test_no_usable_record_gives_the_default():
    assert fit_rates([]) is DEFAULT_RATES
    assert fit_rates([(0.0, 1e9, 3.0), (1e11, 1e9, 0.0), (-1.0, 2.0, 3.0)]) is DEFAULT_RATES


def test_the_factor_stays_in_its_range():
    assert ExecutorRates(1e-12, 1e-6).combo_factor == er.MAX_COMBO_FACTOR
    assert ExecutorRates(1e-9, 1e-9).combo_factor == er.MIN_COMBO_FACTOR


def test_records_are_kept_per_machine_bounded_and_survive_a_corrupt_file(cache, monkeypatch):
    assert er.recorded() == [] and er.learned_rates() is DEFAULT_RATES
    er.record_contraction(1e9, 1e7, er.MIN_RECORD_S / 2)          # too short to say anything
    assert er.recorded() == []
    for f, w, t in _records():
        er.record_contraction(f, w, t)
    assert er.recorded() == _records()
    rates = er.learned_rates()
    assert rates.source == "fitted" and rates.seconds_per_write == pytest.approx(B, rel=1e-9)
    assert ps.hyper_optimizer(8, rates).minimize == "combo-238"
    assert er.current() is DEFAULT_RATES            # learned, but used only where a caller passes them on
    with er.using(rates):
        assert er.current() == rates
    assert er.current() is DEFAULT_RATES
    monkeypatch.setattr(er, "KEEP", 3)
    er.record_contraction(1e11, 1e9, 10.0)
    assert er.recorded() == _records()[2:] + [(1e11, 1e9, 10.0)]
    path, = cache.glob("oracle/executor-rates-*.json")
    assert json.loads(path.read_text())["schema"] == 1
    path.write_text("{not json")
    assert er.recorded() == [] and er.learned_rates() is DEFAULT_RATES
    er.record_contraction(1e11, 1e9, 10.0)
    assert er.recorded() == [(1e11, 1e9, 10.0)]


def test_an_unwritable_cache_costs_only_the_calibration(tmp_path, monkeypatch):
    monkeypatch.delenv(er.SWITCH, raising=False)
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("STATMECH_CACHE", str(blocker / "below-a-file"))
    er.record_contraction(1e11, 1e9, 10.0)        # no exception
    assert er.recorded() == [] and er.learned_rates() is DEFAULT_RATES


def _glass(n, seed, beta):
    rng = np.random.default_rng(seed)
    g = nx.random_regular_graph(3, n, seed=seed)
    edges = np.array(sorted(tuple(sorted(e)) for e in g.edges()))
    return IsingModel.from_arrays(n, beta, edges, rng.choice([-1.0, 1.0], size=len(edges)))


def test_the_oracle_records_its_linear_contractions_and_not_the_log_domain_route(cache, monkeypatch):
    monkeypatch.setattr(er, "MIN_RECORD_S", 0.0)
    tn._TREE_CACHE.clear()
    warm = _glass(30, 1, 1.0)
    assert tn.tensor_network_log_z(warm) == pytest.approx(transfer_matrix_log_z(warm), rel=1e-12)
    tree = tn.contraction_tree(tn.build_network(warm), "auto", tn.DEFAULT_MAX_WIDTH)
    (f, w, t), = er.recorded()
    assert (f, w) == (float(tree.contraction_cost()), float(tree.total_write())) and t > 0
    cold = warm.with_beta(400.0)   # exp(-2 beta) = 1e-348: below float64's exact range, the log route
    assert tn.tensor_network_log_z(cold) == pytest.approx(transfer_matrix_log_z(cold), rel=1e-12)
    assert len(er.recorded()) == 1


def test_the_search_scores_and_refines_by_the_rates_it_was_given(monkeypatch):
    """The optimizer's objective and the refinement (in a pool worker: passed, not read from the
    module) use the search's rates (the stopping rule's use: test_path_search's hard-cap test)."""
    costs = ExecutorRates(1e-11, 3e-9)
    made, refined = [], []
    make, refine = ps.hyper_optimizer, ps.refined
    monkeypatch.setattr(ps, "hyper_optimizer", lambda *a, **k: made.append(make(*a, **k)) or made[-1])
    monkeypatch.setattr(ps, "refined", lambda tree, w, c=None: refined.append(c) or refine(tree, w, c))
    model = _glass(40, 2, 1.0)
    net = tn.build_network(model)
    tree = ps.search_tree(net.inputs, [a.shape for a in net.arrays], 8, costs, max_trials=10, workers=1)
    assert made[0].minimize == "combo-300" and refined and all(c == costs for c in refined)
    assert tree.contraction_width() <= 8


def test_a_run_records_the_rates_it_learned_and_a_resumed_run_reads_them_back(tmp_path):
    """``executor_rates.json`` is written the first time the run asks (before its evaluators start),
    and a reopened run (a resume) takes the recorded rates without learning again."""
    learned = ExecutorRates(2e-11, 5e-9, "fitted")
    cfg = config_from_dict({"task": "P01", "seed": 0})
    store = RunStore.create(tmp_path, cfg.to_dict(), cfg.task)
    assert read_executor_rates(store.path) is None
    assert store.executor_rates(lambda: learned) == learned
    assert json.loads((store.path / EXECUTOR_RATES_FILE).read_text()) == learned.to_dict()
    store.close()

    def learn_again():
        raise AssertionError("a run with recorded rates learned them again")

    reopened = RunStore.open(store.path)
    try:
        assert reopened.executor_rates(learn_again) == learned
    finally:
        reopened.close()
    assert ExecutorRates.from_dict(learned.to_dict()) == learned


def test_a_run_given_recorded_rates_searches_by_them(tmp_path, monkeypatch):
    """The recorded rates reach the verifier's options, the verifier opens their scope, and the
    tensor-network oracle's path search inside it is given them (not this machine's records, not the
    default)."""
    recorded = ExecutorRates(1e-11, 3e-9, "fitted")
    cfg = config_from_dict({"task": "P01", "seed": 0})
    store = RunStore.create(tmp_path, cfg.to_dict(), cfg.task)
    (store.path / EXECUTOR_RATES_FILE).write_text(json.dumps(recorded.to_dict()))
    options = cfg.evaluator.verify_options(cfg.seed, store.executor_rates(lambda: DEFAULT_RATES))
    store.close()
    assert options.executor_rates == recorded

    seen = []
    search = tn.search_tree
    monkeypatch.setattr(tn, "search_tree", lambda *a, **k: seen.append(a[3]) or search(*a, **k))
    monkeypatch.setattr(tn, "GREEDY_ENOUGH_FLOPS", 0.0)       # every path is searched
    monkeypatch.setattr(ps, "MAX_SEARCH_TRIALS", 4)
    tn._TREE_CACHE.clear()
    model = _glass(24, 3, 1.0)

    def judged(task, sub, opts, sandbox, profile):   # the cascade, reduced to one oracle call in its scope
        return er.current(), tn.tensor_network_log_z(model)

    monkeypatch.setattr(verify_module, "_verify", judged)
    in_scope, log_z = verify_module.verify(get_task("P01"), Submission(code=""), options)
    assert in_scope == recorded and seen == [recorded]
    assert log_z == pytest.approx(transfer_matrix_log_z(model), rel=1e-12)
    assert er.current() is DEFAULT_RATES          # the scope closes with the evaluation
