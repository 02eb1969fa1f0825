"""Hypothesis: random partition directories written with LogWriter (segment sizes, index
intervals, codecs, offset gaps, jittered and LogAppendTime timestamps, a legacy v1 prefix, empty
batches, missing side files), random offset/time bounds: read_log_dir and iter_log_dir give exactly
what a brute-force filter of the written records gives; read_committed over random interleavings
of transactional producers gives what Kafka's rule gives. Bounded to a few seconds each."""
import os
import tempfile
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkafmt
from kafkafmt import LogWriter
from kafkafmt.errors import KafkafmtWarning

T0 = 1_700_000_000_000
SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

append_st = st.fixed_dictionaries({
    "n": st.integers(1, 9),
    "codec": st.sampled_from([None, "lz4", "zstd", "gzip", "snappy"]),
    "kind": st.sampled_from(["plain", "plain", "gaps", "lat", "empty"]),
    "jitter": st.integers(0, 80),
    "batch_size": st.sampled_from([40, 150, 16384]),
    "vlen": st.integers(0, 60),
})

log_st = st.fixed_dictionaries({
    "segment_bytes": st.sampled_from([250, 600, 1500, 1 << 20]),
    "index_interval_bytes": st.sampled_from([1, 90, 300, 4096]),
    "base_offset": st.sampled_from([0, 0, 1000]),
    "v1_prefix": st.integers(0, 6),
    "appends": st.lists(append_st, min_size=1, max_size=25),
    "drop": st.lists(st.tuples(st.integers(0, 20), st.sampled_from([".index", ".timeindex"])), max_size=3),
})


def write(path, spec, seed_jitter):
    """Write the log; return [(offset, timestamp, value)] of every record, in offset order."""
    rows = []
    t = T0
    with LogWriter(path, segment_bytes=spec["segment_bytes"], index_interval_bytes=spec["index_interval_bytes"],
                   base_offset=spec["base_offset"]) as w:
        if spec["v1_prefix"]:
            n = spec["v1_prefix"]
            stamps = [t + 7 * i for i in range(n)]
            vals = [f"v1:{i}".encode() for i in range(n)]
            first, last = w.append(values=vals, timestamps=stamps, magic=1, compression="gzip", max_records=2)
            rows += zip(range(first, last + 1), stamps, vals)
            t += 7 * n
        for k, a in enumerate(spec["appends"]):
            n = a["n"]
            stamps = [t + 10 * i + (seed_jitter * (k + 3) * (i + 5)) % (2 * a["jitter"] + 1) - a["jitter"]
                      for i in range(n)]
            vals = [f"{k}:{i}:".encode() + b"v" * a["vlen"] for i in range(n)]
            if a["kind"] == "gaps":
                offsets = [w.next_offset + 1 + 2 * i + (i * k) % 3 for i in range(n)]
                offsets = sorted(set(offsets))
                vals, stamps = vals[:len(offsets)], stamps[:len(offsets)]
                w.append(values=vals, timestamps=stamps, offsets=offsets, compression=a["codec"],
                         batch_size=a["batch_size"])
                rows += zip(offsets, stamps, vals)
            elif a["kind"] == "lat":
                lat = t - a["jitter"]
                first, last = w.append(values=vals, timestamps=stamps, compression=a["codec"],
                                       timestamp_type="LogAppendTime", log_append_time=lat)
                rows += zip(range(first, last + 1), [lat] * n, vals)
            elif a["kind"] == "empty":
                w.append_empty_batch(last_offset=w.next_offset + n, timestamp=t)
            else:
                first, last = w.append(values=vals, timestamps=stamps, compression=a["codec"],
                                       batch_size=a["batch_size"])
                rows += zip(range(first, last + 1), stamps, vals)
            t += 10 * n
    return rows


def brute(rows, so, eo, st_, et):
    lo, hi = so, eo
    if st_ is not None:
        hit = [o for o, t, _ in rows if t >= st_]
        if not hit:
            return []
        lo = hit[0] if lo is None else max(lo, hit[0])
    if et is not None:
        hit = [o for o, t, _ in rows if t >= et]
        if hit:
            hi = hit[0] if hi is None else min(hi, hit[0])
    return [(o, t, v) for o, t, v in rows if (lo is None or o >= lo) and (hi is None or o < hi)]


def bound_st(lo, hi):
    return st.one_of(st.none(), st.integers(lo - 3, hi + 3))


