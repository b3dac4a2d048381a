"""The journal: durable framed records, torn tails dropped and repaired, corruption and foreign
schemas refused, one writer at a time."""

import random
import struct

import numpy as np
import pytest

from evolve.store.journal import (JOURNAL_SCHEMA, Journal, JournalCorruptError, JournalLockedError,
                            JournalSchemaError, encode_frame, read_header, read_journal)


def records(rng, n):
    kinds = ["proposal", "evaluation", "promotion", "migration", "budget"]
    out = []
    for i in range(n):
        out.append({"kind": kinds[i % len(kinds)], "id": f"p{i:03d}", "code": "x = 1\n" * rng.randint(0, 20),
                    "score": [rng.random(), rng.randint(0, 99)], "nested": {"a": [1, 2.5, None, "s"]}})
    return out


def write(path, recs, meta=None):
    with Journal.create(path, "run-1", meta or {"task": "P04"}) as j:
        seqs = [j.append(r) for r in recs]
    return seqs


def frame_offsets(path):
    """Start offset of every frame (header first) and the file length."""
    data, offs, off = path.read_bytes(), [], 0
    while off < len(data):
        offs.append(off)
        off += 8 + struct.unpack(">I", data[off:off + 4])[0]
    return offs, len(data)


def test_roundtrip_keeps_every_record_in_order_with_seq_and_time(tmp_path):
    rng = random.Random(1)
    recs = records(rng, 12)
    seqs = write(tmp_path / "j", recs)
    assert seqs == list(range(1, 13))
    got = read_journal(tmp_path / "j")
    assert not got.torn and got.dropped_bytes == 0
    assert got.header["kind"] == "header" and got.header["schema"] == JOURNAL_SCHEMA
    assert got.header["run_id"] == "run-1" and got.header["task"] == "P04" and got.header["created"].endswith("Z")
    assert read_header(tmp_path / "j") == got.header
    for want, have, seq in zip(recs, got.records, seqs):
        assert have["seq"] == seq and isinstance(have["t"], float)
        assert {k: v for k, v in have.items() if k not in ("seq", "t")} == want
    assert [r["t"] for r in got.records] == sorted(r["t"] for r in got.records)


def test_a_record_is_readable_as_soon_as_append_returns(tmp_path):
    j = Journal.create(tmp_path / "j", "r", {})
    for i in range(3):
        j.append({"kind": "budget", "usd": i})
        assert [r["usd"] for r in read_journal(tmp_path / "j").records] == list(range(i + 1))
    j.close()


@pytest.mark.parametrize("seed", [0])
def test_truncation_at_every_byte_of_the_last_record_is_a_torn_tail_that_open_append_repairs(tmp_path, seed):
    rng = random.Random(seed)
    n = 6
    recs = records(rng, n)
    recs[-1]["code"] = "y = 2\n"  # a short last record: every cut is tested
    path = tmp_path / "j"
    write(path, recs)
    full = path.read_bytes()
    offs, end = frame_offsets(path)
    start = offs[-1]
    cut_path = tmp_path / "cut"
    for cut in range(start + 1, end):
        cut_path.write_bytes(full[:cut])
        got = read_journal(cut_path)
        assert got.torn and got.dropped_bytes == cut - start, cut
        assert [r["id"] for r in got.records] == [r["id"] for r in recs[:-1]]
        with Journal.open_append(cut_path) as j:
            assert j.last_seq == n - 1
            assert j.append({"kind": "finish", "reason": "a"}) == n
            j.append({"kind": "finish", "reason": "b"})
        again = read_journal(cut_path)
        assert not again.torn
        assert [r["seq"] for r in again.records] == list(range(1, n + 2))
        assert [r.get("reason") for r in again.records[-2:]] == ["a", "b"]
        assert again.records[n - 2]["id"] == recs[n - 2]["id"]


