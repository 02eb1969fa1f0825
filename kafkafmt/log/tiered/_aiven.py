"""Aiven's tiered-storage-for-apache-kafka layout (``ObjectKeyFactory``)::

    <prefix><topic>-<topicId>/<partition>/<baseOffset20>-<segmentId>.{log,indexes,rsm-manifest}

The ``.rsm-manifest`` (JSON, :func:`parse_aiven_manifest`) says how the ``.log`` was stored: as is, or cut into
chunks of ``originalChunkSize`` bytes each zstd-compressed (and/or AES-GCM encrypted) and concatenated;
``.indexes`` holds the offset, time, producer-snapshot, leader-epoch and transaction indexes back to back at the
positions the manifest gives. :class:`AivenSegmentBlob` reads a byte range of the original segment by fetching and
decompressing only the chunks it spans. Encrypted segments (AES-256-GCM chunks whose data key the manifest holds
wrapped with an RSA key) are read when ``tiered_keys={key_id: private key PEM}`` is given (needs the ``cryptography``
package), else raise :class:`~kafkafmt.errors.UnsupportedLayoutError` naming the key.
"""
from __future__ import annotations

import base64
import json
import re
import struct
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional

import numpy as np

from kafkafmt._util.deprecation import renamed_keyword
from kafkafmt.errors import KafkafmtError, ObjectChangedError, UnsupportedLayoutError
from kafkafmt.log._names import SEGMENT_DIGITS, segment_file_name
from kafkafmt.log.tiered._base import ID, TOPIC, RemotePartition, RemoteSegment, TieredLayout, register_layout
from kafkafmt.storage import Blob

__all__ = ["AIVEN_SUFFIXES", "parse_aiven_topic_dir", "parse_aiven_segment_file", "aiven_segment_key", "AivenLayout",
           "AivenManifest", "parse_aiven_manifest", "read_aiven_manifest", "AivenSegmentBlob", "oaep_decrypt"]

_AIVEN_DIR = re.compile(rf"^(?P<topic>{TOPIC})-(?P<topic_id>{ID})$")
_AIVEN_FILE = re.compile(rf"^(?P<offset>\d{{{SEGMENT_DIGITS}}})-(?P<segment_id>{ID})"
                         rf"\.(?P<suffix>log|indexes|rsm-manifest)$")

#: Aiven layout: suffix -> kind (ObjectKeyFactory.Suffix)
AIVEN_SUFFIXES = {"log": "log", "indexes": "indexes", "rsm-manifest": "manifest"}
#: Aiven manifest segmentIndexes names -> kafkafmt side-file kinds
_AIVEN_INDEX_NAMES = {"index": "offset", "timeindex": "timestamp", "snapshot": "producerSnapshot",
                      "leader_epoch_checkpoint": "leaderEpoch", "txnindex": "transaction"}
_MAX_OFFSET = (1 << 63) - 1


def parse_aiven_topic_dir(name: str, prefix: str = ""):
    """``(topic, topic_id)`` of an Aiven topic folder name (after ``prefix``), else None."""
    if prefix and not name.startswith(prefix):
        return None
    m = _AIVEN_DIR.match(name[len(prefix):])
    return (m["topic"], m["topic_id"]) if m else None


def parse_aiven_segment_file(name: str):
    """``(base_offset, segment_id, kind)`` of an Aiven object name (kind: log, indexes, manifest)."""
    m = _AIVEN_FILE.match(name)
    return (int(m["offset"]), m["segment_id"], AIVEN_SUFFIXES[m["suffix"]]) if m else None


def aiven_segment_key(topic, topic_id, partition, base_offset, segment_id, kind, prefix="") -> str:
    suffix = {v: k for k, v in AIVEN_SUFFIXES.items()}[kind]
    name = segment_file_name(int(base_offset), f"-{segment_id}.{suffix}")
    return f"{prefix}{topic}-{topic_id}/{int(partition)}/{name}"


