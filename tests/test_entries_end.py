"""`entries_end` (where a reader's chunk of whole entries ends) agrees with the batch table
`scan_batches` builds, on real broker-written data (v0, v1, v2, compressed) whole, cut and damaged."""
from __future__ import annotations

import random

import numpy as np

from kafkafmt.record import entries_end, scan_batches


def _reference(data, start, stop):
    t, _ = scan_batches(data, verify_crc=None, start=start, stop=stop)
    n = len(t["position"])
    return n, (int(t["position"][-1] + t["size"][-1]) if n else start)


def _files(real_corpus):
    return sorted(p for p in real_corpus.rglob("*") if p.is_file() and (p.suffix == ".log" or p.name.endswith(".bin")))


def test_entries_end_matches_the_batch_table(real_corpus):
    files = _files(real_corpus)
    assert files
    for path in files:
        data = np.frombuffer(path.read_bytes(), np.uint8)
        t, _ = scan_batches(data, verify_crc=None)
        cuts = [0, len(data)] + [int(p) for p in t["position"][:8]] + [int(p) + 7 for p in t["position"][:8]]
        for start in sorted(set(c for c in cuts if c <= len(data)))[:6]:
            for stop in sorted(set(c for c in cuts if start <= c <= len(data))):
                assert entries_end(data, start=start, stop=stop) == _reference(data, start, stop), (path, start, stop)


def test_entries_end_stops_where_the_table_stops_on_damage(real_corpus):
    """Bytes of entry headers changed at random (size, magic, record count, v0/v1 key and value
    lengths...): both stop at the same entry -- and some of the damage does stop them early."""
    rng = random.Random(37)
    early = 0
    for path in _files(real_corpus):
        clean = path.read_bytes()
        t, _ = scan_batches(clean, verify_crc=None)
        whole = len(t["position"])
        for _ in range(40):
            data = bytearray(clean)
            if whole:
                at = int(t["position"][rng.randrange(whole)]) + rng.randrange(70)
            else:
                at = rng.randrange(max(len(data), 1))
            if at < len(data):
                data[at] = rng.choice([0x00, 0xFF, 0x7F, 0x80, data[at] ^ (1 << rng.randrange(8))])
            got = entries_end(bytes(data))
            assert got == _reference(bytes(data), 0, None), (path, at)
            early += got[0] < whole
    assert early > 20
