"""The C helpers: CRCs against independent implementations, at every size and alignment class."""
import random
import zlib

import crc32c as crc32c_pkg
import numpy as np
import pytest

from kafkafmt._native import scan

SIZES = [0, 1, 7, 8, 9, 63, 255, 256, 767, 768, 769, 3 * 256 + 13, 8191, 3 * 8192 - 1, 3 * 8192,
         3 * 8192 + 777, 100_000, 1 << 20]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("misalign", [0, 1, 3, 7])
def test_crc32c_matches_reference(size, misalign):
    rnd = random.Random(size * 31 + misalign)
    raw = rnd.randbytes(size + misalign)
    view = np.frombuffer(raw, np.uint8)[misalign:]
    assert scan.crc32c(view) == crc32c_pkg.crc32c(raw[misalign:])


@pytest.mark.parametrize("size", SIZES)
def test_crc32_matches_zlib(size):
    raw = random.Random(size).randbytes(size)
    assert scan.crc32(raw) == zlib.crc32(raw)


@pytest.mark.parametrize("crc,bit,seed", [(scan.crc32c, 0x10, 5), (scan.crc32, 0x01, 6)], ids=["crc32c", "crc32"])
def test_crc_detects_single_bit_flips(crc, bit, seed):
    raw = bytearray(random.Random(seed).randbytes(30_000))
    good = crc(bytes(raw))
    for pos in range(0, len(raw), 997):
        raw[pos] ^= bit
        assert crc(bytes(raw)) != good
        raw[pos] ^= bit


# --- both CRC implementations: the hardware path picked at run time and the table fallback ------

def test_crc_backends_reported():
    backends = scan.crc_backends()
    assert backends["crc32c"] in ("sse4.2", "avx512-vpclmulqdq+sse4.2", "table")
    assert backends["crc32"] in ("pclmulqdq", "avx512-vpclmulqdq+pclmulqdq", "table")


@pytest.mark.parametrize("seed", range(6))
def test_crc32_both_paths_random_lengths_and_alignments(seed):
    rnd = random.Random(1000 + seed)
    block = rnd.randbytes(1 << 17)
    arr = np.frombuffer(block, np.uint8)
    for _ in range(300):
        n = rnd.choice([rnd.randrange(0, 200), rnd.randrange(0, 5000), rnd.randrange(0, 1 << 16)])
        start = rnd.randrange(0, len(block) - n + 1)
        view = arr[start:start + n]
        ref = zlib.crc32(block[start:start + n])
        assert scan.crc32(view) == ref, (n, start)
        assert scan.crc32_table(view) == ref, (n, start)
        ref_c = crc32c_pkg.crc32c(block[start:start + n])
        assert scan.crc32c(view) == ref_c, (n, start)
        assert scan.crc32c_table(view) == ref_c, (n, start)


@pytest.mark.parametrize("n", [64, 65, 79, 80, 127, 128, 129, 191, 192, 255, 256, 257, 319, 320, 511, 512, 527, 1000,
                               1 << 20])
def test_crc32_fold_boundaries(n):
    # the folding paths start at 64 bytes (128-bit) and 256 bytes (512-bit, when the CPU has it),
    # fold 256 / 64 at a time, then 16, then the tail
    raw = random.Random(n).randbytes(n)
    assert scan.crc32(raw) == zlib.crc32(raw) == scan.crc32_table(raw)
    assert scan.crc32c(raw) == crc32c_pkg.crc32c(raw) == scan.crc32c_table(raw)
    assert scan.crc32(b"\xff" * n) == zlib.crc32(b"\xff" * n)
    assert scan.crc32(bytes(n)) == zlib.crc32(bytes(n))



