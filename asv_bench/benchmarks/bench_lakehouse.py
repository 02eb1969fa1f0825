"""Exporting log dirs to lakehouse tables (``kafkafmt export --format iceberg|delta``) beside today's
Parquet export of the same data.

Data (written once into the corpus cache, see ``corpus.cache_dir``): ``lakehouse-<MB>``, a log dir of
4 partitions of one topic, lz4, ``MB`` MiB of record batches in all (192; 24 in quick mode): JSON-like
values of 150-450 bytes, string keys, a header on every tenth record, CreateTime timestamps over three
days (so the default partitioning by topic and day gives several data files per run).

Benchmarks (one core, as the suite's readers; each call exports into a fresh table, through the
command line in this process):

* ``time_export`` for ``parquet`` (one file), ``iceberg`` (an embedded SQLite catalog in the
  warehouse folder, created by the run) and ``delta``;
* ``track_ratio_export_rate_vs_parquet``: the rate of the table export ÷ that of the Parquet export,
  measured interleaved (the issue's target: >= 0.7);
* ``track_peak_mb_export``: the peak resident memory one export adds (a fresh interpreter).

Typed (issue 36): ``typed-<records>``, a log dir of 2 partitions of ``orders`` whose values are
bench_avro's NESTED records in the Schema Registry's wire format (a nested record, an array of
records, an array of strings, a map of longs; 400,000 records, 40,000 in quick mode, lz4) and its
``_schemas`` topic. ``ExportTypedTable`` exports it with ``--value-format avro``: the typed Parquet
export (one file), a typed Iceberg and a typed Delta table (value struct columns, the dead-letter
check, the schema record); ``track_ratio_typed_export_rate_vs_parquet`` is the rate of the table export
÷ that of the typed Parquet export, interleaved (the issue's target: >= 0.7).

Many small partitions: ``ExportManyTable.track_ratio_export_rate_vs_parquet``, the rate of an Iceberg or Delta
export of 2,000 small partitions (``bench_scaling``'s ``many-2000``) ÷ that of their Parquet export, interleaved.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile

import numpy as np

from . import common, corpus
from .common import require_kafkafmt

MB = 192
QUICK_MB = 24
PARTITIONS = 4
T0 = 1_700_000_000_000
SPAN_MS = 3 * 86_400_000


def _write(root, mb):
    import kafkafmt

    rng = np.random.default_rng(26)
    per_partition = (mb << 20) // PARTITIONS
    records = 0
    for p in range(PARTITIONS):
        w = kafkafmt.LogWriter(root / f"events-{p}", segment_bytes=64 << 20)
        written, first = 0, 0
        while written < per_partition:
            n = 5000
            users = rng.integers(0, 100_000, n)
            amounts = rng.integers(0, 1_000_000, n)
            pads = rng.integers(100, 400, n)
            values = [b'{"id":%d,"user":"u%06d","amount":%d.%02d,"note":"%s"}' % (first + i, users[i], amounts[i] // 100,
                                                                             amounts[i] % 100, b"x" * int(pads[i]))
                      for i in range(n)]
            keys = [b"u%06d" % u for u in users]
            headers = [[("source", b"bench")] if (first + i) % 10 == 0 else [] for i in range(n)]
            frac = (first + np.arange(n)) / (per_partition / 330)
            ts = (T0 + np.minimum(frac, 1.0) * SPAN_MS).astype(np.int64).tolist()
            w.append(keys=keys, values=values, timestamps=ts, headers=headers, compression="lz4", batch_size=500)
            written += sum(map(len, values)) // 2       # lz4 keeps about half of these values
            first += n
        w.close()
        records += first
    return {"records": records, "partitions": PARTITIONS}


def _cached(name, write):
    """(path, metadata) of a log dir of the corpus cache, written once by ``write(path)`` (which
    returns its metadata) into a temporary folder renamed when complete."""
    base = corpus.cache_dir() / "logdirs"
    final = base / name
    done = base / f"{name}.json"
    if not (done.exists() and final.is_dir()):
        base.mkdir(parents=True, exist_ok=True)
        tmp = base / f"{name}.{os.getpid()}.tmp"
        if tmp.exists():
            shutil.rmtree(tmp)
        meta = write(tmp)
        os.replace(tmp, final)
        done.write_text(json.dumps(meta))
    return str(final), json.loads(done.read_text())


def log_dir():
    """(path, metadata) of the benchmark's log dir, written once."""
    mb = QUICK_MB if common.asv_quick() else MB
    return _cached(f"lakehouse-{mb}", lambda root: _write(root, mb))


