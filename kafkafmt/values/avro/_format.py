"""The ``"avro"`` value format: the Schema Registry's wire format with Avro values (see
`kafkafmt.values._formats` for the reader schema and how bad values are reported)."""
from __future__ import annotations

import functools
import threading

import numpy as np

from kafkafmt._native import framing as _framing
from kafkafmt.errors import SchemaError, SchemaNotFoundError
from kafkafmt.values.avro._plan import ZERO_ITEMS_CAP, AvroPlan
from kafkafmt.values.avro._json import avro_json_array
from kafkafmt.values.avro._schema import parse_registered
from kafkafmt.values.registry import InlineSchemaRegistry, open_registry
from kafkafmt.values._formats import (E_BAD_SCHEMA, KernelFormat, PerRegistry, frame_error_text, kernel_source,
                                      reader_schema_for, registered_writer)

__all__ = ["AvroFormat"]

#: errors found before decoding (the kernel's own codes are below 64; framing: 64-66)
_FRAME_NAMES = {code: name for name, code in _framing.FRAME_ERRORS.items()}
E_NOT_AVRO, E_UNSUPPORTED = 68, 69
_FRAMING = 5

# ------------------------------------------------------------------------------------------------
# schemas: parsed once per registry

class _SchemaCache:
    def __init__(self):
        self.lock = threading.RLock()
        self.writers = {}      # (format, id) -> AvroType, or (code, message)
        self.plans = {}        # reader key -> AvroPlan


_cache = PerRegistry(_SchemaCache)


@functools.lru_cache(maxsize=64)
def _inline(schema_str):
    """The registry of a reader schema given without a registry (every id's writer schema too),
    kept so its plans are compiled once."""
    return InlineSchemaRegistry(schema_str, source="reader schema (no registry given)")


class AvroFormat(KernelFormat):
    """The Schema Registry wire format with Avro values (see the module docstring)."""
    name = "avro"
    summary = "Avro in the Schema Registry's wire format"
    schema_type = "AVRO"
    needs_schema = True
    reads_views = True
    #: schemaTypes this format decodes; others are per-record errors
    decodes = ("AVRO",)

    def _registry(self, ctx):
        reg = ctx.registry
        if reg is None:
            rs = reader_schema_for(None, ctx.topic, ctx.is_key, ctx.reader_schema)
            return _inline(rs.schema_str)
        return open_registry(reg)

    def plan(self, ctx):
        """The `AvroPlan` of the reader schema (cached per registry and reader schema)."""
        reg = self._registry(ctx)
        cache = _cache(reg)
        rs = reader_schema_for(reg, ctx.topic, ctx.is_key, ctx.reader_schema)
        if rs.schema_type not in (None, "AVRO"):
            raise SchemaError(f"the reader schema ({rs.subject or 'id %d' % rs.id}) is {rs.schema_type}, not AVRO: "
                              f"read it with format=\"registry\" or its own format")
        depth = ctx.shape.recursive_fields_max_depth
        key = (rs.id, rs.schema_str, rs.references, depth)
        with cache.lock:
            plan = cache.plans.get(key)
            if plan is None:
                plan = cache.plans[key] = AvroPlan(parse_registered(reg, rs), depth)
        return reg, cache, plan

    def value_type(self, ctx):
        return self.plan(ctx)[2].arrow_type

    def _writer(self, reg, cache, schema_id):
        """The parsed writer schema of an id, or (code, message)."""
        with cache.lock:
            hit = cache.writers.get((self.name, schema_id))
            if hit is not None:
                return hit

            def refuse(stype):
                if stype in self.decodes:
                    return None
                if self.name == "registry":
                    return (E_UNSUPPORTED,
                            f"schema id {schema_id} is a {stype} schema: {stype} values are not supported yet")
                return E_NOT_AVRO, f"schema id {schema_id} is a {stype} schema, not AVRO"

            hit = registered_writer(reg, schema_id, refuse, parse_registered, (SchemaError, SchemaNotFoundError))
            cache.writers[(self.name, schema_id)] = hit
            return hit

    def decode(self, column, ctx):
        import pyarrow as pa

        reg, cache, plan = self.plan(ctx)
        source, bits, bit_offset = kernel_source(column)
        ids, slots, uniq = _framing.frame_rows(source, bits, bit_offset)
        problems = {}
        lut = np.empty(len(uniq), np.int32)
        for j, sid in enumerate(uniq.tolist()):
            w = self._writer(reg, cache, sid)
            if isinstance(w, tuple):
                lut[j] = -w[0]
                problems[sid] = w[1]
            else:
                try:
                    lut[j] = plan.add_writer(sid, w)
                except SchemaError as exc:
                    lut[j] = -E_BAD_SCHEMA
                    problems[sid] = f"schema id {sid} cannot be resolved: {exc.reason}"
        framed = slots >= 0
        roots = np.where(framed, lut[np.maximum(slots, 0)] if len(lut) else 0, slots).astype(np.int32)
        values, errors, trailing = plan.decode_rows(source, roots, skip=_FRAMING,
                                                    trailing_error=ctx.trailing == "error", zero_cap=ZERO_ITEMS_CAP)

        def messages(code, sid, i):
            text = frame_error_text(_FRAME_NAMES.get(code), source.value(i))
            return text if text is not None else problems.get(sid, f"schema id {sid}: error {code}")

        schema_id = pa.Array.from_buffers(pa.int32(), len(ids), [None if framed.all() else pa.py_buffer(
            np.packbits(framed, bitorder="little")), pa.py_buffer(ids)])
        return self._finish(plan, values, errors, schema_id, ids, ctx, messages, trailing)

    def json(self, decoded):
        return self.json_array(decoded).to_pylist()

    def json_array(self, decoded):
        return avro_json_array(decoded.values, decoded.reader)
