"""Overlapping generations (evolve/engine/engine.py, "Overlap"): generation g + 1 is launched while
generation g is judged, and the run is still one deterministic sequence.

Checked here without Ray, on a stub proposer (a new line on the parent's code, drawn from the
slot's own generator, now and then the parent unchanged: a duplicate) and a stub evaluator (a
verdict drawn from the code's hash), so every run of a seed proposes and judges the same way:

- a pool whose evaluations finish in random order, on two threads, gives the same run as the
  in-process pool: the order of strategy calls is set by generation numbers, not by timing;
- parents lag one generation, never more, and generation 1 is not chosen blind;
- a run killed at any evaluation and resumed from its snapshot ends exactly as the uninterrupted
  run, judging nothing twice;
- a run stopped by its budget and resumed with more ends as a run given the larger budget;
- the refine strategy (and a config that says no) does not overlap.
"""

from __future__ import annotations

import hashlib
import io
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import msgpack
import pytest

from evaluators.verdict import Numerical, Verdict
from evolve.config import config_from_dict
from evolve.engine.engine import STATE_SCHEMA, Engine
from evolve.engine.generation import Generation
from evolve.engine.legacy import upgrade_state
from evolve.engine.plan import Replay
from evolve.engine.pools import ExecutorPool, LocalPool
from evolve.engine.progress import Progress
from evolve.engine.runtime import engine_settings, make_strategy
from evolve.store.journal import read_journal
from evolve.store.run_store import RunStore
from search.database.program import score_of
from search.candidate import Candidate
from search.records import Evaluation

BASE = {"task": "P01", "seed": 11, "strategy": "islands", "strategies": {"islands": {"islands": 2}},
        "budgets": {"proposals": 24, "evaluations": 24, "wall_time_s": 600},
        "ray": {"batch_size": 3}}


class Killed(BaseException):
    """The process dies here (as SIGKILL would: nothing after it runs)."""


class StubProposer:
    def propose(self, request) -> Candidate:
        rng = request.rng()
        parent = request.parent.candidate if request.parent is not None else None
        code = parent.code if parent is not None else "def Z_efficient(params, n):\n    return 2.0 ** n\n"
        if parent is None or rng.random() > 0.2:
            code += f"\nSHIFT_{int(rng.integers(10 ** 6))} = {int(rng.integers(10 ** 6))}\n"
        return Candidate(id=request.id, task="P01", code=code, tractable_class="transfer_matrix",
                         complexity_O="O(n)", proposer=request.proposer, created=0.0,
                         parent_ids=[parent.id] if parent is not None else [])


class StubEvaluator:
    """A verdict drawn from the code's hash: about half pass, with different verified sizes."""

    def __init__(self, die_at: int | None = None, delay_s: float = 0.0):
        self.calls, self.die_at, self.delay_s = 0, die_at, delay_s
        self.lock = threading.Lock()

    def evaluate(self, cand) -> Evaluation:
        with self.lock:
            self.calls += 1
            if self.die_at is not None and self.calls == self.die_at:
                raise Killed(f"killed at evaluation {self.calls}")
        h = int(hashlib.sha256(cand.code.encode()).hexdigest()[:8], 16)
        if self.delay_s:
            time.sleep(random.uniform(0, self.delay_s))
        passed = h % 2 == 0
        verdict = Verdict(task=cand.task, verdict="reject",
                          numerical=Numerical(passed, 1e-12 if passed else 0.5, 3, 0 if passed else 1,
                                              16 * (1 + h % 7) if passed else 0, []))
        return Evaluation(cand.id, verdict, score_of(verdict, cand.code))


def threaded_pool(proposer, evaluator) -> ExecutorPool:
    """Two evaluator threads, results in whatever order they finish (the stub's random delays),
    handed to the engine in its own thread, as the Ray pool does."""
    return ExecutorPool(proposer, [ThreadPoolExecutor(1), ThreadPoolExecutor(1)], evaluator.evaluate)