class AivenLayout(TieredLayout):
    """Aiven's tiered-storage-for-apache-kafka: ``<prefix><topic>-<topicId>/<partition>/<offset20>-<segmentId>
    .{log,indexes,rsm-manifest}``; the manifest says how the ``.log`` is stored (as is, or chunked,
    compressed, encrypted) and where each index lies in ``.indexes``."""

    name = "aiven"

    def looks(self, name, prefix=""):
        return parse_aiven_topic_dir(name, prefix) is not None

    def partitions_at(self, storage, path, name, entries, prefix, parent_name, listing=None):
        aiven = parse_aiven_topic_dir(name, prefix)
        numeric = [e for e in entries if e.is_dir and e.name.isdigit()]
        if aiven and numeric:
            listing = listing or storage.list
            return [_aiven_partition(storage, e.path, aiven, int(e.name), listing(e.path)) for e in numeric]
        files = [e for e in entries if not e.is_dir]
        if name.isdigit() and parent_name and parse_aiven_topic_dir(parent_name, prefix) \
                and any(parse_aiven_segment_file(e.name) for e in files):
            return [_aiven_partition(storage, path, parse_aiven_topic_dir(parent_name, prefix), int(name), entries)]
        return None

    def first_reads(self, part, read_manifests=True):
        if not read_manifests:
            return []
        return [(seg.files["manifest"], seg.sizes.get("manifest"), seg.versions.get("manifest"))
                for seg in part.segments if seg.manifest is None]

    def finish(self, storage, part, *, read_manifests, resolve, tiered_keys=None):
        if read_manifests:
            for seg in part.segments:
                try:
                    read_aiven_manifest(storage, seg)
                except (KafkafmtError, ValueError) as exc:
                    part.problems.append(f"{storage.url(seg.files['manifest'])}: {exc}")
        super().finish(storage, part, read_manifests=read_manifests, resolve=resolve, tiered_keys=tiered_keys)

    def open_log(self, storage, seg, *, read_ahead=None, tiered_keys=None) -> Blob:
        """The ``.log`` object itself when stored untransformed; else an `AivenSegmentBlob` (encrypted
        segments need ``tiered_keys``, else UnsupportedLayoutError names the key)."""
        m = read_aiven_manifest(storage, seg)
        if m.encryption is not None:
            m.data_key(tiered_keys, url=storage.url(seg.log))     # fails early, before any request for the .log
        raw = super().open_log(storage, seg, read_ahead=read_ahead, tiered_keys=tiered_keys)
        if not m.transformed:
            if raw.size != m.original_size:
                raw.close()
                raise ObjectChangedError(f"changed size: the .log object has {seg.size} bytes, its manifest says "
                                         f"{m.original_size}", file=storage.url(seg.log))
            return raw
        try:
            return AivenSegmentBlob(raw, m, tiered_keys=tiered_keys)
        except Exception:
            raw.close()
            raise

    def side_file(self, storage, seg, kind, *, tiered_keys=None):
        m = read_aiven_manifest(storage, seg)
        where = m.indexes.get(kind)
        if where is None or "indexes" not in seg.files:
            return None
        url = storage.url(seg.files["indexes"])
        aes = aad = None
        if m.encryption is not None:
            key, aad = m.data_key(tiered_keys, url=url)
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            aes = AESGCM(key)
        pos, size = where
        if pos + size > seg.sizes.get("indexes", 0):
            raise ObjectChangedError(f"the .indexes object has {seg.sizes.get('indexes', 0)} bytes, its manifest "
                                     f"places the {kind} at {pos}..{pos + size}", file=url)
        data = storage.read_bytes(seg.files["indexes"], pos, pos + size) if size else b""
        return _decrypt(aes, data, aad, url) if aes is not None and data else data

    def has_side_file(self, storage, seg, kind):
        return read_aiven_manifest(storage, seg).indexes.get(kind) is not None

    def end_offset(self, storage, seg, *, tiered_keys=None):
        m = read_aiven_manifest(storage, seg)
        if m.end_offset is not None:
            return int(m.end_offset)
        return super().end_offset(storage, seg, tiered_keys=tiered_keys)