def test_a_damaged_last_record_is_torn_but_damage_in_the_middle_is_corruption(tmp_path):
    path = tmp_path / "j"
    write(path, records(random.Random(2), 5))
    data = bytearray(path.read_bytes())
    offs, end = frame_offsets(path)
    last = bytearray(data)
    last[offs[-1] + 6] ^= 0xFF  # payload byte of the last record: CRC mismatch at the tail
    path.write_bytes(bytes(last))
    got = read_journal(path)
    assert got.torn and len(got.records) == 4
    for pos in (offs[2] + 6, offs[2] + 1, end - 1 - (end - offs[3])):  # payload, length field, CRC of a middle record
        bad = bytearray(data)
        bad[pos] ^= 0x5A
        path.write_bytes(bytes(bad))
        with pytest.raises(JournalCorruptError, match="followed by a valid record"):
            read_journal(path)
        with pytest.raises(JournalCorruptError):
            Journal.open_append(path)


def test_a_zero_filled_tail_after_a_crash_is_dropped(tmp_path):
    path = tmp_path / "j"
    write(path, records(random.Random(3), 3))
    path.write_bytes(path.read_bytes() + bytes(4096))
    got = read_journal(path)
    assert got.torn and got.dropped_bytes == 4096 and len(got.records) == 3


@pytest.mark.parametrize("schema,age", [(JOURNAL_SCHEMA + 1, "newer"), (0, "older")])
def test_a_foreign_schema_is_refused_naming_both_versions(tmp_path, schema, age):
    path = tmp_path / "j"
    header = {"kind": "header", "schema": schema, "run_id": "r", "seq": 0, "t": 0.0}
    path.write_bytes(encode_frame(header) + encode_frame({"kind": "finish", "seq": 1, "t": 0.0}))
    for reader in (read_journal, read_header, Journal.open_append):
        with pytest.raises(JournalSchemaError) as err:
            reader(path)
        msg = str(err.value)
        assert f"schema {schema}" in msg and f"schema {JOURNAL_SCHEMA}" in msg and age in msg


def test_files_that_are_not_journals_are_refused(tmp_path):
    rng = np.random.default_rng(0)
    for name, data in [("empty", b""), ("noise", rng.bytes(300)), ("no-header", encode_frame({"kind": "finish"})),
                       ("torn-header", encode_frame({"kind": "header", "schema": 1, "run_id": "r"})[:-3])]:
        (tmp_path / name).write_bytes(data)
        with pytest.raises(JournalCorruptError, match="header"):
            read_journal(tmp_path / name)


def test_one_writer_at_a_time_and_create_refuses_an_existing_file(tmp_path):
    path = tmp_path / "j"
    j = Journal.create(path, "r", {})
    with pytest.raises(JournalLockedError, match="another process"):
        Journal.open_append(path)
    j.close()
    with pytest.raises(FileExistsError):
        Journal.create(path, "r", {})
    with Journal.open_append(path) as j2:
        assert j2.append({"kind": "finish"}) == 1
    with pytest.raises(Exception, match="closed"):
        j2.append({"kind": "finish"})


def test_append_validates_records_and_stores_numpy_values_as_plain_numbers(tmp_path):
    with Journal.create(tmp_path / "j", "r", {}) as j:
        for bad in ({"kind": "header"}, {"id": 1}, ["kind", "proposal"]):
            with pytest.raises(ValueError):
                j.append(bad)
        with pytest.raises(TypeError, match="plain types"):
            j.append({"kind": "budget", "x": object()})
        rec = {"kind": "evaluation", "score": np.array([1.5, 2.0]), "n": np.int64(7)}
        j.append(rec)
        assert "seq" not in rec  # the caller's dict is not modified
    got = read_journal(tmp_path / "j").records
    assert [r["kind"] for r in got] == ["evaluation"]
    assert got[0]["score"] == [1.5, 2.0] and got[0]["n"] == 7 and got[0]["seq"] == 1