def run(raw: dict, root: Path, evaluator=None, pool=LocalPool, resume: Path | None = None,
        extra: dict | None = None, proposer=None) -> tuple[Path, Engine, StubEvaluator]:
    """One run to its end (or to the evaluator's death), or the run at ``resume`` continued as
    `evolve resume` does (``extra``: budgets added)."""
    cfg = config_from_dict(raw)
    for key, value in (extra or {}).items():
        setattr(cfg.budgets, key, getattr(cfg.budgets, key) + value)
    evaluator = evaluator or StubEvaluator()
    if resume is None:
        store, state, replay = RunStore.create(root, cfg.to_dict(), cfg.task), None, None
    else:
        store = RunStore.open(resume)
        state, covered = store.latest_snapshot() or (None, 0)   # killed before its first snapshot: from the start
        replay = Replay.from_records(read_journal(store.path / "journal.msgpack").records, covered)
    strategy, _ = make_strategy(cfg, remote=False)
    engine = Engine(engine_settings(cfg), strategy, pool(proposer or StubProposer(), evaluator), store,
                    Progress(cfg.budgets, stream=io.StringIO()), replay)
    try:
        if state is not None:
            engine.restore(upgrade_state(state, cfg.strategy))
        engine.run()
    finally:
        store.close()
    return store.path, engine, evaluator


def records(path: Path, kind: str) -> list[dict]:
    return [r for r in read_journal(path / "journal.msgpack").records if r["kind"] == kind]