def _aiven_partition(storage, path, parsed, partition, entries):
    topic, topic_id = parsed
    part = RemotePartition(_LAYOUT, topic, partition, topic_id, path)
    groups = OrderedDict()
    for e in entries:
        if e.is_dir:
            continue
        p = parse_aiven_segment_file(e.name)
        if p is None:
            part.problems.append(f"{storage.url(e.path)}: not a tiered-storage segment object")
            continue
        off, sid, kind = p
        g = groups.setdefault((off, sid), ({}, {}, {}))
        g[0][kind], g[1][kind], g[2][kind] = e.path, e.size, e.version
    for (off, sid), (files_, sizes, versions) in groups.items():
        if "log" not in files_ or "manifest" not in files_:
            what = "no .log" if "log" not in files_ else "no .rsm-manifest (cannot tell how the .log is stored)"
            part.problems.append(f"{storage.url(next(iter(files_.values())))}: segment {sid}: {what}")
            continue
        part.segments.append(RemoteSegment(part.layout, topic, partition, topic_id, off, sid, files_, sizes,
                                           versions=versions))
    return part


# ------------------------------------------------------------------------------------------------
# manifests and chunked segments

@dataclass(frozen=True)
class AivenManifest:
    """A parsed ``.rsm-manifest`` (version 1).

    ``original_size`` / ``chunk_size``: the segment's size and the chunk size before transforms;
    ``original_starts``, ``transformed_starts``, ``transformed_sizes``: per-chunk int64 arrays;
    ``compression``: chunks are zstd frames; ``encryption``: the manifest's encryption object (or
    None); ``indexes``: kind -> (position, size) inside ``.indexes`` (None when absent);
    ``metadata``: ``remoteLogSegmentMetadata`` as written (start/end offset, epochs...) or None.
    """
    version: str
    chunk_size: int
    original_size: int
    original_starts: np.ndarray
    transformed_starts: np.ndarray
    transformed_sizes: np.ndarray
    compression: bool
    encryption: Optional[dict]
    indexes: dict
    metadata: Optional[dict]

    def __repr__(self):     # a summary: the chunk tables hold a row per chunk
        how = ", ".join(w for w, on in (("zstd", self.compression), ("encrypted", self.encryption is not None)) if on)
        return (f"<AivenManifest v{self.version}: {len(self.original_starts)} chunks of {self.chunk_size} bytes, "
                f"{self.original_size} bytes{f', {how}' if how else ''}>")

    @property
    def transformed(self):
        return self.compression or self.encryption is not None

    @property
    def transformed_size(self):
        return int(self.transformed_starts[-1] + self.transformed_sizes[-1]) if len(self.transformed_sizes) else 0

    @property
    def start_offset(self):
        return None if not self.metadata else self.metadata.get("startOffset")

    @property
    def end_offset(self):
        """Last offset of the segment (inclusive, as in RemoteLogSegmentMetadata), if recorded."""
        return None if not self.metadata else self.metadata.get("endOffset")

    def chunk_range(self, start, stop):
        """Chunk numbers ``[first, last + 1)`` holding original bytes [start, stop)."""
        if stop <= start:
            return 0, 0
        return start // self.chunk_size, (stop - 1) // self.chunk_size + 1

    @property
    def key_id(self):
        """Id of the RSA key that wraps the data key (encrypted segments), else None."""
        key = str((self.encryption or {}).get("dataKey") or "")
        return key.split(":", 1)[0] if ":" in key else None

    def encryption_problem(self):
        key_id = self.key_id
        return ("the segment is encrypted (AES-256-GCM chunks, 12-byte IV before each; the data key in the "
                "manifest's encryption.dataKey is wrapped with RSA key "
                + (f"'{key_id}'" if key_id else "(id not recorded)")
                + "): reading it needs that private key: pass tiered_keys={"
                + (f"'{key_id}'" if key_id else "KEY_ID") + ": <RSA private key, PEM>}")

    @renamed_keyword("keys", "tiered_keys")
    def data_key(self, tiered_keys, url=None):
        """(AES data key, AAD) of an encrypted segment, unwrapped with ``tiered_keys[key_id]`` (a PEM
        private key as bytes/str, or a ``cryptography`` private key)."""
        key_id = self.key_id
        if not tiered_keys or key_id not in tiered_keys:
            raise UnsupportedLayoutError(self.encryption_problem(), file=url)
        try:
            from cryptography.hazmat.primitives import serialization
        except ImportError:
            raise UnsupportedLayoutError("reading encrypted segments needs the cryptography package "
                                         "(pip install cryptography)", file=url) from None
        private = tiered_keys[key_id]
        if isinstance(private, str):
            private = private.encode()
        if isinstance(private, (bytes, bytearray)):
            private = serialization.load_pem_private_key(bytes(private), password=None)
        wrapped = base64.b64decode(str(self.encryption["dataKey"]).split(":", 1)[1])
        aad = base64.b64decode(self.encryption.get("aad") or "")
        # Aiven: RSA/NONE/OAEPWithSHA3-512AndMGF1Padding (BouncyCastle: MGF1 with the same digest;
        # SunJCE's convention, MGF1 with SHA-1, tried second). OpenSSL's OAEP has no SHA-3 through
        # the cryptography package, so the padding is undone here (RFC 8017, 7.1.2).
        for mgf in ("sha3_512", "sha1"):
            key = oaep_decrypt(private, wrapped, "sha3_512", mgf)
            if key is not None:
                return key, aad
        raise UnsupportedLayoutError(f"RSA key '{key_id}' does not unwrap this segment's data key", file=url)


