"""A resume checks that the run directory is the run it claims to be before touching it: the config
it was created with, records lost from the journal (more than a torn tail), and snapshots that are
foreign, too new or at odds with the journal. No Ray here: every refusal happens before Ray starts."""

import shutil
from pathlib import Path

import pytest
import yaml

from evolve import cli
from evolve.store.events import ProposalEvent, ResumeEvent, extra_budgets
from evolve.store.integrity import changed_keys, config_sha256
from evolve.store.journal import encode_frame, journal_is_held, read_journal, read_tip
from evolve.store.run_store import RunStore, RunStoreError
from search.candidate import Candidate

CONFIG = {"task": "P04", "seed": 7, "budgets": {"proposals": 8, "evaluations": 8}, "ray": {"batch_size": 4}}
LEGACY = Path(__file__).parent / "fixtures" / "legacy_runs"


def make_run(root, config=CONFIG, generations=3, records_per_generation=4, payload=200):
    """A run as the engine leaves it: per generation some proposals, a budget record, a snapshot at it."""
    store = RunStore.create(root, config, config["task"])
    for g in range(1, generations + 1):
        for s in range(records_per_generation):
            code = "def Z_efficient(params, n):\n    return 1.0\n" + "#" * payload
            store.record(ProposalEvent(Candidate(id=f"g{g:04d}s{s:02d}", task=config["task"], code=code), g, s))
        counters = {"generation": g, "proposals": records_per_generation * g}
        seq = store.journal.append({"kind": "budget", **counters})
        store.save_snapshot({"counters": counters, "schema": 2}, seq)
    store.close()
    return store.path


