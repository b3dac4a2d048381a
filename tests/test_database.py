"""The program database: MAP-Elites cells, clusters, islands, migration, resets, state."""

import msgpack
import numpy as np
import pytest
from database_helpers import EXP1, POLY2, code, program, verdict

from search.database import DatabaseConfig, Program, ProgramDatabase
from search.database.archive import Archive
from search.database.features import FeatureSpace


# -- one archive -------------------------------------------------------------------------------

def test_map_elites_replacement_only_by_a_better_score():
    arch = Archive(FeatureSpace(), max_per_cluster=0)
    a = program("a", c=1.0, n=64)
    assert arch.add(a).reason == "new cell"
    worse, equal = program("b", c=2.0, n=32), program("c", c=3.0, n=64)  # same cell, same code length
    assert arch.cell_of(worse) == arch.cell_of(a) == arch.cell_of(equal)
    assert not arch.add(worse).placed and not arch.add(equal).placed
    better = program("d", c=4.0, n=128)
    res = arch.add(better)
    assert res.placed and res.replaced_id == "a" and set(arch.members) == {"d"}
    other_cell = program("e", c=5.0, n=16, cls="pfaffian")
    assert arch.add(other_cell).placed and len(arch.cells) == 2
    assert not arch.add(program("f", c=4.0, n=999)).placed  # same normalised code as "d": a duplicate
    assert not arch.add(Program.new("g", code(6.0), None)).placed  # failed: recorded elsewhere, never placed


def test_cluster_cap_keeps_functionally_identical_programs_from_crowding():
    arch = Archive(FeatureSpace(), max_per_cluster=2)
    classes = ["transfer_matrix", "pfaffian", "gauge", "free_fermion"]
    # the same behaviour (identical verdicts) claimed under different class labels: different cells
    progs = [program(f"p{i}", c=float(i), cls=cl) for i, cl in enumerate(classes)]
    for i, p in enumerate(progs):
        p.seq = i  # arrival order (the database sets it)
    assert len({p.signature for p in progs}) == 1 and len({arch.cell_of(p) for p in progs}) == 4
    assert arch.add(progs[0]).placed and arch.add(progs[1]).placed
    assert arch.add(progs[2]).reason == "cluster full"  # equal score: not better than the worst mate
    shorter = Program.new("short", "def log_Z(p, n):\n    return n * 0.69\n", verdict(), "gauge")
    assert shorter.signature == progs[0].signature and shorter.score > progs[0].score
    res = arch.add(shorter)
    assert res.placed and res.evicted_id == "p1"  # p1 arrived later than p0 at equal score: the worst
    assert set(arch.members) == {"p0", "short"} and len(arch.cells) == 2
    assert len(arch.clusters()) == 1
    uncapped = Archive(FeatureSpace(), max_per_cluster=0)
    assert all(uncapped.add(p).placed for p in progs)


# -- the database ------------------------------------------------------------------------------

def test_add_reports_bests_and_counts_failures_and_children():
    db = ProgramDatabase(DatabaseConfig(islands=2), seed=1)
    r = db.add(program("a", n=64), 0)
    assert r.accepted_into_cell and r.new_island_best and r.new_global_best and r.replaced_id is None
    r = db.add(program("b", c=2.0, n=128, parents=["a"]), 1)
    assert r.new_island_best and r.new_global_best and db.get("a").children == 1
    r = db.add(program("c", c=3.0, n=256), 0)
    assert r.replaced_id == "a" and r.new_island_best and r.new_global_best
    r = db.add(program("d", c=4.0, n=16, cls="pfaffian"), 0)
    assert r.accepted_into_cell and not r.new_island_best and not r.new_global_best
    bad = Program.new("e", "def log_Z(:", None)
    r = db.add(bad, 1)
    assert not r.accepted_into_cell and r.reason == "failed"
    assert db.island_of("e") == 1 and db.get("e") is None and db.island_of("a") == 0 and db.get("a") is None
    assert db.seen(bad.code_hash) and db.seen(db.get("c").code_hash)
    assert not db.seen("0" * 64)
    db.mark_seen("0" * 64)
    assert db.seen("0" * 64)
    with pytest.raises(ValueError):
        db.add(program("c", c=9.0), 1)
    st = db.stats()
    assert [i["size"] for i in st["islands"]] == [2, 1] and st["islands"][1]["failed"] == 1
    assert st["evaluations"] == 5 and db.best().id == "c"