def _decode_chunk_sizes(text):
    """Aiven's ``transformedChunks``: base64 of a zstd frame of ChunkSizesBinaryCodec's encoding."""
    import zstandard
    raw = zstandard.ZstdDecompressor().decompress(base64.b64decode(text), max_output_size=10 << 20)
    (count,) = struct.unpack_from(">i", raw, 0)
    if count == 0:
        return []
    if count == 1:
        return [struct.unpack_from(">i", raw, 4)[0]]
    base, width = struct.unpack_from(">ib", raw, 4)
    pos = 9
    values = []
    for _ in range(count - 1):
        values.append(int.from_bytes(raw[pos:pos + width], "big") + base)
        pos += width
    values.append(struct.unpack_from(">i", raw, pos)[0])
    return values


def parse_aiven_manifest(data, url=None) -> AivenManifest:
    """Parse an Aiven ``.rsm-manifest`` (bytes or str); UnsupportedLayoutError if it is not one."""
    try:
        doc = json.loads(bytes(data).decode("utf-8") if not isinstance(data, str) else data)
        version = str(doc.get("version"))
        if version != "1":
            raise UnsupportedLayoutError(f"segment manifest version {version!r} (kafkafmt reads version 1)", file=url)
        ci = doc["chunkIndex"]
        chunk, original = int(ci["originalChunkSize"]), int(ci["originalFileSize"])
        if chunk <= 0 or original < 0:
            raise ValueError("chunk sizes must be positive")
        if ci["type"] == "fixed":
            count = -(-original // chunk)
            sizes = [int(ci["transformedChunkSize"])] * count
            if count:
                sizes[-1] = int(ci["finalTransformedChunkSize"])
        elif ci["type"] == "variable":
            sizes = _decode_chunk_sizes(ci["transformedChunks"])
            count = len(sizes)
        else:
            raise UnsupportedLayoutError(f"unknown chunk index type {ci['type']!r}", file=url)
        if count and not (count - 1) * chunk < original <= count * chunk:
            raise ValueError(f"{count} chunks of {chunk} bytes cannot hold {original} bytes")
        tsizes = np.array(sizes, dtype=np.int64)
        tstarts = np.zeros(count, dtype=np.int64)
        if count:
            np.cumsum(tsizes[:-1], out=tstarts[1:])
        indexes = {}
        for kind, key in _AIVEN_INDEX_NAMES.items():
            v = (doc.get("segmentIndexes") or {}).get(key)
            indexes[kind] = None if v is None else (int(v["position"]), int(v["size"]))
        return AivenManifest(version, chunk, original, np.arange(count, dtype=np.int64) * chunk, tstarts, tsizes,
                             bool(doc.get("compression", False)), doc.get("encryption"), indexes,
                             doc.get("remoteLogSegmentMetadata"))
    except KafkafmtError:
        raise
    except (ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError) as exc:
        raise UnsupportedLayoutError(f"unreadable segment manifest: {type(exc).__name__}: {exc}", file=url) from None
    except Exception as exc:  # zstandard.ZstdError
        raise UnsupportedLayoutError(f"unreadable segment manifest: {type(exc).__name__}: {exc}", file=url) from None


def read_aiven_manifest(storage, seg) -> AivenManifest:
    """The manifest of an Aiven segment (read once, kept on ``seg``; sets ``seg.end_offset``)."""
    if seg.manifest is None:
        path = seg.files["manifest"]
        data = storage.read_listed(path, seg.sizes.get("manifest"), seg.versions.get("manifest"))
        seg.manifest = parse_aiven_manifest(data, url=storage.url(path))
        if seg.end_offset is None and seg.manifest.end_offset is not None:
            seg.end_offset = int(seg.manifest.end_offset)
    return seg.manifest


class AivenSegmentBlob(Blob):
    """The original bytes of a chunked (zstd-compressed) Aiven segment, read through its manifest.

    ``read(start, stop)`` fetches the transformed byte range of the chunks [start, stop) spans
    from the ``.log`` object (one request through the object's blob, which reads ahead) and
    decompresses those chunks only; the last ``cache_chunks`` decompressed chunks are kept.
    ``requests`` / ``bytes_fetched`` are the object's.
    """

    @renamed_keyword("keys", "tiered_keys")
    def __init__(self, raw: Blob, manifest: AivenManifest, cache_chunks=4, tiered_keys=None):
        self._aes = self._aad = None
        if manifest.encryption is not None:
            key, self._aad = manifest.data_key(tiered_keys, url=raw.url)
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            self._aes = AESGCM(key)
        if raw.size != manifest.transformed_size:
            raise ObjectChangedError(f"changed size: the .log object has {raw.size} bytes, its manifest says "
                                     f"{manifest.transformed_size}", file=raw.url)
        self.raw, self.manifest = raw, manifest
        self.path, self.url, self.size = raw.path, raw.url, manifest.original_size
        self.cache_chunks = max(1, cache_chunks)
        self._chunks = OrderedDict()
        self._lock = threading.Lock()
        import zstandard
        self._dctx = zstandard.ZstdDecompressor()

    @property
    def requests(self):
        return self.raw.requests

    @property
    def bytes_fetched(self):
        return self.raw.bytes_fetched

    def _chunk(self, i, data, base):
        m = self.manifest
        want = int(min(m.chunk_size, m.original_size - m.original_starts[i]))
        lo = int(m.transformed_starts[i]) - base
        frame = data[lo:lo + int(m.transformed_sizes[i])]
        if self._aes is not None:
            frame = _decrypt(self._aes, frame, self._aad, self.url, int(m.original_starts[i]))
        if not m.compression:
            out = bytes(frame)
        else:
            try:
                out = self._dctx.decompress(frame, max_output_size=want)
            except Exception as exc:  # zstandard.ZstdError
                raise UnsupportedLayoutError(f"chunk {i} does not decompress: {exc}", file=self.url,
                                             position=int(m.original_starts[i])) from None
        if len(out) != want:
            raise UnsupportedLayoutError(f"chunk {i} holds {len(out)} bytes, the manifest says {want}",
                                         file=self.url, position=int(m.original_starts[i]))
        return out

    def read(self, start, stop=None):
        start, stop = self._check_range(start, stop)
        if stop == start:
            return memoryview(b"")
        m = self.manifest
        first, last = m.chunk_range(start, stop)
        with self._lock:
            missing = [i for i in range(first, last) if i not in self._chunks]
            if missing:
                lo, hi = missing[0], missing[-1]
                base = int(m.transformed_starts[lo])
                data = self.raw.read(base, int(m.transformed_starts[hi] + m.transformed_sizes[hi]))
                for i in range(lo, hi + 1):
                    if i not in self._chunks:
                        self._chunks[i] = self._chunk(i, data, base)
            parts = []
            for i in range(first, last):
                self._chunks.move_to_end(i)
                parts.append(self._chunks[i])
            while len(self._chunks) > max(self.cache_chunks, last - first):
                self._chunks.popitem(last=False)
        offset = start - first * m.chunk_size
        if len(parts) == 1:
            return memoryview(parts[0])[offset:offset + stop - start]
        return memoryview(b"".join(parts))[offset:offset + stop - start]

    def release(self, done, upto):
        with self._lock:
            for i in [i for i in self._chunks if (i + 1) * self.manifest.chunk_size <= upto]:
                del self._chunks[i]
        return self.raw.release(done, upto)

    def close(self):
        self._chunks.clear()
        self.raw.close()


def _mgf1(seed, length, hash_name):
    import hashlib      # (here: only encrypted uploads need it, and a command's start-up does not)

    out, counter = b"", 0
    while len(out) < length:
        out += hashlib.new(hash_name, seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return out[:length]


def oaep_decrypt(private_key, ciphertext, hash_name="sha3_512", mgf_hash=None, label=b""):
    """RSAES-OAEP decryption (RFC 8017 7.1.2) with any hashlib digest; None if it does not decode.
    ``private_key``: a ``cryptography`` RSA private key."""
    import hashlib

    numbers = private_key.private_numbers()
    n, d = numbers.public_numbers.n, numbers.d
    k = (n.bit_length() + 7) // 8
    h = hashlib.new(hash_name)
    hlen = h.digest_size
    c = int.from_bytes(ciphertext, "big")
    if len(ciphertext) != k or c >= n or k < 2 * hlen + 2:
        return None
    em = pow(c, d, n).to_bytes(k, "big")
    masked_seed, masked_db = em[1:1 + hlen], em[1 + hlen:]
    seed = bytes(a ^ b for a, b in zip(masked_seed, _mgf1(masked_db, hlen, mgf_hash or hash_name)))
    db = bytes(a ^ b for a, b in zip(masked_db, _mgf1(seed, k - hlen - 1, mgf_hash or hash_name)))
    if em[0] != 0 or db[:hlen] != hashlib.new(hash_name, label).digest():
        return None
    rest = db[hlen:].lstrip(b"\x00")
    if not rest or rest[0] != 1:
        return None
    return rest[1:]


def _decrypt(aes, frame, aad, url, position=None):
    """One Aiven-encrypted chunk: 12-byte IV, then AES-GCM ciphertext with its 16-byte tag."""
    try:
        return aes.decrypt(bytes(frame[:12]), bytes(frame[12:]), aad or None)
    except Exception as exc:  # cryptography.exceptions.InvalidTag
        raise UnsupportedLayoutError(f"encrypted chunk does not decrypt ({type(exc).__name__}): wrong key or "
                                     f"corrupt data", file=url, position=position) from None


_LAYOUT = register_layout(AivenLayout())
