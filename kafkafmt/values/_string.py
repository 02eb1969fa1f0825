"""The ``"string"`` value format: UTF-8 text, checked by the Avro kernel reading each value as an Avro
``"string"`` written raw."""
from __future__ import annotations

import json
import threading

import numpy as np

from kafkafmt.values.avro import AvroPlan, parse_schema
from kafkafmt.values._formats import KernelFormat, column_parts

__all__ = ["StringFormat"]


class StringFormat(KernelFormat):
    """UTF-8 text (Arrow string); invalid UTF-8 is a per-record error."""
    name = "string"
    summary = "UTF-8 text"
    _plan = None
    _lock = threading.Lock()

    def value_type(self, ctx):
        import pyarrow as pa

        return pa.string()

    @classmethod
    def _get_plan(cls):
        with cls._lock:
            if cls._plan is None:
                plan = AvroPlan(parse_schema('"string"'))
                plan.add_writer("raw", parse_schema('"bytes"'))
                cls._plan = plan
            return cls._plan

    def decode(self, column, ctx):
        import pyarrow as pa

        column, offsets, data = column_parts(column)
        plan = self._get_plan()
        roots = np.full(len(column), plan.roots["raw"], np.int32)
        if column.null_count:
            roots[~np.asarray(column.is_valid())] = -1
        values, errors, _ = plan.decode(offsets, data, roots, skip=0)
        return self._finish(plan, values, errors, pa.nulls(len(column), pa.int32()), None, ctx, None)

    def json(self, decoded):
        return [None if v is None else json.dumps(v, ensure_ascii=False) for v in decoded.values.to_pylist()]
