"""Where the record kernel finds liblz4 and libzstd for decompressing v2 batches itself.

The kernel (kernel.pyx, kfmt_codecs.h) is not linked against either library: a wheel must import on
machines where they are missing, and their headers (liblz4-dev, libzstd-dev) are rarely installed
where the package is built. It resolves the few functions it calls with dlopen/dlsym from the
shared library this lookup names, in this order:

1. ``KAFKAFMT_PY_CODECS=1`` in the environment: no library; every compressed batch goes through the
   Python codecs (``kafkafmt.codecs``: python-lz4, zstandard, cramjam's snappy).
2. ``KAFKAFMT_LIBLZ4`` / ``KAFKAFMT_LIBZSTD``: a path (or soname) to load; empty: do not load it.
3. The library's stable soname: ``liblz4.so.1`` / ``libzstd.so.1`` (Linux: installed by every
   Debian/Ubuntu/Fedora base system, since apt, dpkg, systemd and rpm depend on them),
   ``liblz4.1.dylib`` / ``libzstd.1.dylib`` (macOS, Homebrew or MacPorts), ``liblz4.dll`` /
   ``libzstd.dll`` (Windows), found on the dynamic loader's usual search path.
4. ``ctypes.util.find_library("lz4" / "zstd")``.

When neither is found (or a library lacks a function the kernel needs: libzstd older than 1.4),
those batches go through the Python codecs, as gzip batches and v0/v1 wrappers always do. Small
snappy v2 payloads need no library: the kernel decodes them itself (kfmt_codecs.h; large ones go
through the Python codec, whose library decodes them faster), unless ``KAFKAFMT_PY_CODECS`` is set.
Nothing here imports another package's private modules.
"""
from __future__ import annotations

import ctypes
import os

__all__ = ["find_library", "find_libraries", "load_kernel_codecs", "ENV_DISABLE", "ENV_PATH", "SONAMES"]

ENV_DISABLE = "KAFKAFMT_PY_CODECS"
ENV_PATH = {"lz4": "KAFKAFMT_LIBLZ4", "zstd": "KAFKAFMT_LIBZSTD"}
SONAMES = {
    "lz4": ("liblz4.so.1", "liblz4.1.dylib", "liblz4.dylib", "liblz4.dll", "lz4.dll"),
    "zstd": ("libzstd.so.1", "libzstd.1.dylib", "libzstd.dylib", "libzstd.dll", "zstd.dll"),
}


def _loadable(name: str) -> bool:
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


def find_library(name: str):
    """What the kernel should dlopen for ``name`` ("lz4" or "zstd"): a soname or path, or None."""
    if name not in SONAMES:
        raise ValueError(f"no kernel codec library called {name!r}")
    if os.environ.get(ENV_DISABLE):
        return None
    explicit = os.environ.get(ENV_PATH[name])
    if explicit is not None:
        return explicit or None
    for soname in SONAMES[name]:
        if _loadable(soname):
            return soname
    import ctypes.util        # (the last resort: it imports subprocess and more)

    found = ctypes.util.find_library(name)
    return found if found and _loadable(found) else None


def find_libraries():
    """(libzstd, liblz4) for ``kernel.load_codecs`` -- each a soname / path or None."""
    return find_library("zstd"), find_library("lz4")


def load_kernel_codecs() -> int:
    """Load what find_libraries names into the kernel; returns the codec bits it now decompresses
    itself (``kernel.C_LZ4``, ``kernel.C_ZSTD``, and ``kernel.C_SNAPPY``, which needs no library, unless
    ``KAFKAFMT_PY_CODECS`` is set), 0 when it has none."""
    from kafkafmt._native import kernel

    return kernel.load_codecs(*find_libraries(), snappy=not os.environ.get(ENV_DISABLE))
