"""What the typed-value harnesses share (fuzz_avro.py, fuzz_protobuf.py, fuzz_json.py): their input
(``sel byte, then values`` -- each value ``uint16 length (0xFFFF: null), bytes``), the checks every
decoded column gets, and their command line (``--seed DIR`` writes the seeds, else atheris runs).
"""
from __future__ import annotations

import os
import struct
import sys


class Finding(AssertionError):
    pass


def split(data):
    """(sel, [bytes or None, ...]) from a fuzz input."""
    if not data:
        return 0, []
    sel, pos, values = data[0], 1, []
    while pos + 2 <= len(data) and len(values) < 64:
        n = struct.unpack_from(">H", data, pos)[0]
        pos += 2
        if n == 0xFFFF:
            values.append(None)
        else:
            values.append(bytes(data[pos:pos + n]))
            pos += n
    return sel, values


def join(sel, values):
    out = bytearray([sel])
    for v in values:
        out += b"\xff\xff" if v is None else struct.pack(">H", len(v)) + v
    return bytes(out)


def check_rows(values, dec, null_ok=False):
    """Every row of ``dec`` (a DecodedColumn of ``values``) accounted for: a null input is a null value
    without an error; any other value is read (valid, no error), read with fields null that their
    columns cannot hold (valid, its error naming the first: ``field_error_count`` counts them), or
    not read (null, with an error; ``null_ok``: a null may also be the value itself). Returns the
    error column as a list."""
    dec.values.validate(full=True)
    if len(dec.values) != len(values) or len(dec.error) != len(values):
        raise Finding("lengths differ from the input's")
    errors = dec.error.to_pylist()
    valid = dec.values.is_valid().to_pylist()
    if sum(e is not None for e in errors) != dec.error_count + dec.field_error_count:
        raise Finding("error_count + field_error_count disagree with the error column")
    partial = 0
    for i, v in enumerate(values):
        if v is None:
            if valid[i] or errors[i] is not None:
                raise Finding(f"row {i}: a null input must be a null value without an error")
        elif valid[i] and errors[i] is not None:
            if "that field is null" not in errors[i]:
                raise Finding(f"row {i}: both a value and an error: {errors[i]!r}")
            partial += 1
        elif not valid[i] and errors[i] is None and not null_ok:
            raise Finding(f"row {i}: a null value without an error")
    if partial != dec.field_error_count:
        raise Finding("field_error_count disagrees with the rows read with a field null")
    return errors


def main(seeds, check, instrument, before=(), ready=None):
    """``--seed DIR``: write ``seeds()`` there; else fuzz ``check`` with atheris, the modules named in
    ``instrument`` instrumented (``before``: modules imported first, not instrumented; ``ready()``
    called once they are)."""
    if len(sys.argv) == 3 and sys.argv[1] == "--seed":
        os.makedirs(sys.argv[2], exist_ok=True)
        for i, s in enumerate(seeds()):
            with open(os.path.join(sys.argv[2], f"seed-{i}"), "wb") as f:
                f.write(s)
        return
    import importlib

    import atheris
    for name in before:
        importlib.import_module(name)
    with atheris.instrument_imports(include=list(instrument)):
        for name in instrument:
            importlib.import_module(name)
    if ready is not None:
        ready()
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()