def test_software_crc_forced_by_environment(tmp_path):
    # KAFKAFMT_CRC_SOFTWARE=1 makes every extension use the tables: v0/v1/v2 data decodes the same
    import os
    import subprocess
    import sys

    import kafkafmt

    v1 = kafkafmt.encode(values=[b"v%d" % i * 40 for i in range(300)], timestamps=list(range(300)), magic=1)
    v2 = kafkafmt.encode(values=[b"w%d" % i * 40 for i in range(300)], timestamps=list(range(300)))
    (tmp_path / "v1").write_bytes(v1)
    (tmp_path / "v2").write_bytes(v2)
    bad = bytearray(v1)
    bad[100] ^= 1
    (tmp_path / "bad").write_bytes(bytes(bad))
    code = (
        "import sys, kafkafmt\n"
        "from kafkafmt._native import scan\n"
        "print(scan.crc_backends()['crc32'], scan.crc_backends()['crc32c'])\n"
        "for name in ('v1', 'v2'):\n"
        "    r = kafkafmt.decode(open(sys.argv[1] + '/' + name, 'rb').read())\n"
        "    print(len(r), bool(r.batches.crc_valid.all()))\n"
        "try:\n"
        "    kafkafmt.decode(open(sys.argv[1] + '/bad', 'rb').read())\n"
        "except kafkafmt.CrcError:\n"
        "    print('crc error')\n")
    env = dict(os.environ, KAFKAFMT_CRC_SOFTWARE="1")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env, capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "table table"
    assert out[1:4] == ["300 True", "300 True", "crc error"]


# --- the one table of the C loops' error codes ------------------------------------------------

def test_error_table():
    assert scan.ERROR_INFO and len(scan.ERROR_CODES) == len(scan.ERROR_INFO)
    assert set(scan.ERROR_CODES.values()) == set(scan.ERROR_INFO)
    assert all(kind in ("corrupt", "crc", "compression", "limit") for kind, _ in scan.ERROR_INFO.values())
    assert 0 not in scan.ERROR_INFO                      # ERR_NONE
    assert scan.ERROR_INFO[scan.ERROR_CODES["CRC"]][0] == "crc"
    assert scan.ERROR_INFO[scan.ERROR_CODES["DECOMPRESS_LIMIT"]][0] == "limit"
    assert "{size}" in scan.ERROR_INFO[scan.ERROR_CODES["SIZE_TOO_LARGE"]][1]
    assert "COUNT_MISMATCH" not in scan.ERROR_CODES      # was never returned


def test_scan_errors_are_in_the_table():
    import kafkafmt

    buf = bytearray(kafkafmt.encode(values=[b"x" * 50] * 3, timestamps=[1, 2, 3]))
    bad = bytearray(buf)
    bad[70] ^= 1
    err = scan.scan(np.frombuffer(bytes(bad), np.uint8))["error"]
    assert err[0] == scan.ERROR_CODES["CRC"]
    bad = bytearray(buf)
    bad[16] = 7                                           # magic
    err = scan.scan(np.frombuffer(bytes(bad), np.uint8))["error"]
    assert err[0] == scan.ERROR_CODES["BAD_MAGIC"]
    with pytest.raises(kafkafmt.CrcError) as info:
        kafkafmt.decode(bytes(bytearray(buf[:70]) + bytes([buf[70] ^ 1]) + buf[71:]))
    assert scan.ERROR_INFO[scan.ERROR_CODES["CRC"]][1] in str(info.value)


# --- kernel codec libraries: the documented lookup ---------------------------------------------

def test_library_lookup(monkeypatch):
    from kafkafmt._native import libs

    monkeypatch.delenv(libs.ENV_DISABLE, raising=False)
    monkeypatch.setenv(libs.ENV_PATH["lz4"], "/no/such/liblz4.so")
    monkeypatch.setenv(libs.ENV_PATH["zstd"], "")
    assert libs.find_libraries() == (None, "/no/such/liblz4.so")
    monkeypatch.setenv(libs.ENV_DISABLE, "1")
    assert libs.find_libraries() == (None, None)
    monkeypatch.delenv(libs.ENV_DISABLE)
    monkeypatch.delenv(libs.ENV_PATH["lz4"])
    monkeypatch.delenv(libs.ENV_PATH["zstd"])
    for name in ("lz4", "zstd"):
        found = libs.find_library(name)
        assert found is None or isinstance(found, str)
    with pytest.raises(ValueError):
        libs.find_library("snappy")


def test_library_not_loadable_leaves_python_codecs():
    import os
    import subprocess
    import sys

    code = ("from kafkafmt._native import kernel\n"
            "print(kernel.load_codecs('/no/such/libzstd.so', '/no/such/liblz4.so'))\n")
    env = dict(os.environ, KAFKAFMT_PY_CODECS="1")      # kafkafmt's own import loads nothing
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.strip() == "0"