TYPED_RECORDS = 400_000
QUICK_TYPED_RECORDS = 40_000


def _write_typed(root, n):
    import kafkafmt

    from .bench_avro import NESTED, SCHEMA_ID, data

    key = json.dumps({"keytype": "SCHEMA", "subject": "orders-value", "version": 1, "magic": 1}).encode()
    value = json.dumps({"subject": "orders-value", "version": 1, "id": SCHEMA_ID, "schemaType": "AVRO",
                        "schema": json.dumps(NESTED, separators=(",", ":")), "deleted": False}).encode()
    kafkafmt.write_log_dir(str(root / "_schemas-0"), keys=[key], values=[value])
    values = data("nested")[0]
    per = n // 2
    for p in range(2):
        w = kafkafmt.LogWriter(root / f"orders-{p}", segment_bytes=64 << 20)
        for start in range(0, per, 20_000):
            m = min(20_000, per - start)
            ts = (T0 + (start + np.arange(m)) * (SPAN_MS // per)).tolist()
            w.append(keys=[b"o%d" % (start + i) for i in range(m)],
                     values=[values[(start + i) % len(values)] for i in range(m)], timestamps=ts,
                     compression="lz4", batch_size=500)
        w.close()
    return {"records": per * 2, "partitions": 2}


def typed_log_dir():
    """(path, metadata) of the typed benchmark's log dir, written once."""
    n = QUICK_TYPED_RECORDS if common.asv_quick() else TYPED_RECORDS
    return _cached(f"lakehouse-typed-{n}", lambda root: _write_typed(root, n))


def exporter(fmt, root, out_dir, typed=False):
    """A zero-argument callable exporting ``root`` into a fresh table (or file) under ``out_dir``
    each call (the previous one removed first); ``typed``: the ``orders`` topic's Avro values."""
    from kafkafmt.cli import main

    counter = itertools.count()
    last = [None]

    def run():
        if last[0] is not None:
            shutil.rmtree(last[0], ignore_errors=True)
        where = last[0] = os.path.join(out_dir, f"{fmt}-{next(counter)}")
        if fmt == "parquet":
            os.makedirs(where)
            args = ["export", root, "--to", os.path.join(where, "out.parquet")]
        elif fmt == "iceberg":
            args = ["export", root, "--format", "iceberg", "--to", where, "--table", "kafka.events"]
        else:
            args = ["export", root, "--format", "delta", "--to", where]
        if typed:
            args += ["--topics", "orders", "--value-format", "avro"]
        status = main(args + ["--quiet"])
        assert status == 0, f"export {fmt} failed ({status})"

    return run


def _needs(fmt):
    mod = {"iceberg": "pyiceberg", "delta": "deltalake"}.get(fmt)
    if mod:
        try:
            __import__(mod)
        except ImportError:
            raise NotImplementedError(f"{mod} is not installed (pip install 'kafkafmt[lakehouse]')") from None


def _ratio_pair(fmt):
    root, _ = log_dir()
    out = tempfile.mkdtemp(prefix="kafkafmt-bench-lakehouse-")
    # time(parquet) / time(table) = rate(table) / rate(parquet)
    return exporter("parquet", root, out), exporter(fmt, root, out)


def _typed_ratio_pair(fmt):
    root, _ = typed_log_dir()
    out = tempfile.mkdtemp(prefix="kafkafmt-bench-lakehouse-")
    return exporter("parquet", root, out, typed=True), exporter(fmt, root, out, typed=True)


common.register_ratio("export_typed_table_vs_parquet",
                      "typed export to a table: rate ÷ that of the typed Parquet export (>= 0.7)",
                      ["iceberg", "delta"], _typed_ratio_pair, better="higher", family="logdir",
                      track="bench_lakehouse.ExportTypedTable.track_ratio_typed_export_rate_vs_parquet")


common.register_ratio("export_table_vs_parquet", "export to a table: rate ÷ that of the Parquet export (>= 0.7)",
                      ["iceberg", "delta"], _ratio_pair, better="higher", family="logdir",
                      track="bench_lakehouse.ExportTable.track_ratio_export_rate_vs_parquet")


def peak_factory(fmt):
    """For `common.peak_delta_bytes`: the export of one format, ready to run."""
    import pyarrow  # noqa: F401 - loaded before the baseline, as in every benchmark process

    _needs(fmt)
    root, _ = log_dir()
    out = tempfile.mkdtemp(prefix="kafkafmt-bench-lakehouse-")
    if fmt == "iceberg":
        import pyiceberg.catalog.sql  # noqa: F401
        import pyiceberg.io.pyarrow  # noqa: F401
    elif fmt == "delta":
        import deltalake  # noqa: F401
    return exporter(fmt, root, out)


class _Exports:
    """The exports of one log dir (``log_dir``, ``typed``: its Avro values) to Parquet, Iceberg and
    Delta (no benchmark of its own)."""

    params = ["parquet", "iceberg", "delta"]
    param_names = ["format"]
    timeout = 900
    typed = False

    def setup(self, fmt):
        require_kafkafmt()
        common.note_quick()
        _needs(fmt)
        self.root, self.meta = typed_log_dir() if self.typed else log_dir()
        self.out = tempfile.mkdtemp(prefix="kafkafmt-bench-lakehouse-")
        self.run = exporter(fmt, self.root, self.out, typed=self.typed)
        self.run()      # imports the table library, warms the page cache; fails loudly if the export does

    def teardown(self, fmt):
        shutil.rmtree(self.out, ignore_errors=True)


class ExportTable(_Exports):
    """``kafkafmt export`` of one log dir to Parquet, Iceberg and Delta."""

    def time_export(self, fmt):
        self.run()

    def track_ratio_export_rate_vs_parquet(self, fmt):
        if fmt == "parquet":
            raise common.SkipNotImplemented("the reference itself")
        return common.measure_registered("export_table_vs_parquet", fmt)

    track_ratio_export_rate_vs_parquet.unit = "ratio"

    def track_peak_mb_export(self, fmt):
        return round(common.median_peak_delta("bench_lakehouse:peak_factory", fmt) / 2**20, 1)

    track_peak_mb_export.unit = "MiB"


class ExportTypedTable(_Exports):
    """``kafkafmt export --value-format avro`` of one log dir to Parquet, Iceberg and Delta."""

    typed = True

    def time_export(self, fmt):
        self.run()

    def track_ratio_typed_export_rate_vs_parquet(self, fmt):
        if fmt == "parquet":
            raise common.SkipNotImplemented("the reference itself")
        return common.measure_registered("export_typed_table_vs_parquet", fmt)

    track_ratio_typed_export_rate_vs_parquet.unit = "ratio"


#: the small partitions of the scaling curve (``bench_scaling.many_root``) a table export is timed on
MANY_PARTITIONS = 2000


def _many_ratio_pair(fmt):
    from .bench_scaling import many_root

    root, _ = many_root(MANY_PARTITIONS)
    out = tempfile.mkdtemp(prefix="kafkafmt-bench-lakehouse-")
    return exporter("parquet", root, out), exporter(fmt, root, out)


common.register_ratio("export_many_table_vs_parquet",
                      "export of 2,000 small partitions to a table: rate ÷ that of their Parquet export (>= 0.7)",
                      ["iceberg", "delta"], _many_ratio_pair, better="higher", family="logdir",
                      track="bench_lakehouse.ExportManyTable.track_ratio_export_rate_vs_parquet")


class ExportManyTable:
    """``kafkafmt export`` of 2,000 small partitions (one small segment each) to Iceberg and Delta beside their
    Parquet export: an export's work per partition (its read, its rows laid out and written) against the same
    records written to one file."""

    params = ["iceberg", "delta"]
    param_names = ["format"]
    timeout = 900

    def setup(self, fmt):
        require_kafkafmt()
        common.note_quick()
        _needs(fmt)

    def track_ratio_export_rate_vs_parquet(self, fmt):
        return common.measure_registered("export_many_table_vs_parquet", fmt)

    track_ratio_export_rate_vs_parquet.unit = "ratio"
