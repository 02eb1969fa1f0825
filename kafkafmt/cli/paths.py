"""Where a path on the command line lives: the local disk, or an object store named by a URL
(``s3://``, ``gs://``, ``abfs://``, ``hdfs://`` ...), opened through `kafkafmt.storage` with the
``--storage-option KEY=VALUE`` options (credentials otherwise come from the environment, as fsspec
reads them). The commands use these helpers wherever they would use ``os.path`` and ``open``."""
from __future__ import annotations

import json
import os

from kafkafmt.cli.usage import UsageError
from kafkafmt.storage import is_url, open_storage

#: storage options given on the command line (set once by the CLI's main)
OPTIONS = {}

#: private keys of encrypted tiered uploads given on the command line ({key id: PEM bytes}; set by main)
TIERED_KEYS = {}


def parse_storage_options(values):
    """``["key=K", "client_kwargs={\\"region_name\\": \\"eu-west-1\\"}", "anon=true"]`` -> dict; values
    that read as JSON (numbers, true/false, objects) are taken as such."""
    out = {}
    for v in values or []:
        key, sep, value = str(v).partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--storage-option takes KEY=VALUE, not {v!r}")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out


def parse_tiered_keys(values):
    """``["kek-1=/secrets/kek-1.pem"]`` -> ``{"kek-1": <the file's bytes>}``: the RSA private keys of
    encrypted Aiven tiered-storage uploads (the readers' ``tiered_keys``)."""
    out = {}
    for v in values or []:
        key_id, sep, path = str(v).partition("=")
        if not sep or not key_id.strip() or not path:
            raise UsageError(f"--tiered-key takes KEY_ID=PEM_FILE, not {v!r}")
        try:
            with open(path, "rb") as f:
                out[key_id.strip()] = f.read()
        except OSError as exc:
            raise UsageError(f"--tiered-key {key_id.strip()}: cannot read {path}: {exc.strerror or exc}") from None
    return out


def storage_of(path):
    """(storage, storage path) of a command-line path: `kafkafmt.storage.LocalStorage` and the path
    itself for local files, the object store a URL names (with ``--storage-option``) otherwise."""
    if is_url(path) and not str(path).lower().startswith("file://"):
        storage, p = open_storage(path, OPTIONS or None)
        return storage, (os.fspath(p) if storage.is_local else p)
    storage, p = open_storage(path)
    return storage, os.fspath(p)


def _asked_of_storage(name, method):
    """The function `name` of a command-line path: the `method` of the storage it lives on (`storage_of`)."""
    def ask(path):
        st, p = storage_of(path)
        return getattr(st, method)(p)
    ask.__name__ = ask.__qualname__ = name
    ask.__doc__ = f"``Storage.{method}`` of a command-line path, wherever it lives (`storage_of`)."
    return ask


exists = _asked_of_storage("exists", "exists")
isdir = _asked_of_storage("isdir", "isdir")
getsize = _asked_of_storage("getsize", "size")
read_bytes = _asked_of_storage("read_bytes", "read_bytes")


def readable(path):
    """A path (local) or the file's bytes (remote), for the side-file readers that take either."""
    return path if is_local(path) else read_bytes(path)


def is_local(path):
    return storage_of(path)[0].is_local


def sibling(path, name):
    """The path or URL of a file named `name` in the same folder as `path`."""
    if is_url(path):
        return path.rsplit("/", 1)[0] + "/" + name
    return os.path.join(os.path.dirname(path), name)
