"""The run directory: layout, secrets refused, atomic snapshots with fallback, best program,
status, log, reopening, and listing runs (broken ones included)."""

import dataclasses
import json
import re

import pytest
import yaml

from evaluators.verdict import Numerical, Verdict
from evolve.store.journal import encode_frame, read_journal
from evolve.store.run_list import list_runs
from evolve.store.run_store import RunStore, RunStoreError, find_secrets
from search.candidate import Candidate

CONFIG = {"task": "P04", "seed": 7, "llm": {"models": [{"name": "openai/m", "api_key_env": "STATMECH_TEST_KEY",
                                                      "max_output_tokens": 4096}]},
          "budget": {"max_tokens": 100000, "max_usd": 1.5}}
CAND = Candidate(id="abc123", task="P04", code="def Z_efficient(params, n):\n    return 1.0\n",
                 tractable_class="transfer_matrix", complexity_O="O(n)", proposer="llm", model="openai/m")
VERDICT = Verdict(task="P04", verdict="accept", numerical=Numerical(passed=True, max_rel_err=1e-12,
                                                                     largest_n_verified=4096))


def test_create_lays_out_the_run_directory(tmp_path):
    with RunStore.create(tmp_path, CONFIG, "P04") as store:
        assert re.fullmatch(r"\d{8}-\d{6}-p04-[0-9a-f]{4}", store.run_id)
        assert store.path == tmp_path / store.run_id and store.task == "P04"
        assert yaml.safe_load((store.path / "config.yaml").read_text()) == CONFIG == store.config
        assert (store.path / "snapshots").is_dir() and (store.path / "best").is_dir()
        status = json.loads((store.path / "status.json").read_text())
        assert status["state"] == "running" and status["run_id"] == store.run_id and status["task"] == "P04"
        assert "created run" in (store.path / "run.log").read_text()
        assert store.journal.append({"kind": "finish", "reason": "done"}) == 1
    header = read_journal(store.path / "journal.msgpack").header
    assert header["run_id"] == store.run_id and header["task"] == "P04"
    ids = set()
    for _ in range(5):  # several runs in the same second get distinct ids
        with RunStore.create(tmp_path, CONFIG, "P04") as s:
            ids.add(s.run_id)
    assert len(ids) == 5
    with pytest.raises(RunStoreError, match="already exists"):
        RunStore.create(tmp_path, CONFIG, "P04", run_id=store.run_id)
    with pytest.raises(RunStoreError, match="may hold only"):
        RunStore.create(tmp_path, CONFIG, "P04", run_id="../escape")


@pytest.mark.parametrize("bad", [
    {"llm": {"models": [{"name": "m", "api_key": "abc"}]}},
    {"openai_key": "k"}, {"key": "k"}, {"auth": {"github_token": "g"}}, {"password": "hunter2"},
    {"client_secret": "s"}, {"notes": ["fine", "sk-proj-abcdefghijklmnop1234"]},
])
def test_create_refuses_configs_holding_secrets_and_writes_nothing(tmp_path, bad):
    with pytest.raises(RunStoreError, match="api_key_env"):
        RunStore.create(tmp_path / "runs", {**CONFIG, **bad}, "P04")
    assert not any((tmp_path / "runs").iterdir()) if (tmp_path / "runs").exists() else True


def test_variable_names_and_counters_are_not_secrets():
    assert find_secrets(CONFIG) == []
    assert find_secrets({"api_key": None, "token_env": "X", "max_tokens": 5, "tokens": [1, 2]}) == []


def test_environment_values_never_reach_the_run_directory(tmp_path, monkeypatch):
    key = "sk-runstore-leak-0123456789abcdef"
    monkeypatch.setenv("STATMECH_TEST_KEY", key)
    with RunStore.create(tmp_path, CONFIG, "P04") as store:
        store.log(f"provider said: bad key {key}\nsecond line {key}")
        store.set_status("failed", error=1)
        store.write_best(CAND, VERDICT)
        store.save_snapshot({"x": 1}, 0)
    for f in store.path.rglob("*"):
        if f.is_file():
            assert key.encode() not in f.read_bytes(), f
    log = (store.path / "run.log").read_text()
    assert log.count("[redacted]") == 2 and "\n    second line" in log


def snapshot_at(store, g):
    """A snapshot as the engine takes one: a budget record with the counters, then the state at its seq."""
    counters = {"generation": g, "proposals": 4 * g}
    seq = store.journal.append({"kind": "budget", **counters})
    return store.save_snapshot({"counters": counters, "rng": [g, 2 * g]}, journal_seq=seq)