def test_islands_isolate_until_migration():
    db = ProgramDatabase(DatabaseConfig(islands=3, migration_interval=0), seed=0)
    for i in range(6):
        db.add(program(f"a{i}", c=float(i), n=2 ** (i + 2), cls=["gauge", "pfaffian", "percolation"][i % 3]), 0)
    rng = np.random.default_rng(0)
    assert db.sample(1, rng) is None and db.sample(2, rng) is None
    db.add(program("b0", c=100.0, n=8), 1)
    for _ in range(300):
        s = db.sample(1, rng)
        assert s.parent.id == "b0" and s.inspirations == []
    assert db.migrate(rng) == []  # migration_interval 0: never due
    events = db.migrate(rng, force=True)
    assert [(e.source, e.dest) for e in events] == [(0, 1), (1, 2)]  # island 2 is empty: nothing leaves it
    copy = db.get(events[0].copy_id)
    assert copy.copy_of == "a5" and db.island_of(copy.id) == 1
    ids = {p.id for _ in range(300) for s in [db.sample(1, rng)] for p in [s.parent, *s.inspirations]}
    assert ids == {"b0", copy.id}


def test_migration_ring_copies_each_best_to_the_next_island_when_due():
    db = ProgramDatabase(DatabaseConfig(islands=4, migration_interval=8, migration_count=1), seed=0)
    for i in range(4):
        db.add(program(f"weak{i}", c=float(i), n=8, cls="pfaffian"), i)
        db.add(program(f"best{i}", c=10.0 + i, n=2 ** (i + 4)), i)
    assert db.evaluations == 8
    events = db.migrate()
    assert [(e.source, e.dest, e.program_id) for e in events] == [(i, (i + 1) % 4, f"best{i}") for i in range(4)]
    # best_i (n = 2^(i+4)) lands in the cell of best_{i+1}: it replaces only where it is better
    assert [e.placed for e in events] == [False, False, False, True]
    assert db.get(events[3].copy_id).island == 0 and events[3].replaced_id == "best0"
    assert db.migrate() == []  # not due again until 8 more evaluations
    for i in range(8):
        db.add(program(f"x{i}", c=50.0 + i, n=4, cls="gauge"), i % 4)
    assert len(db.migrate()) == 4


def test_stagnant_islands_are_reseeded_from_a_survivor_and_the_best_island_never():
    cfg = DatabaseConfig(islands=3, stagnation_patience=4, migration_interval=0)
    db = ProgramDatabase(cfg, seed=0)
    db.add(program("top", c=0.5, n=1024), 0)
    db.add(program("mid", c=0.25, n=256), 1)
    for i in range(4):  # island 2: a first best, then three programs that do not improve on it
        db.add(program(f"s{i}", c=1.0 + i, n=[64, 8, 16, 32][i], cls=["gauge", "pfaffian", "percolation", "free_fermion"][i]), 2)
    for i in range(4):  # island 0 stagnates too, but holds the global best
        db.add(program(f"t{i}", c=20.0 + i, n=4, cls="gauge"), 0)
    assert db.stats()["islands"][2]["since_improvement"] == 3
    assert db.reset_stagnant(np.random.default_rng(0)) == []
    db.add(program("s4", c=30.0, n=4, cls="gauge"), 2)
    events = db.reset_stagnant(np.random.default_rng(0))
    assert [(e.island, e.reason) for e in events] == [(2, "stagnant")]
    e = events[0]
    assert e.founder_island in (0, 1) and sorted(e.removed_ids) == ["s0", "s1", "s2", "s3"]
    seeded = db.sample(2, np.random.default_rng(1)).parent
    assert seeded.id == e.copy_id and seeded.copy_of == e.founder_id
    assert db.stats()["islands"][2]["resets"] == 1 and db.stats()["islands"][2]["since_improvement"] == 0
    assert db.island_of("s0") == 2 and db.get("s0") is None
    picked = set()
    for seed in range(20):  # the founder is a random survivor
        d2 = ProgramDatabase.from_state_dict(db.state_dict())
        for i in range(4):
            d2.add(program(f"z{i}", c=60.0 + i, n=4, cls="percolation"), 2)
        picked |= {ev.founder_island for ev in d2.reset_stagnant(np.random.default_rng(seed))}
    assert picked == {0, 1}


def test_weaker_half_is_reset_every_interval():
    db = ProgramDatabase(DatabaseConfig(islands=4, reset_interval=4, migration_interval=0), seed=0)
    for i, n in enumerate((8, 512, 16, 1024)):
        db.add(program(f"b{i}", c=float(i), n=n), i)
    events = db.reset_stagnant(np.random.default_rng(0))
    assert sorted((e.island, e.reason) for e in events) == [(0, "weaker"), (2, "weaker")]
    assert all(e.founder_island in (1, 3) for e in events)
    assert db.reset_stagnant(np.random.default_rng(0)) == []  # not due again yet
    assert db.best().id == "b3" and len(db.programs()) == 4



