#!/usr/bin/env python3
"""Decompression bombs and absurd counts: time and peak memory of kafkafmt.decode on them.

Each case runs in a fresh subprocess (so peak RSS is its own) that reports: the outcome (error
class or record count), wall time, the growth of peak RSS (VmHWM) and of peak virtual size
(VmPeak) during decode, over the process after imports and after reading its input.

    python fuzz/bombs.py                 # all cases, bombs expanding to >= 1 GiB (builds take ~20 s)
    python fuzz/bombs.py --size-mb 256   # smaller bombs
    python fuzz/bombs.py --only gzip     # cases whose name contains "gzip"
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import lz4.frame
import zstandard

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MB = 1 << 20
TS = 1_600_000_000_000


# ---------------------------------------------------------------------------------------------
# builders

def crc32c(data) -> int:
    import numpy as np
    from kafkafmt._native.scan import crc32c as c
    return int(c(np.frombuffer(bytes(data), np.uint8)))


def v2_batch(payload: bytes, count: int, codec: int, base_offset=0) -> bytes:
    """A v2 batch around an (already compressed) records payload, with a valid CRC."""
    body = struct.pack(">hiqqqhii", codec, max(count - 1, 0), TS, TS, -1, -1, -1, count) + payload
    return struct.pack(">qiibI", base_offset, 4 + 1 + 4 + len(body), 0, 2, crc32c(body)) + body


def legacy_wrapper(value: bytes, codec: int, magic=1, offset=0) -> bytes:
    """A v0/v1 compressed wrapper message holding ``value`` (the compressed inner message set)."""
    ts = struct.pack(">q", TS) if magic == 1 else b""
    body = bytes([magic, codec]) + ts + struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    crc = zlib.crc32(body) & 0xFFFFFFFF
    return struct.pack(">qiI", offset, 4 + len(body), crc) + body


def zeros_stream(total: int, chunk=8 * MB):
    block = bytes(chunk)
    left = total
    while left > 0:
        n = min(left, chunk)
        yield block if n == chunk else bytes(n)
        left -= n


def gzip_bomb(size: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join(c.compress(b) for b in zeros_stream(size)) + c.flush()


def zstd_bomb(size: int, content_size: bool) -> bytes:
    cctx = zstandard.ZstdCompressor(level=1, write_content_size=content_size)
    if content_size:
        cobj = cctx.compressobj(size=size)
    else:
        cobj = cctx.compressobj()
    return b"".join(cobj.compress(b) for b in zeros_stream(size)) + cobj.flush()


def lz4_bomb(size: int) -> bytes:
    c = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX4MB, content_checksum=False)
    parts = [c.begin()]
    parts += [c.compress(b) for b in zeros_stream(size)]
    parts.append(c.flush())
    return b"".join(parts)


def snappy_claim(size: int) -> bytes:
    """A raw snappy block whose header claims ``size`` output bytes, followed by a few bytes."""
    out = bytearray()
    v = size
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out) + b"\x00\x00\x00\x00"          # a literal of one byte, then junk


def snappy_real(size: int) -> bytes:
    """Xerial snappy stream of ``size`` zero bytes (ratio ~21: large input)."""
    from kafkafmt.codecs import get_codec
    return get_codec("snappy").compress(bytes(size))


def zz(v: int) -> bytes:
    u = ((v << 1) ^ (v >> 63)) & ((1 << 64) - 1)
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def record(key=None, value=b"v", headers=b"\x00", length=None):
    k = zz(-1) if key is None else key
    body = b"\x00\x00\x00" + k + zz(len(value)) + value + headers
    return (zz(len(body)) if length is None else length) + body


# ---------------------------------------------------------------------------------------------
# cases

def cases(size):
    """name -> (buffer builder, decode kwargs)."""
    lim = dict(max_decompressed=64 * MB)
    dflt = {}
    out = {}
    for cap_name, kw in (("cap64M", lim), ("default", dflt)):
        out[f"gzip_{size // MB}M_{cap_name}"] = (lambda: v2_batch(gzip_bomb(size), 1, 1), kw)
        out[f"zstd_fcs_{size // MB}M_{cap_name}"] = (lambda: v2_batch(zstd_bomb(size, True), 1, 4), kw)
        out[f"zstd_nofcs_{size // MB}M_{cap_name}"] = (lambda: v2_batch(zstd_bomb(size, False), 1, 4), kw)
        out[f"lz4_{size // MB}M_{cap_name}"] = (lambda: v2_batch(lz4_bomb(size), 1, 3), kw)
        out[f"snappy_claim_500M_{cap_name}"] = (lambda: v2_batch(snappy_claim(500 * MB), 1, 2), kw)
        out[f"snappy_claim_{size // MB}M_{cap_name}"] = (lambda: v2_batch(snappy_claim(size), 1, 2), kw)
        out[f"legacy_gzip_{size // MB}M_{cap_name}"] = (lambda: legacy_wrapper(gzip_bomb(size), 1), kw)
        out[f"legacy_lz4_{size // MB}M_{cap_name}"] = (lambda: legacy_wrapper(lz4_bomb(size), 3), kw)
    # under the default cap: a payload the default lets through (zeros: the records then fail)
    out["zstd_nofcs_500M_default"] = (lambda: v2_batch(zstd_bomb(500 * MB, False), 1, 4), dflt)
    out["gzip_500M_default"] = (lambda: v2_batch(gzip_bomb(500 * MB), 1, 1), dflt)
    out["snappy_xerial_real_100M_cap64M"] = (lambda: v2_batch(snappy_real(100 * MB), 1, 2), lim)
    # absurd counts and lengths in small inputs
    out["count_2^31-1_zstd_small"] = (lambda: v2_batch(zstandard.ZstdCompressor().compress(record() * 10),
                                                      (1 << 31) - 1, 4), dflt)
    out["count_2^31-1_zstd_100M_of_records"] = (
        lambda: v2_batch(zstd_bomb_records(100 * MB), (1 << 31) - 1, 4), dflt)
    out["count_2^31-1_plain"] = (lambda: v2_batch(record() * 10, (1 << 31) - 1, 0), dflt)
    out["header_count_2^31-1_plain"] = (lambda: v2_batch(record(headers=zz((1 << 31) - 1) + b"\x02h\x00"), 1, 0), dflt)
    out["header_count_2^31-1_gzip"] = (
        lambda: v2_batch(zlib.compress(record(headers=zz((1 << 31) - 1) + b"\x02h\x00")), 1, 1), dflt)
    out["key_len_2^31-1_plain"] = (lambda: v2_batch(record(key=zz((1 << 31) - 1) + b"kk"), 1, 0), dflt)
    out["key_len_2^31-1_zstd"] = (
        lambda: v2_batch(zstandard.ZstdCompressor().compress(record(key=zz((1 << 31) - 1) + b"kk")), 1, 4), dflt)
    out["ratio_extrapolation"] = (ratio_extrapolation, dflt)
    return out


def zstd_bomb_records(size):
    rec = record()
    cobj = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
    block = rec * (8 * MB // len(rec))
    parts = [cobj.compress(block) for _ in range(size // len(block))]
    return b"".join(parts) + cobj.flush()


def ratio_extrapolation():
    """One highly compressible batch, then ~2 MB of poorly compressible ones: the decoder sizes
    its outputs from the first batch's ratio, extrapolated over the rest of the input."""
    import kafkafmt
    first = kafkafmt.encode(keys=[None], values=[bytes(200 * MB)], timestamps=[TS], compression="zstd")
    rest = b"".join(kafkafmt.encode(keys=[None], values=[os.urandom(2000)], timestamps=[TS], base_offset=1 + i,
                                    compression="gzip") for i in range(1000))
    return first + rest