def test_an_edited_config_is_refused_naming_the_keys_and_nothing_changes(tmp_path, capsys):
    run = make_run(tmp_path)
    journal = (run / "journal.msgpack").read_bytes()
    edited = {**CONFIG, "task": "P01", "budgets": {"proposals": 64, "evaluations": 8}}
    (run / "config.yaml").write_text(yaml.safe_dump(edited))
    with pytest.raises(RunStoreError, match=r"changed: budgets\.proposals, task.*--extra-proposals"):
        RunStore.open(run)
    assert (run / "journal.msgpack").read_bytes() == journal and not journal_is_held(run / "journal.msgpack")
    assert cli.main(["resume", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "budgets.proposals, task" in err
    # the same config written differently (order, comments, flow style) is the same config
    (run / "config.yaml").write_text("# a comment\nray: {batch_size: 4}\nbudgets: {evaluations: 8, proposals: 8}\n"
                                     "seed: 7\ntask: P04\n")
    with RunStore.open(run) as store:
        assert store.identity_note is None and store.loss is None


def test_changed_keys_are_dotted_paths_of_what_differs():
    old = {"a": 1, "b": {"c": 2, "d": [1, 2]}, "e": 3}
    assert changed_keys(old, {"a": 1, "b": {"c": 3, "d": [1, 2]}, "f": 0}) == ["b.c", "e", "f"]
    assert changed_keys(old, old) == []
    assert config_sha256({"x": 1, "y": 2}) == config_sha256({"y": 2, "x": 1}) != config_sha256({"x": 1, "y": 3})


def test_a_foreign_snapshot_is_refused_and_an_older_one_used_loudly(tmp_path):
    ours, theirs = make_run(tmp_path / "a"), make_run(tmp_path / "b", generations=5)
    newest_theirs = sorted((theirs / "snapshots").glob("snap-*"))[-1]
    shutil.copy(newest_theirs, ours / "snapshots" / "snap-0000000018.msgpack")   # sorts after our newest (17)
    with RunStore.open(ours) as store:      # not a witness of anything: no loss is claimed
        assert store.loss is None
        point = store.resume_point()
    assert point.snapshot == "snap-0000000017.msgpack" and point.covered == 17
    assert len(point.refused) == 1 and "belongs to run" in point.refused[0]
    assert (ours / "snapshots" / "refused" / "snap-0000000018.msgpack").exists()
    assert "snap-0000000018.msgpack refused: belongs to run" in (ours / "run.log").read_text()


def test_a_snapshot_at_odds_with_the_journal_is_refused(tmp_path):
    run = make_run(tmp_path)
    newest = sorted((run / "snapshots").glob("snap-*"))[-1]
    frame = read_journal(run / "journal.msgpack")   # the snapshot at seq 13 claims other counters
    from evolve.store.snapshots import read_snapshot
    snap = read_snapshot(newest)
    snap["state"]["counters"]["proposals"] = 64
    newest.write_bytes(encode_frame(snap))
    with RunStore.open(run) as store:
        point = store.resume_point()
    assert point.covered == 11 and "counters differ" in point.refused[0]
    assert frame.last_seq == 18


def test_sixty_kilobytes_cut_off_a_journal_is_a_loss_reported_with_its_size(tmp_path, capsys):
    run = make_run(tmp_path, generations=12, payload=2000)        # about 100 KB of records
    path = run / "journal.msgpack"
    full = read_journal(path)
    tip_seq, tip_bytes = read_tip(path)
    assert (tip_seq, tip_bytes) == (full.last_seq, len(path.read_bytes()))
    data = path.read_bytes()
    path.write_bytes(data[:-60_000])
    cut = read_journal(path)
    assert cut.torn      # from inside the file it looks like a torn tail...
    lost = full.last_seq - cut.last_seq
    assert lost > 20
    with pytest.raises(RunStoreError, match=rf"{lost} record\(s\) were lost.*--accept-loss"):
        RunStore.open(run)      # ...but the witnesses say otherwise
    assert path.read_bytes() == data[:-60_000], "a refused journal is left as it was"
    assert cli.main(["resume", str(run)]) == 2
    assert f"{lost} record(s) were lost" in capsys.readouterr().err
    assert cli.main(["show", str(run)]) == 0       # a look inside says so too
    assert f"the journal LOST {lost} record(s)" in capsys.readouterr().out
    with RunStore.open(run, accept_loss=True) as store:
        assert store.loss.lost_records == lost
        point = store.resume_point()
        assert point.covered <= cut.last_seq and all("newer than the journal" in r for r in point.refused)
        assert len(point.refused) == 3      # every kept snapshot was newer than what is left of the journal
        assert store.journal.append({"kind": "finish", "reason": "x"}) == cut.last_seq + 1
    assert read_tip(path)[0] == cut.last_seq + 1


def test_a_torn_tail_is_at_most_the_last_unacknowledged_record(tmp_path):
    run = make_run(tmp_path)
    path = run / "journal.msgpack"
    last = read_journal(path).last_seq
    frame = encode_frame({"kind": "proposal", "seq": last + 1, "t": 0.0, "candidate": {"id": "late"}})
    with open(path, "ab") as f:           # a crash in the middle of writing one more record
        f.write(frame[: len(frame) // 2])
    with RunStore.open(run) as store:      # never acknowledged: a torn tail, dropped without a fuss
        assert store.loss is None and store.journal.last_seq == last
    data = path.read_bytes()
    path.write_bytes(data[:-1])            # one byte off the last *acknowledged* record is a loss
    with pytest.raises(RunStoreError, match=r"1 record\(s\) were lost"):
        RunStore.open(run)


def test_budget_extensions_add_up_over_resumes(tmp_path):
    run = make_run(tmp_path, generations=1)
    with RunStore.open(run) as store:
        store.record(ResumeEvent("snap-0000000005.msgpack", 5, {"proposals": 4, "evaluations": 4}))
        store.record(ResumeEvent(None, 0, {"evaluations": 2, "wall_time_s": 30.0}))
        assert extra_budgets(store.journal_records()) == {"proposals": 4, "evaluations": 6, "wall_time_s": 30.0}


@pytest.mark.parametrize("strategy", ["islands", "tree"])
def test_a_run_from_before_identities_opens_and_is_bound_from_then_on(tmp_path, strategy):
    run = tmp_path / strategy
    shutil.copytree(LEGACY / strategy, run)
    with RunStore.open(run) as store:
        assert store.identity_note and "recording the hash" in store.identity_note and store.loss is None
        point = store.resume_point()
        assert point.snapshot == "snap-0000000022.msgpack" and not point.refused
        store.record(ResumeEvent(point.snapshot, point.covered, {}, config_sha256=config_sha256(store.config),
                                 config=store.config))
    with RunStore.open(run) as store:
        assert store.identity_note is None
    config = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").write_text(yaml.safe_dump({**config, "seed": 4}))
    with pytest.raises(RunStoreError, match="changed: seed"):
        RunStore.open(run)


def test_resume_flags_are_checked_before_the_run_is_touched(tmp_path, capsys):
    run = make_run(tmp_path)
    before = (run / "journal.msgpack").read_bytes()
    for flags in (["--extra-proposals", "-1"], ["--extra-wall-time", "nan"], ["--extra-wall-time", "inf"],
                  ["--extra-evaluations", "-3"], ["--address", "not an address"]):
        assert cli.main(["resume", str(run), *flags]) == 2, flags
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("evolve resume: error: ") and flags[0] in err
    assert (run / "journal.msgpack").read_bytes() == before