def test_weaker_half_ties_are_broken_at_random():
    chosen = set()
    for seed in range(12):
        db = ProgramDatabase(DatabaseConfig(islands=4, reset_interval=4, migration_interval=0), seed=0)
        for i in range(4):  # equal scores (same verdict, same code length); island 0 arrived first: the best
            db.add(program(f"b{i}", c=float(i + 1)), i)
        events = db.reset_stagnant(np.random.default_rng(seed))
        assert len(events) == 2 and all(e.island != 0 and e.founder_island not in
                                        {x.island for x in events} for e in events)
        chosen.add(tuple(sorted(e.island for e in events)))
    assert len(chosen) == 3  # {1,2}, {1,3}, {2,3}


def _evolve(db, steps, seed, start=0):
    """A synthetic evolution: sample, make a child with a random verdict, add, migrate, reset."""
    rng = np.random.default_rng([seed, start])
    k = len(db.islands)
    for t in range(start, start + steps):
        island = t % k
        s = db.sample(island, rng)
        n = int(2 ** rng.integers(2, 11))
        child = Program.new(f"c{t}", code(float(rng.integers(0, 400))), verdict(
            accept=bool(rng.random() < 0.6), n=n, measured=[POLY2, EXP1, None][int(rng.integers(3))],
            err=float(10.0 ** -rng.integers(9, 15)), physics=bool(rng.random() < 0.8)),
            ["transfer_matrix", "pfaffian", "gauge", None][int(rng.integers(4))], "O(n^2)", 0.5,
            [s.parent.id, *[p.id for p in s.inspirations]] if s else [])
        if db.seen(child.code_hash):
            continue
        db.mark_seen(child.code_hash)
        db.add(child, island)
        db.migrate(rng)
        db.reset_stagnant(rng)
    return db


def _cfg():
    return DatabaseConfig(islands=3, migration_interval=7, reset_interval=25, stagnation_patience=9,
                          selection="weighted", max_per_cluster=1)


def test_same_calls_same_seeds_same_database_and_a_mid_run_round_trip_continues_identically():
    a = _evolve(ProgramDatabase(_cfg(), seed=3), 120, seed=11)
    b = _evolve(ProgramDatabase(_cfg(), seed=3), 120, seed=11)
    assert a.state_dict() == b.state_dict()
    assert a.stats()["evaluations"] > 30 and sum(i["resets"] for i in a.stats()["islands"]) > 0
    c = _evolve(ProgramDatabase(_cfg(), seed=3), 120, seed=12)
    assert c.state_dict() != a.state_dict()
    # stop half-way, go through msgpack, continue
    half = _evolve(ProgramDatabase(_cfg(), seed=3), 60, seed=11)
    restored = ProgramDatabase.from_state_dict(msgpack.unpackb(msgpack.packb(half.state_dict())))
    assert restored.state_dict() == half.state_dict()
    _evolve(half, 60, seed=11, start=60)
    _evolve(restored, 60, seed=11, start=60)
    assert restored.state_dict() == half.state_dict()
    whole = _evolve(_evolve(ProgramDatabase(_cfg(), seed=3), 60, seed=11), 60, seed=11, start=60)
    assert whole.state_dict() == restored.state_dict()


def test_state_dict_is_plain_data_and_round_trips_exactly():
    db = _evolve(ProgramDatabase(_cfg(), seed=5), 60, seed=2)
    d = db.state_dict()

    def plain(x):
        if isinstance(x, dict):
            return all(isinstance(k, str) and plain(v) for k, v in x.items())
        if isinstance(x, list):
            return all(plain(v) for v in x)
        return x is None or type(x) in (str, int, float, bool)

    assert plain(d)
    back = ProgramDatabase.from_state_dict(msgpack.unpackb(msgpack.packb(d)))
    assert back.state_dict() == d and back.stats() == db.stats()
    assert [p.id for p in back.programs()] == [p.id for p in db.programs()]
    assert back.best().to_dict() == db.best().to_dict()
    for island in range(3):
        sa, sb = db.sample(island, np.random.default_rng(9)), back.sample(island, np.random.default_rng(9))
        assert (sa and sa.ids()) == (sb and sb.ids())
    # without a generator, draws come from the seed and the counters: reproducible too
    assert db.sample(0).ids() == back.sample(0).ids()
    with pytest.raises(ValueError):
        ProgramDatabase.from_state_dict({**d, "schema": 99})
