"""The native one-pass answer on an index file (`sidefiles.sound_index_entries`) against the Python checks it
stands in for (`read_index_file` + `check_index` / `check_timeindex`): given entries only when those find
nothing, and then the same entries; given whenever they find nothing (on batch tables in offset order), so
the checks' shortcut is taken. Index files built as a broker builds them, then damaged at random."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkafmt.log import sidefiles


@st.composite
def segments(draw):
    """(base offset, batch table, index file bytes, suffix)."""
    n = draw(st.integers(0, 12))
    base = draw(st.sampled_from([0, 7, 1 << 33]))
    sizes = np.array(draw(st.lists(st.integers(61, 900), min_size=n, max_size=n)), np.int64)
    counts = np.array(draw(st.lists(st.integers(1, 5), min_size=n, max_size=n)), np.int64)
    gaps = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.int64)
    last = base - 1 + np.cumsum(counts + gaps)
    first = last - counts + 1
    ts = np.array(draw(st.lists(st.sampled_from([-1, 5, 1000, 1001, 2000, 10 ** 12]), min_size=n, max_size=n)),
                  np.int64)
    position = np.cumsum(sizes) - sizes
    batches = {"position": position, "size": sizes, "base_offset": first, "last_offset": last, "max_timestamp": ts}
    suffix = draw(st.sampled_from([".index", ".timeindex"]))
    index, timeindex = sidefiles.build_index_entries(batches, index_interval_bytes=draw(st.sampled_from([0, 500, 4096])),
                                                     rolled=draw(st.booleans()))
    data = bytearray(sidefiles.encode_index(index, base) if suffix == ".index"
                     else sidefiles.encode_timeindex(timeindex, base))
    for _ in range(draw(st.integers(0, 2))):
        how = draw(st.sampled_from(["flip", "zeros", "cut", "swap", "table"]))
        if how == "flip" and data:
            data[draw(st.integers(0, len(data) - 1))] ^= 1 << draw(st.integers(0, 7))
        elif how == "zeros":
            data += bytes(draw(st.sampled_from([8, 12, 24, 36])))
        elif how == "cut" and data:
            del data[-draw(st.integers(1, min(len(data), 13))):]
        elif how == "swap" and len(data) >= 24:
            k = 8 if suffix == ".index" else 12
            data[:2 * k] = data[k:2 * k] + data[:k]
        elif how == "table" and n:
            col = draw(st.sampled_from(["position", "base_offset", "last_offset", "max_timestamp"]))
            batches[col] = batches[col].copy()
            batches[col][draw(st.integers(0, n - 1))] += draw(st.sampled_from([-2, -1, 1, 3]))
    return base, batches, bytes(data), suffix


@settings(max_examples=400, deadline=None)
@given(segments())
def test_native_answer_is_the_python_checks(seg):
    base, batches, data, suffix = seg
    fast = sidefiles.sound_index_entries(data, suffix, base, batches)
    try:
        entries, why = sidefiles.read_index_file(data, suffix, base)
    except Exception:
        assert fast is None
        return
    check = sidefiles.check_index if suffix == ".index" else sidefiles.check_timeindex
    clean = why is None and not check(entries, batches, base)
    if fast is not None:
        assert clean and fast.dtype == entries.dtype and fast.tolist() == entries.tolist()
    ordered = np.all(np.diff(batches["last_offset"]) > 0) if suffix == ".timeindex" else True
    if clean and ordered:
        assert fast is not None


def test_the_shortcut_is_taken_on_real_broker_files():
    """Every index file of the real corpus the checks find sound is told sound at once."""
    import glob
    import os

    import kafkafmt

    corpus = os.environ.get("KAFKAFMT_REAL_CORPUS")
    if not corpus:
        pytest.skip("KAFKAFMT_REAL_CORPUS not set")
    told = 0
    for log in sorted(glob.glob(os.path.join(corpus, "**", "*.log"), recursive=True))[:400]:
        try:
            batches = kafkafmt.read_segment(log).batches
        except kafkafmt.KafkafmtError:
            continue
        base = int(os.path.basename(log)[:-4]) if os.path.basename(log)[:-4].isdigit() else None
        for suffix in (".index", ".timeindex"):
            path = log[:-4] + suffix
            if base is None or not os.path.exists(path):
                continue
            data = open(path, "rb").read()
            entries, why = sidefiles.read_index_file(data, suffix, base)
            check = sidefiles.check_index if suffix == ".index" else sidefiles.check_timeindex
            clean = why is None and not check(entries, batches, base)
            fast = sidefiles.sound_index_entries(data, suffix, base, batches)
            assert (fast is not None) == clean, path
            told += fast is not None
    assert told > 0
