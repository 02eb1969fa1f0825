"""encode(threads=): v2 batches compressed by several threads give the same bytes as one thread,
and the same errors."""
import random

import pytest

import kafkafmt
from kafkafmt.record import _encoder as encoder
from kafkafmt.errors import EncodeError


def _lists(n=12_000, seed=5):
    rnd = random.Random(seed)
    words = [rnd.randbytes(6).hex().encode() for _ in range(200)]
    return dict(keys=[None if i % 13 == 0 else b"k%d" % (i % 500) for i in range(n)],
                values=[b" ".join(rnd.choice(words) for _ in range(rnd.randint(4, 30))) for _ in range(n)],
                headers=[[("h", b"%d" % i)] if i % 5 == 0 else [] for i in range(n)],
                timestamps=[1_700_000_000_000 + i for i in range(n)])


@pytest.mark.parametrize("codec,level", [("gzip", None), ("gzip", 9), ("snappy", None), ("lz4", None),
                                         ("zstd", None), ("zstd", 7)])
def test_threads_write_the_same_bytes(codec, level, monkeypatch):
    data = _lists()
    calls = []
    pool = encoder.thread_pool

    def spy(threads, kind="decode"):
        calls.append((threads, kind))
        return pool(threads, kind)

    monkeypatch.setattr(encoder, "thread_pool", spy)
    serial = kafkafmt.encode(**data, compression=codec, compression_level=level, max_records=300, threads=1)
    assert not calls
    parallel = kafkafmt.encode(**data, compression=codec, compression_level=level, max_records=300, threads=2)
    assert len(serial) >= encoder.PARALLEL_COMPRESS_BYTES // 8 and calls and calls[0] == (2, "compress")
    assert parallel == serial
    back = kafkafmt.decode(parallel)
    assert back.value.to_pylist() == data["values"] and back.key.to_pylist() == data["keys"]


def test_threads_reencode_records_the_same():
    """Recompressing a decoded Records batch by batch (keep_batches) in threads."""
    recs = kafkafmt.decode(kafkafmt.encode(**_lists(seed=8), max_records=200))
    assert kafkafmt.encode(recs, compression="zstd", threads=3) == kafkafmt.encode(recs, compression="zstd", threads=1)


def test_threads_raise_the_serial_error(monkeypatch):
    data = _lists()
    calls = []
    pool = encoder.thread_pool
    monkeypatch.setattr(encoder, "thread_pool", lambda *a: calls.append(a) or pool(*a))
    errs = []
    for threads in (1, 2):
        with pytest.raises(EncodeError) as exc:
            kafkafmt.encode(**data, compression="gzip", compression_level=99, max_records=100, threads=threads)
        errs.append(str(exc.value))
    assert calls and errs[0] == errs[1] and "level 99" in errs[0]


def test_small_inputs_stay_on_one_thread(monkeypatch):
    calls = []
    monkeypatch.setattr(encoder, "thread_pool", lambda *a: calls.append(a))
    kafkafmt.encode(values=[b"x" * 100] * 50, compression="zstd", max_records=10, threads=2)
    assert not calls
