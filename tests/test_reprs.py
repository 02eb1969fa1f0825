"""Public classes holding arrays or long lists print a one-line summary in a REPL (as `Records` does),
naming the numbers that matter, instead of every entry."""
import os
import re
import shutil

import pytest

import kafkafmt

LIMIT = 300           # characters: one line in a terminal or two


def one_line(obj):
    text = repr(obj)
    assert "\n" not in text and len(text) <= LIMIT, text[:2000]
    assert text.startswith(f"<{type(obj).__name__}") and text.endswith(">"), text
    return text


def numbers(text):
    return [int(n) for n in re.findall(r"(?<![\w.])\d+(?![\w.])", text)]


def test_rebuilt_indexes_and_segment_scan(sample):
    seg = sorted((sample / "orders-0").glob("*.log"))[0]
    rebuilt = kafkafmt.rebuild_indexes(seg)
    assert len(rebuilt.index) > 3 and len(repr(rebuilt.scan.batches)) > LIMIT     # the arrays would be long
    text = one_line(rebuilt)
    assert seg.name in text
    assert f"{len(rebuilt.index)} index entries" in text and f"{len(rebuilt.timeindex)} time index entries" in text
    assert f"{len(rebuilt.txnindex)} aborted transactions" in text and f"byte {seg.stat().st_size} of" in text
    scan = rebuilt.scan
    text = one_line(scan)
    recs = kafkafmt.read_segment(seg)
    assert f"{len(recs.batches)} intact batches" in text
    assert f"offsets {int(recs.offset[0])}..{int(recs.offset[-1])}" in text and "0 damaged ranges" in text


def test_recovery_plan(sample, tmp_path):
    folder = shutil.copytree(sample / "payments-0", tmp_path / "logs" / "payments-0")
    with open(folder / "00000000000000000000.log", "r+b") as f:
        f.seek(400)
        f.write(b"\xff" * 8)
    plan = kafkafmt.recover(folder)
    text = one_line(plan)
    assert f"{len(plan.actions)} actions" in text and f"{len(plan.problems)} problems" in text
    for kind in {a.kind.value for a in plan.actions}:
        assert f"{kind} {sum(a.kind.value == kind for a in plan.actions)}" in text
    assert str(plan).count("\n") >= 1          # str() still lists the actions


def test_decoded_column(sample):
    recs = kafkafmt.read_log_dir(sample / "shipments-0", value_format="avro")
    decoded = recs.typed["value"]
    text = one_line(decoded)
    assert f"{len(recs)} values" in text and f"{decoded.error_count} errors" in text and "avro" in text


def test_found(sample):
    from kafkafmt.log import discover

    found = discover([str(sample)])
    text = one_line(found)
    assert f"{len(kafkafmt.list_partitions(str(sample)))} partitions in 1 log dirs" in text


def test_export_result(sample, tmp_path):
    pytest.importorskip("deltalake")
    r = kafkafmt.export_table(str(sample), str(tmp_path / "lake"), format="delta", topics=["orders", "payments"])
    text = one_line(r)
    assert f"{r.rows} rows of 3 partitions" in text and "1 commits" in text and "0 data losses" in text


def test_tiered_partition_and_aiven_manifest(tmp_path):
    from test_tiered import _AIVEN_TEST_JSON, _id, _write_local, _write_partition, kafka_layout_objects
    from kafkafmt.log.tiered import list_remote_partitions, parse_aiven_manifest
    from kafkafmt.storage import open_storage

    local = _write_partition(str(tmp_path / "src" / "orders-0"), n=4000, segment_bytes=8 * 1024)
    _write_local(str(tmp_path / "remote"), kafka_layout_objects(local, "orders", 0, _id(1)))
    st, root = open_storage(str(tmp_path / "remote"))
    part, = list_remote_partitions(st, root)
    assert len(part.segments) >= 5
    text = one_line(part)
    assert f"orders-0 (kafka layout, topic id {_id(1)}): {len(part.segments)} segments" in text
    m = parse_aiven_manifest(_AIVEN_TEST_JSON.encode())
    text = one_line(m)
    assert text == f"<AivenManifest v1: {len(m.original_starts)} chunks of 100 bytes, 1000 bytes>"
    assert os.path.sep not in text