def test_snapshots_are_atomic_keep_three_and_fall_back_when_the_newest_is_damaged(tmp_path):
    store = RunStore.create(tmp_path, CONFIG, "P04")
    assert store.latest_snapshot() is None
    paths = [snapshot_at(store, g) for g in range(1, 6)]
    kept = sorted(p.name for p in (store.path / "snapshots").iterdir())
    assert kept == [p.name for p in paths[-3:]]
    state, seq = store.latest_snapshot()
    assert state == {"counters": {"generation": 5, "proposals": 20}, "rng": [5, 10]} and seq == 9
    snap_recs = [r for r in read_journal(store.path / "journal.msgpack").records if r["kind"] == "snapshot"]
    assert [(r["file"], r["journal_seq"]) for r in snap_recs] == [(p.name, 2 * g - 1) for g, p in enumerate(paths, 1)]
    newest = paths[-1].read_bytes()
    paths[-1].write_bytes(newest[: len(newest) // 2])  # torn
    assert store.latest_snapshot()[0]["rng"] == [4, 8]
    flipped = bytearray(paths[-2].read_bytes())
    flipped[10] ^= 1
    paths[-2].write_bytes(bytes(flipped))  # bit rot
    assert store.latest_snapshot()[1] == 5
    paths[-3].write_bytes(encode_frame({"kind": "finish"}))  # a valid frame, but not a snapshot
    assert store.latest_snapshot() is None
    assert "damaged" in (store.path / "run.log").read_text()
    (store.path / "snapshots" / ".snap-0000000060.msgpack.tmp-1").write_bytes(b"partial")  # interrupted write
    store.close()
    with RunStore.open(store.path) as again:
        assert not list((again.path / "snapshots").glob(".*"))
        point = again.resume_point()
        assert point.state is None and len(point.refused) == 3
        assert sorted(p.name for p in (again.path / "snapshots" / "refused").iterdir()) == sorted(p.name for p in paths[-3:])


def test_write_best_names_task_id_claims_and_verdict(tmp_path):
    with RunStore.create(tmp_path, CONFIG, "P04") as store:
        store.write_best(CAND, VERDICT)
        text = (store.path / "best" / "program.py").read_text()
        head, code = text.split("\n\n", 1)
        assert code == CAND.code
        for word in ("P04", "abc123", "transfer_matrix", "O(n)", "accept", "4096", store.run_id):
            assert word in head
        assert all(line.startswith("#") for line in head.splitlines())
        assert Verdict.from_dict(json.loads((store.path / "best" / "verdict.json").read_text())) == VERDICT
        assert Candidate.from_dict(json.loads((store.path / "best" / "candidate.json").read_text())) == CAND
        with pytest.raises(ValueError, match="no code"):
            store.write_best(dataclasses.replace(CAND, code=None), VERDICT)


def test_status_merges_counts_and_checks_the_state(tmp_path):
    with RunStore.create(tmp_path, CONFIG, "P04") as store:
        store.set_status("running", proposals=3, evaluations=2)
        store.set_status("interrupted", evaluations=3)
        status = json.loads((store.path / "status.json").read_text())
        assert status["state"] == "interrupted" and status["counts"] == {"proposals": 3, "evaluations": 3}
        with pytest.raises(ValueError, match="unknown run state"):
            store.set_status("sleeping")


def test_open_continues_the_journal_and_explains_what_is_wrong(tmp_path):
    store = RunStore.create(tmp_path, CONFIG, "P04")
    store.journal.append({"kind": "budget", "usd": 0.1})
    with pytest.raises(RunStoreError, match="another process"):
        RunStore.open(store.path)
    store.close()
    with RunStore.open(store.path) as again:
        assert again.run_id == store.run_id and again.config == CONFIG
        assert again.journal.append({"kind": "finish"}) == 2
    with pytest.raises(RunStoreError, match="does not exist"):
        RunStore.open(tmp_path / "nope")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "config.yaml").write_text("a: 1\n")
    with pytest.raises(RunStoreError, match="not a run directory.*journal.msgpack"):
        RunStore.open(tmp_path / "plain")
    (store.path / "journal.msgpack").write_bytes(encode_frame({"kind": "header", "schema": 99, "run_id": "x"}))
    with pytest.raises(RunStoreError, match="schema 99"):
        RunStore.open(store.path)


def test_list_runs_newest_first_with_broken_and_stale_runs(tmp_path):
    old = RunStore.create(tmp_path, CONFIG, "P01", run_id="20260101-000000-p01-aaaa")
    old.set_status("finished", proposals=4)
    old.close()
    live = RunStore.create(tmp_path, CONFIG, "P04", run_id="20260102-000000-p04-bbbb")
    crashed = RunStore.create(tmp_path, CONFIG, "P02", run_id="20260103-000000-p02-cccc")
    crashed.close()  # status still says running, but nobody holds the journal
    (tmp_path / "20260104-000000-p03-dddd").mkdir()
    garbage = tmp_path / "20260105-000000-p05-eeee"
    garbage.mkdir()
    (garbage / "config.yaml").write_text("{}\n")
    (garbage / "journal.msgpack").write_bytes(b"\x00\x00\x00\x05hello")
    runs = list_runs(tmp_path)
    assert [r.run_id for r in runs] == sorted((p.name for p in tmp_path.iterdir()), reverse=True)
    by = {r.run_id[-4:]: r for r in runs}
    assert by["eeee"].status == "unreadable" and "header" in by["eeee"].reason
    assert by["dddd"].status == "unreadable" and "missing config.yaml, journal.msgpack" in by["dddd"].reason
    assert by["cccc"].status == "stale" and by["cccc"].task == "P02"
    assert by["bbbb"].status == "running" and by["bbbb"].created
    assert by["aaaa"].status == "finished" and by["aaaa"].counts == {"proposals": 4}
    live.close()
    assert list_runs(tmp_path / "missing") == []