# ---------------------------------------------------------------------------------------------
# measurement (child process)

CHILD = r"""
import json, sys, time
def status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmPeak", "VmRSS"):
                out[k] = int(v.split()[0]) // 1024
    return out
import kafkafmt
kw = json.loads(sys.argv[2])
buf = open(sys.argv[1], "rb").read()
before = status()
t0 = time.perf_counter()
try:
    r = kafkafmt.decode(buf, **kw)
    outcome = f"decoded {len(r)} records"
except BaseException as e:
    outcome = f"{type(e).__name__}: {str(e)[:110]}"
dt = time.perf_counter() - t0
after = status()
print(json.dumps(dict(outcome=outcome, seconds=round(dt, 3), input=len(buf),
                      rss_base_mb=before["VmHWM"], rss_peak_growth_mb=after["VmHWM"] - before["VmHWM"],
                      vm_peak_growth_mb=after["VmPeak"] - before["VmPeak"])))
"""


def measure(buf: bytes, kw: dict, env=None) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as f:
        f.write(buf)
        path = f.name
    try:
        cmd = [sys.executable, "-c", CHILD, path, json.dumps(kw)]
        if os.environ.get("KFUZZ_CPU"):
            cmd = ["taskset", "-c", os.environ["KFUZZ_CPU"]] + cmd
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
        if res.returncode:
            return dict(outcome=f"child exit {res.returncode}: {res.stderr[-300:]}", input=len(buf))
        return json.loads(res.stdout.strip().splitlines()[-1])
    finally:
        os.unlink(path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=1100)
    ap.add_argument("--only", default="")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rows = []
    for name, (build, kw) in cases(args.size_mb * MB).items():
        if args.only and args.only not in name:
            continue
        t0 = time.perf_counter()
        buf = build()
        r = measure(buf, kw)
        r["case"] = name
        r["build_s"] = round(time.perf_counter() - t0, 1)
        rows.append(r)
        if args.json:
            print(json.dumps(r), flush=True)
        else:
            print(f"{name:38} in={r['input']:>9}B  {r.get('seconds', '-'):>7}s  "
                  f"RSS+{r.get('rss_peak_growth_mb', '-'):>5}MB  VM+{r.get('vm_peak_growth_mb', '-'):>6}MB  "
                  f"{r['outcome']}", flush=True)
    return rows


if __name__ == "__main__":
    main()