def test_kernel_loads_system_libraries_by_soname():
    from kafkafmt._native import kernel, libs

    zstd, lz4 = libs.find_libraries()
    if zstd is None and lz4 is None:
        pytest.skip("neither liblz4 nor libzstd on this machine")
    bits = libs.load_kernel_codecs()
    assert bool(bits & kernel.C_ZSTD) == (zstd is not None)
    assert bool(bits & kernel.C_LZ4) == (lz4 is not None)
    assert bits & kernel.C_SNAPPY        # (no library: the kernel's own decoder, unless KAFKAFMT_PY_CODECS)


def test_zstd_contexts_reused_across_calls_and_threads():
    # the kernel keeps a few zstd contexts between calls: decodes in a row and in parallel threads
    # (each call takes its own) give the same records, also after a corrupt frame left one mid-stream
    import threading

    import kafkafmt

    values = [b"v%05d" % i * 30 for i in range(2000)]
    good = kafkafmt.encode(values=values, timestamps=list(range(2000)), compression="zstd", batch_size=4096)
    bad = bytearray(good)
    bad[200] ^= 0xFF
    results, failures = [], []

    def work():
        for _ in range(20):
            try:
                kafkafmt.decode(bytes(bad), verify_crc=None)
            except kafkafmt.KafkafmtError:
                pass
            results.append(kafkafmt.decode(good).value.to_pylist() == values)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 60 and all(results)


_C_CHECK = r"""
#include <stdio.h>
#include "kfmt.h"
int main(void) {
    static uint8_t buf[1 << 16];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) { x = x * 1103515245u + 12345u; buf[i] = (uint8_t)(x >> 16); }
    kfmt_crc_init();
    int bad = 0;
    for (int t = 0; t < 20000; t++) {
        x = x * 1103515245u + 12345u; size_t off = (x >> 8) % 4096;
        x = x * 1103515245u + 12345u; size_t n = (t % 3 == 0) ? (x >> 8) % 60000 : (x >> 8) % 600;
        if (kfmt_crc32(buf + off, n) != kfmt_crc32_table_only(buf + off, n)) bad++;
        if (kfmt_crc32c(buf + off, n) != kfmt_crc32c_table_only(buf + off, n)) bad++;
    }
    printf("%d %08x %08x %d\n", kfmt_crc_backends(), kfmt_crc32((const uint8_t *)"123456789", 9),
           kfmt_crc32c((const uint8_t *)"123456789", 9), bad);
    return 0;
}
"""


@pytest.mark.parametrize("target", ["native", "aarch64"])
def test_crc_hardware_paths_in_c(target, tmp_path):
    """kfmt.h's CRCs compiled on their own: the hardware path picked here (x86-64: SSE4.2 /
    PCLMULQDQ; aarch64 under qemu-user: the ARMv8 CRC instructions) against the tables."""
    import os
    import shutil
    import subprocess

    here = os.path.join(os.path.dirname(scan.__file__))
    cc = {"native": shutil.which("cc") or shutil.which("gcc"), "aarch64": shutil.which("aarch64-linux-gnu-gcc")}[target]
    run = [] if target == "native" else [shutil.which("qemu-aarch64"), "-L", "/usr/aarch64-linux-gnu"]
    if cc is None or None in run:
        pytest.skip(f"no compiler / emulator for {target} here")
    src = tmp_path / "check.c"
    src.write_text(_C_CHECK)
    exe = tmp_path / "check"
    subprocess.run([cc, "-O2", "-I", here, str(src), "-o", str(exe)], check=True, capture_output=True)
    for env_soft in ("0", "1"):
        out = subprocess.run(run + [str(exe)], check=True, capture_output=True, text=True,
                             env=dict(os.environ, KAFKAFMT_CRC_SOFTWARE=env_soft)).stdout.split()
        backends, crc32, crc32c, bad = int(out[0]), out[1], out[2], int(out[3])
        assert (crc32, crc32c, bad) == ("cbf43926", "e3069283", 0)     # the standard check values
        if env_soft == "1":
            assert backends == 0
        elif target == "aarch64":
            assert backends == 4                                        # qemu emulates the CRC extension