@SETTINGS
@given(spec=log_st, seed_jitter=st.integers(0, 1000), data=st.data())
def test_random_logs_random_bounds(spec, seed_jitter, data):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rand.topic-with-dashes-4")
        rows = write(path, spec, seed_jitter)
        logs = sorted(n for n in os.listdir(path) if n.endswith(".log"))
        for i, suffix in spec["drop"]:
            victim = os.path.join(path, logs[i % len(logs)][:20] + suffix)
            if os.path.exists(victim):
                os.remove(victim)
        if not rows:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", KafkafmtWarning)
                assert len(kafkafmt.read_log_dir(path)) == 0
            return
        offs = [r[0] for r in rows]
        stamps = [r[1] for r in rows]
        assert offs == sorted(set(offs))
        with warnings.catch_warnings():
            if not spec["drop"]:
                warnings.simplefilter("error")          # sound indexes: no fallback
            else:
                warnings.simplefilter("ignore", KafkafmtWarning)
            full = kafkafmt.read_log_dir(path)
            assert list(zip(full.offset.tolist(), full.timestamp.tolist(), full.value.to_pylist())) == rows
            for q in range(6):
                so = data.draw(bound_st(offs[0], offs[-1]), label="start_offset")
                eo = data.draw(bound_st(offs[0], offs[-1]), label="end_offset")
                time_st = st.one_of(st.none(), st.sampled_from(stamps), st.integers(min(stamps) - 3, max(stamps) + 3))
                st_ = data.draw(time_st, label="start_timestamp")
                et = data.draw(time_st, label="end_timestamp")
                want = brute(rows, so, eo, st_, et)
                recs = kafkafmt.read_log_dir(path, start_offset=so, end_offset=eo, start_timestamp=st_,
                                             end_timestamp=et)
                got = list(zip(recs.offset.tolist(), recs.timestamp.tolist(), recs.value.to_pylist()))
                assert got == want, (so, eo, st_, et)
                if q < 2:
                    max_bytes = data.draw(st.sampled_from([1, 64, 500, 1 << 20]), label="max_bytes")
                    chunks = kafkafmt.iter_log_dir(path, start_offset=so, end_offset=eo, start_timestamp=st_,
                                                   end_timestamp=et, max_bytes=max_bytes)
                    assert [o for c in chunks for o in c.offset.tolist()] == [w[0] for w in want]
                    meta = kafkafmt.read_log_dir(path, start_offset=so, end_offset=eo, start_timestamp=st_,
                                                 end_timestamp=et, columns=["offset", "timestamp"])
                    assert meta.offset.tolist() == [w[0] for w in want] and "value" not in meta.columns


# ---------------------------------------------------------------------------------------------
# read_committed

op_st = st.one_of(
    st.tuples(st.just("plain"), st.integers(1, 4)),
    st.tuples(st.just("txn"), st.integers(0, 3), st.integers(1, 4)),
    st.tuples(st.just("end"), st.integers(0, 3), st.sampled_from(["commit", "abort"])),
)


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op_st, min_size=1, max_size=30), segment_bytes=st.sampled_from([300, 900, 1 << 20]),
       data=st.data())
def test_read_committed_random_interleavings(ops, segment_bytes, data):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tx-0")
        log = []            # ("data", pid or None, [offsets]) / ("end", pid, kind, offset)
        with LogWriter(path, segment_bytes=segment_bytes, index_interval_bytes=100) as w:
            for op in ops:
                if op[0] == "plain":
                    first, last = w.append(values=[b"p"] * op[1], timestamps=[T0] * op[1], compression="lz4")
                    log.append(("data", None, list(range(first, last + 1))))
                elif op[0] == "txn":
                    pid = 100 + op[1]
                    first, last = w.append(values=[b"t"] * op[2], timestamps=[T0] * op[2], producer_id=pid,
                                           transactional=True)
                    log.append(("data", pid, list(range(first, last + 1))))
                else:
                    pid = 100 + op[1]
                    log.append(("end", pid, op[2], w.append_control(op[2], producer_id=pid, timestamp=T0)))
        # Kafka's rule, from the operations alone
        open_, fate = {}, {}
        for entry in log:
            if entry[0] == "data" and entry[1] is not None:
                open_.setdefault(entry[1], []).extend(entry[2])
            elif entry[0] == "end":
                for o in open_.pop(entry[1], []):
                    fate[o] = entry[2]
        lso = min(min(v) for v in open_.values()) if open_ else None
        data_offsets = [o for e in log if e[0] == "data" for o in e[2]]
        transactional = {o for e in log if e[0] == "data" and e[1] is not None for o in e[2]}
        keep = [o for o in data_offsets if (lso is None or o < lso)
                and (o not in transactional or fate.get(o) == "commit")]
        assert kafkafmt.read_log_dir(path).offset.tolist() == data_offsets
        assert kafkafmt.read_log_dir(path, isolation="read_committed").offset.tolist() == keep
        so = data.draw(st.one_of(st.none(), st.integers(0, max(data_offsets + [0]) + 1)), label="start_offset")
        eo = data.draw(st.one_of(st.none(), st.integers(0, max(data_offsets + [0]) + 2)), label="end_offset")
        sub = [o for o in keep if (so is None or o >= so) and (eo is None or o < eo)]
        assert kafkafmt.read_log_dir(path, isolation="read_committed", start_offset=so,
                                     end_offset=eo).offset.tolist() == sub
        for name in os.listdir(path):
            if name.endswith(".txnindex"):
                os.remove(os.path.join(path, name))
        assert kafkafmt.read_log_dir(path, isolation="read_committed").offset.tolist() == keep
        chunks = kafkafmt.iter_log_dir(path, isolation="read_committed", start_offset=so, end_offset=eo, max_bytes=16)
        assert [o for c in chunks for o in c.offset.tolist()] == sub
