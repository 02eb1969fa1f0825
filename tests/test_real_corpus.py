"""kafkafmt on real broker segments and client-recorded record sets, against expected.json.

expected.json was written by an independent decoder (kafka-python 3.0.12). Its 'logs' counts include control
records (kafkafmt leaves them out of the data columns unless include_control=True); its 'first_records' hold
up to 4 records (control records included) as hex, where a value ending in '...' is a truncated hex prefix.
'indexes', 'timeindexes', 'snapshots' are not checked here.
"""
import collections
import json
import os
import pathlib

import numpy as np
import pytest

import kpy

import kafkafmt
from kafkafmt.errors import CorruptRecordError, CrcError, KafkafmtError  # noqa: E402

BAD_CRC = "record-sets/dpkp__kafka-python/control_batch_data_v2.log.bin"
ZSTD_LABELLED_NONE = "record-sets/tulios__kafkajs/recordBatch__fixtures__v0_recordbatch_zstd.carved.log.bin"


def _corpus(config):
    for value in (config.getoption("--real-corpus"), os.environ.get("KAFKAFMT_REAL_CORPUS")):
        if value:
            return pathlib.Path(value)
    return pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "real-corpus"


def pytest_generate_tests(metafunc):
    if "log_entry" not in metafunc.fixturenames:
        return
    path = _corpus(metafunc.config) / "expected.json"
    entries = json.loads(path.read_text())["logs"] if path.is_file() else []
    params = [pytest.param(e, id=e["file"]) for e in entries]
    if not params:   # the real_corpus fixture then skips with its reason
        params = [pytest.param(None, id="no-corpus")]
    metafunc.parametrize("log_entry", params)


def _hex_matches(got: bytes | None, want: str | None) -> bool:
    if want is None:
        return got is None
    if got is None:
        return False
    if want.endswith("..."):
        prefix = want[:-3]
        return got.hex().startswith(prefix) and len(got.hex()) >= len(prefix)
    return got.hex() == want


def test_log(real_corpus, log_entry):
    e = log_entry
    if e["file"] in (BAD_CRC, ZSTD_LABELLED_NONE):
        pytest.skip("known bad on purpose: see test_bad_crc_file / test_zstd_labelled_uncompressed")
    assert not e["errors"], "an entry with errors needs its own test"
    path = real_corpus / e["file"]
    assert path.stat().st_size == e["size"]

    strict = kafkafmt.read_segment(path)             # default settings: all CRCs in the corpus are valid
    recs = kafkafmt.read_segment(path, verify_crc=False)
    allr = kafkafmt.read_segment(path, include_control=True)
    b = recs.batches

    # counts
    assert len(b) == e["batches"]
    assert len(allr) == e["records"]
    assert len(recs) + len(recs.controls) == e["records"]
    assert len(strict) == len(recs)
    assert dict(collections.Counter(str(int(m)) for m in np.asarray(b.magic))) == e["magics"]
    assert dict(collections.Counter(kpy.CODEC_NAMES[int(c)] for c in np.asarray(b.codec))) == e["codecs"]
    assert int(np.asarray(b.is_control).sum()) == e["control_batches"]
    assert dict(collections.Counter(kpy.CONTROL_NAMES[int(t)] for t in np.asarray(recs.controls.type))) \
        == e["control_types"]
    crc_valid = np.asarray(b.crc_valid).astype(bool)
    assert int(crc_valid.sum()) == e["crc_ok"]
    assert int((~crc_valid).sum()) == e["crc_bad"]
    assert recs.trailing_bytes == e["trailing_bytes"]
    assert recs.valid_bytes == e["size"] - e["trailing_bytes"]
    assert bool(recs.truncated) == (e["trailing_bytes"] > 0)

    # batch-level details
    magic = np.asarray(b.magic)
    v2 = magic == 2
    assert dict(collections.Counter(str(int(t)) for t in np.asarray(b.timestamp_type)[v2])) == e["timestamp_types"]
    assert sorted(set(np.asarray(b.partition_leader_epoch)[v2].tolist())) == e["leader_epochs"]
    assert int(np.asarray(b.is_transactional).sum()) == e["transactional_batches"]
    assert int((np.asarray(b.producer_id) > -1).sum()) == e["batches_with_producer_id"]
    assert int(np.asarray(b.record_count).sum()) == e["records"]
    sizes = np.asarray(b.size).astype(np.int64)
    pos = np.asarray(b.position).astype(np.int64)
    assert pos.tolist() == (np.concatenate([[0], np.cumsum(sizes)[:-1]]) if len(sizes) else sizes).tolist()
    assert int(sizes.sum()) == e["size"] - e["trailing_bytes"]
    hdr_counts = np.diff(np.asarray(allr.headers.offsets))
    assert int((hdr_counts > 0).sum()) == e["records_with_headers"]

    # offsets and first records
    if e["records"]:
        assert int(allr.offset[0]) == e["first_offset"]
        assert int(allr.offset[-1]) == e["last_offset"]
    ctl_at = {int(o): kpy.CONTROL_NAMES[int(t)] for o, t in zip(np.asarray(allr.controls.offset),
                                                                 np.asarray(allr.controls.type))}
    heads = allr.headers.to_pylist()
    for i, fr in enumerate(e["first_records"]):
        where = f"record {i} (offset {fr['offset']})"
        assert int(allr.offset[i]) == fr["offset"], where
        if fr["ts"] is None:      # magic 0
            assert int(allr.timestamp[i]) == -1 and int(allr.timestamp_type[i]) == -1, where
        else:
            assert int(allr.timestamp[i]) == fr["ts"], where
        assert _hex_matches(allr.key[i], fr["key"]), f"{where}: key {allr.key[i]!r} vs {fr['key']}"
        assert _hex_matches(allr.value[i], fr["value"]), f"{where}: value {allr.value[i]!r:.80} vs {fr['value']}"
        want_h = fr.get("headers", [])
        got_h = heads[i]
        assert len(got_h) == len(want_h), where
        for (gk, gv), (wk, wv) in zip(got_h, want_h):
            assert gk == wk and _hex_matches(gv, wv), f"{where}: header {gk}={gv!r} vs {wk}={wv}"
        if "control_type" in fr:
            assert ctl_at.get(fr["offset"]) == fr["control_type"], where

    # Arrow / pandas views are valid
    for r in (recs, allr):
        t = r.to_arrow()
        t.validate(full=True)
        assert t.num_rows == len(r)
        assert t.column("offset").to_pylist() == np.asarray(r.offset).tolist()
        assert len(r.to_pandas()) == len(r)

    # the default (data-only) view holds exactly the non-control records, in order
    ctl_offsets = set(np.asarray(allr.controls.offset).tolist())
    assert recs.offset.tolist() == [o for o in allr.offset.tolist() if o not in ctl_offsets]