def outline(path: Path) -> dict:
    """What a run did, whatever the timing: every proposal (code, parents, strategy fields) by id,
    the programs judged, the duplicates, and the final state without its clock."""
    with RunStore.open(path) as store:
        state, _ = store.latest_snapshot()
    counters = {k: v for k, v in state["counters"].items() if k != "elapsed_s"}
    return {"proposals": {r["candidate"]["id"]: (r["candidate"]["code"], tuple(r["candidate"]["parent_ids"]),
                                                 repr(r.get("extra")))
                          for r in records(path, "proposal")},
            "judged": sorted(r["id"] for r in records(path, "evaluation")),
            "duplicates": sorted((r["id"], r["of"]) for r in records(path, "duplicate")),
            "strategy": state["strategy"], "seen": state["seen"], "best": state["best"], "counters": counters,
            "open": state["open"]}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The reference run of each strategy, in-process."""
    out = {}
    for strategy in ("islands", "tree"):
        path, engine, evaluator = run({**BASE, "strategy": strategy}, tmp_path_factory.mktemp(strategy))
        out[strategy] = (path, outline(path), evaluator.calls)
    return out


@pytest.mark.parametrize("strategy", ["islands", "tree"])
def test_evaluations_finishing_in_any_order_give_the_same_run(uninterrupted, tmp_path, strategy):
    ref_path, ref, _ = uninterrupted[strategy]
    assert ref["counters"]["generation"] >= 6 and len(ref["judged"]) >= 8, "a run of several generations"
    random.seed(3)
    path, _, _ = run({**BASE, "strategy": strategy}, tmp_path, StubEvaluator(delay_s=0.02), pool=threaded_pool)
    got = outline(path)
    assert got == ref
    # ... although the journal's order of evaluations is not the same
    order = [r["id"] for r in records(path, "evaluation")]
    assert sorted(order) == ref["judged"]


def test_parents_lag_one_generation_and_generation_one_is_not_blind(uninterrupted):
    path, ref, _ = uninterrupted["islands"]
    judged_in = {}
    for r in records(path, "evaluation"):
        judged_in[r["id"]] = int(r["id"][1:5])
    lagging = 0
    for pid, (_, parents, _) in ref["proposals"].items():
        g = int(pid[1:5])
        for parent in parents:
            assert judged_in[parent] <= max(0, g - 2) or (g == 1 and judged_in[parent] == 0), (pid, parent)
            lagging += judged_in[parent] == g - 2
    assert lagging > 0, "parents from two generations back are used"
    gen1 = [parents for pid, (_, parents, _) in ref["proposals"].items() if pid.startswith("g0001")]
    assert any(gen1), "generation 1 mutates programs of generation 0"


def test_without_overlap_parents_come_from_the_generation_before(tmp_path):
    path, _, _ = run({**BASE, "run": {"overlap_generations": False}}, tmp_path)
    with RunStore.open(path) as store:
        state, _ = store.latest_snapshot()
    assert state["open"] == []
    gens = {pid: int(pid[1:5]) for pid in (r["id"] for r in records(path, "evaluation"))}
    previous = [p for r in records(path, "proposal") for p in r["candidate"]["parent_ids"]
                if gens[p] == int(r["candidate"]["id"][1:5]) - 1]
    assert previous, "a lockstep run mutates the generation just judged"


@pytest.mark.parametrize("strategy", ["islands", "tree"])
@pytest.mark.parametrize("die_at", [2, 5, 9, 13, 17])
def test_a_run_killed_at_any_evaluation_resumes_to_the_uninterrupted_end(uninterrupted, tmp_path, strategy, die_at):
    _, ref, ref_calls = uninterrupted[strategy]
    raw = {**BASE, "strategy": strategy}
    killed = StubEvaluator(die_at=die_at)
    with pytest.raises(Killed):
        run(raw, tmp_path, killed)
    (path,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    if die_at > 6:  # generations 0 and 1 run alone (1 is chosen from 0); from then on one is always under way
        with RunStore.open(path) as store:
            state, _ = store.latest_snapshot()
        assert state["open"] and state["open"][0]["launched"], "the snapshot fell while a generation was under way"
    _, _, resumed = run(raw, tmp_path, resume=path)
    assert outline(path) == ref
    judged = [r["id"] for r in records(path, "evaluation")]
    assert len(judged) == len(set(judged)), "nothing judged twice"
    assert (killed.calls - 1) + resumed.calls == ref_calls, "evaluations the killed run journaled are not redone"


@pytest.mark.parametrize("strategy", ["islands", "tree"])
def test_a_budget_stopped_run_extended_ends_as_a_run_given_the_larger_budget(tmp_path, strategy):
    # a whole number of generations (3 slots each): a generation the budget cuts short stays short,
    # with or without overlap, so only then can the two runs agree
    small = {**BASE, "strategy": strategy, "budgets": {**BASE["budgets"], "proposals": 12}}
    big = {**BASE, "strategy": strategy, "budgets": {**BASE["budgets"], "proposals": 24}}
    ref_path, _, _ = run(big, tmp_path / "big")
    path, engine, _ = run(small, tmp_path / "small")
    assert engine.stop_reason() == "proposal budget reached (12)"
    with RunStore.open(path) as store:
        state, _ = store.latest_snapshot()
    assert [(g["number"], g["launched"]) for g in state["open"]] == [(4, False), (5, False)], "selected ahead"
    run(small, tmp_path, resume=path, extra={"proposals": 12})
    got, ref = outline(path), outline(ref_path)
    assert got == ref


def test_refine_chains_never_overlap(tmp_path):
    raw = {**BASE, "strategy": "refine", "strategies": {"refine": {"rounds": 3, "trials": 4, "prompts": "evolve"}},
           "budgets": {**BASE["budgets"], "proposals": 9, "evaluations": 9}}
    path, engine, _ = run(raw, tmp_path)
    assert not engine.overlap
    for r in records(path, "proposal"):
        g = int(r["candidate"]["id"][1:5])
        assert all(int(p[1:5]) == g - 1 for p in r["candidate"]["parent_ids"]), "each round revises the one before"


def test_open_generations_survive_a_snapshot_as_plain_data(tmp_path):
    killed = StubEvaluator(die_at=9)
    with pytest.raises(Killed):
        run(BASE, tmp_path, killed)
    (path,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    with RunStore.open(path) as store:
        state, _ = store.latest_snapshot()
    assert state["schema"] == STATE_SCHEMA
    (open_,) = state["open"]
    gen = Generation.from_state(msgpack.unpackb(msgpack.packb(open_), strict_map_key=False))
    assert gen.to_state() == open_
    assert gen.launched and gen.candidates
    assert set(gen.arrived) <= {c.id for c in gen.fresh}
    assert {c.id for c in gen.fresh} - set(gen.arrived), "evaluations still to come when the snapshot fell"
    assert [s.id for s in gen.slots] == [f"g{gen.number:04d}s{i:02d}" for i in range(3)]


def test_a_schema_2_snapshot_is_read_with_nothing_open():
    old = {"schema": 2, "counters": {}, "negative": {}, "seen": {}, "best": None, "strategy": {}}
    assert upgrade_state(old, "islands") == {**old, "schema": STATE_SCHEMA, "open": []}


def test_the_local_pool_runs_batches_in_the_order_they_were_queued():
    done = []

    class Recorder:
        def evaluate(self, cand):
            done.append(cand)
            return cand

    pool = LocalPool(None, Recorder())
    arrived = []
    first = pool.submit_evaluations(["a", "b"], lambda i, e: arrived.append(("first", e)))
    second = pool.submit_evaluations(["c"], lambda i, e: arrived.append(("second", e)))
    assert list(pool.collect(second)) == [(0, "c")]
    assert done == ["a", "b", "c"], "the earlier batch ran first"
    assert arrived == [("first", "a"), ("first", "b"), ("second", "c")], "and was handed over as it ran"
    assert list(pool.collect(first)) == [(0, "a"), (1, "b")]


class ClaimingProposer(StubProposer):
    """The stub, claiming a cost drawn from its code: cheap, cubic, exponential or quadratic."""

    CLAIMS = ("O(n)", "O(n^3)", "O(n 2^n)", "O(n^2)")

    def propose(self, request) -> Candidate:
        cand = StubProposer.propose(self, request)
        h = int(hashlib.sha256(cand.code.encode()).hexdigest()[:8], 16)
        return Candidate(**{**cand.to_dict(), "complexity_O": self.CLAIMS[h % 4]})


class OrderEvaluator(StubEvaluator):
    """Records the claims in the order the evaluations start."""

    def __init__(self):
        super().__init__()
        self.started: list[tuple[str, str]] = []

    def evaluate(self, cand) -> Evaluation:
        self.started.append((cand.id, cand.complexity_O))
        return super().evaluate(cand)


def test_a_generation_queues_its_longest_claims_first_and_chooses_as_in_slot_order(tmp_path, monkeypatch):
    """Evaluations start in order of claimed cost (cubic, quadratic, linear, exponential; ties in
    slot order), and the run makes the same choices as one that queues them in slot order."""
    import evolve.engine.engine as engine_module

    ordered = OrderEvaluator()
    path, _, _ = run(BASE, tmp_path / "ordered", evaluator=ordered, proposer=ClaimingProposer())
    weight = {"O(n^3)": 3, "O(n^2)": 2, "O(n)": 1, "O(n 2^n)": 0}
    by_generation: dict[str, list[tuple[str, str]]] = {}
    for cid, claim in ordered.started:
        by_generation.setdefault(cid.split("s")[0], []).append((cid, claim))
    assert len({claim for _, claim in ordered.started}) == 4   # every kind of claim was met
    for batch in by_generation.values():
        assert [weight[c] for _, c in batch] == sorted((weight[c] for _, c in batch), reverse=True), batch
        for w in set(weight.values()):   # ties in slot order
            same = [cid for cid, c in batch if weight[c] == w]
            assert same == sorted(same)
    assert any([cid for cid, _ in b] != sorted(cid for cid, _ in b) for b in by_generation.values())

    monkeypatch.setattr(engine_module, "longest_first", lambda candidates, lattice: list(candidates))
    plain = OrderEvaluator()
    slot_order, _, _ = run(BASE, tmp_path / "slot_order", evaluator=plain, proposer=ClaimingProposer())
    assert [cid for cid, _ in plain.started] != [cid for cid, _ in ordered.started]
    assert outline(path) == outline(slot_order)


class SlowProposer(StubProposer):
    """The stub, taking ``delay_s`` per proposal and noting when each one is handed back."""

    def __init__(self, delay_s: float):
        self.delay_s, self.done = delay_s, {}

    def propose(self, request) -> Candidate:
        time.sleep(self.delay_s)
        cand = StubProposer.propose(self, request)
        self.done[cand.id] = time.monotonic()
        return cand


class StartEvaluator(StubEvaluator):
    def __init__(self):
        super().__init__()
        self.started = {}

    def evaluate(self, cand) -> Evaluation:
        self.started[cand.id] = time.monotonic()
        return super().evaluate(cand)


def test_an_idle_evaluator_starts_on_the_first_proposal_not_the_last(tmp_path):
    """With the evaluators idle (generation 0), a proposal is judged as soon as it and the slots
    before it are in, while later slots are still being written; the run is the in-process one."""
    proposer, evaluator = SlowProposer(0.15), StartEvaluator()
    path, _, _ = run(BASE, tmp_path / "streamed", evaluator=evaluator, pool=threaded_pool, proposer=proposer)
    first_generation = sorted(cid for cid in proposer.done if cid.startswith("g0000"))
    assert len(first_generation) == BASE["ray"]["batch_size"]
    assert evaluator.started[first_generation[0]] < proposer.done[first_generation[-1]]
    local, _, _ = run(BASE, tmp_path / "local", proposer=SlowProposer(0.0))
    assert outline(path) == outline(local)
