"""``kafkafmt dump --print-data-log``: every record of a segment printed as a line, against a kafka-python script
printing the same fields.

Data: the ``none`` corpus (``corpus.load``: 40 000 records in v2 batches of ~500, JSON-like values of ~257 bytes,
16-byte binary keys, headers on a fifth of the records; cross-checked with kafka-python when generated), written
as one segment ``00000000005000000000.log``.

* kafkafmt: ``kafkafmt.cli.main(["dump", segment, "--print-data-log"])`` in this process, its output to
  ``os.devnull`` (what the command line does, without the interpreter's start);
* the peer: kafka-python's ``MemoryRecords`` over the segment's bytes, a line per batch and per record
  (offset, timestamp, key and value sizes, header keys, key and payload as text with invalid bytes escaped),
  written to ``os.devnull``.
"""
from __future__ import annotations

import contextlib
import os

from . import common, corpus
from .common import register_ratio, require_kafkafmt

RECORDS = 40_000


def segment():
    """The ``none`` corpus as a segment file in the corpus cache (written once)."""
    buf, meta = corpus.load("none")
    folder = corpus.cache_dir() / "dump" / "events-0"
    path = folder / f"{meta['first_offset']:020d}.log"
    if not path.exists() or path.stat().st_size != len(buf):
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(buf)
        os.replace(tmp, path)
    return str(path)


def kafkafmt_dump():
    from kafkafmt.cli import main

    path = segment()

    def run():
        with open(os.devnull, "w") as out, contextlib.redirect_stdout(out):
            code = main(["dump", path, "--print-data-log"])
        assert code in (0, None), code
    return run


def kafka_python_dump():
    from kafka.record import MemoryRecords

    path = segment()
    with open(path, "rb") as f:
        data = f.read()

    def text(b):
        return None if b is None else b.decode("utf-8", "backslashreplace")

    def run():
        lines = []
        records = MemoryRecords(data)
        while records.has_next():
            batch = records.next_batch()
            lines.append(f"baseOffset: {batch.base_offset} count: {batch.records_count} crc: {batch.crc}")
            for r in batch:
                lines.append(f"| offset: {r.offset} CreateTime: {r.timestamp} "
                             f"keySize: {-1 if r.key is None else len(r.key)} "
                             f"valueSize: {-1 if r.value is None else len(r.value)} "
                             f"headerKeys: [{','.join(k for k, _ in r.headers)}] key: {text(r.key)} "
                             f"payload: {text(r.value)}")
        with open(os.devnull, "w") as out:
            out.write("\n".join(lines) + "\n")
    return run


def records_per_second(_param=None, budget_s=None):
    t, = common.interleaved_medians([kafkafmt_dump()], budget_s)
    return round(RECORDS / t)


register_ratio("dump_vs_kafka_python", "dump --print-data-log × kafka-python printing the same", ["none"],
               lambda _param: (kafka_python_dump(), kafkafmt_dump()), family="corpus",
               track="bench_dump.Dump.track_ratio_vs_kafka_python")
common.register_value("dump_rate", "dump --print-data-log records/s", ["none"], records_per_second, "records/s",
                      family="corpus", track="bench_dump.Dump.track_records_per_second")


class Dump:
    """A segment printed record by record."""

    params = ["none"]
    param_names = ["corpus"]
    timeout = 600

    def setup(self, _param):
        require_kafkafmt()
        self.run = kafkafmt_dump()

    def time_kafkafmt_dump(self, _param):
        self.run()

    def track_records_per_second(self, param):
        return records_per_second(param)

    track_records_per_second.unit = "records/s"

    def track_ratio_vs_kafka_python(self, param):
        return common.measure_registered("dump_vs_kafka_python", param)

    track_ratio_vs_kafka_python.unit = "ratio"