def test_log_matches_kafka_python(real_corpus, log_entry):
    """Field-by-field comparison with kafka-python on every readable corpus file."""
    e = log_entry
    if e["file"] == ZSTD_LABELLED_NONE:
        pytest.skip("kafka-python cannot decode it either")
    data = (real_corpus / e["file"]).read_bytes()
    for include_control in (False, True):
        truth = kpy.kp_decode(data, include_control=include_control)
        recs = kafkafmt.decode(data, verify_crc=False, include_control=include_control)
        kpy.assert_records_match(recs, truth)


def test_bad_crc_file(real_corpus):
    path = real_corpus / BAD_CRC
    with pytest.raises(CrcError) as ei:
        kafkafmt.read_segment(path)
    err = ei.value
    assert isinstance(err, CorruptRecordError) and isinstance(err, ValueError)
    assert err.offset == 0, "the CrcError must name the batch's offset"
    assert err.position is not None and 0 <= err.position < path.stat().st_size
    assert err.file is not None and pathlib.Path(err.file).name == path.name
    assert "0" in str(err)
    with pytest.raises(CrcError):
        kafkafmt.decode(path.read_bytes())
    # verify_crc=False decodes it anyway and reports the bad CRC
    recs = kafkafmt.read_segment(path, verify_crc=False)
    assert len(recs) == 0
    assert np.asarray(recs.batches.crc_valid).tolist() == [False]
    assert np.asarray(recs.controls.type).tolist() == [0]
    assert len(kafkafmt.read_segment(path, verify_crc=False, include_control=True)) == 1


def test_zstd_labelled_uncompressed(real_corpus):
    """kafkajs fixture: attributes say 'none', the payload is a zstd frame: no records can be read."""
    path = real_corpus / ZSTD_LABELLED_NONE
    for kwargs in ({}, {"verify_crc": False}):
        with pytest.raises(CorruptRecordError) as ei:
            kafkafmt.read_segment(path, **kwargs)
        err = ei.value
        assert not isinstance(err, CrcError), "its CRC is valid"
        assert isinstance(err, KafkafmtError)
        assert err.position is not None and 0 <= err.position < path.stat().st_size
        assert err.offset == 0
        assert err.file is not None and pathlib.Path(err.file).name == path.name
