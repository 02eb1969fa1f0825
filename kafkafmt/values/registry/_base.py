"""Schema sources behind one interface: the registry's own ``_schemas`` topic, a folder of schema
files, one schema given directly, or a live registry.

Every source is a `SchemaRegistry`:

    reg = open_registry(None, roots=["/backup/kafka-logs"])   # the _schemas partition among the roots
    reg = open_registry("/backup/kafka-logs")                   # a log dir (or its _schemas-0 folder)
    reg = open_registry("s3://bucket/kafka-logs", storage_options={...})
    reg = open_registry("schemas/")                             # a folder of schema files (see below)
    reg = open_registry("https://registry:8081")                # a live registry (confluent-kafka)
    reg.schema(7)                   # RegisteredSchema(id=7, schema_type="AVRO", schema_str=..., ...)
    reg.latest("orders-value"), reg.version("orders-value", 2), reg.subjects()

**The ``_schemas`` topic** (`TopicSchemaRegistry`) is replayed as the Confluent Schema Registry
replays it at start-up (KafkaStoreReaderThread, KafkaStoreMessageHandler, InMemoryCache):

* records in offset order; a key that is not JSON, or an unknown ``keytype``, is skipped (and
  named in ``problems``); ``NOOP`` only moves the offset;
* per key -- SCHEMA ``(subject, version)``, CONFIG/MODE/DELETE_SUBJECT/CLEAR_SUBJECT ``(subject)``
  (the global CONFIG/MODE has none) --, the last write wins and a null value (tombstone) deletes it;
  keys are compared as parsed JSON, so Karapace's key order (``subject, version, magic, keytype``)
  and its ``"subject": null`` global config are the same keys;
* a SCHEMA record whose id already names another schema text is ignored (the registry refuses it);
* ``deleted: true`` is a soft delete: the version is no longer "live", but its id still resolves;
  DELETE_SUBJECT soft-deletes versions 1..``version`` of its subject; a tombstone on a SCHEMA key
  (a hard delete) unmaps that subject-version from its id, and an id that no subject-version maps
  to any more no longer resolves; CLEAR_SUBJECT drops the subject's soft-deleted versions;
* an absent ``schemaType`` is ``AVRO`` (registries before 5.5, Karapace); ``references`` are kept;
* ids live in a context: a subject ``:.ctx:name`` is in context ``.ctx``, every other one in the
  default context ``.``; `schema` looks ids up in the default context unless told otherwise.

Several copies of the partition (replicas in the log dirs of several brokers) are not merged: the
longest (highest end offset) is replayed.

**A folder of schema files** (`FolderSchemaRegistry`): every file named ``<id>.<ext>`` or
``<version>-<id>.<ext>`` with ``<ext>`` one of ``avsc`` (AVRO), ``proto`` (PROTOBUF) or ``json``
(JSON Schema) registers its id; a file in a subfolder is registered under the subject named by its
path relative to the folder (``orders-value/3-17.avsc``: subject ``orders-value``, version 3,
id 17; a file without a version there takes the next version). For references, a
``manifest.json`` beside them lists entries ``{"id", "subject", "version", "schemaType",
"file" | "schema", "references": [{"name", "subject", "version"}], "deleted"}`` (files named
there are not registered a second time).

**One schema given directly** (`InlineSchemaRegistry`): ``{id: schema text}`` (a dict), or one
schema (text, parsed JSON or a ``.avsc`` path) that every id resolves to.

**A live registry** (`ClientSchemaRegistry`): confluent-kafka's ``SchemaRegistryClient``
(``pip install 'kafkafmt[schema-registry]'``; ``mock://`` URLs give its in-memory mock), every
answer cached for the life of the object.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import threading
import warnings
from typing import Optional

from kafkafmt.errors import SchemaNotFoundError, SchemaRegistryError

__all__ = ["SchemaRegistry", "RegisteredSchema", "SchemaReference", "TopicSchemaRegistry", "FolderSchemaRegistry",
           "InlineSchemaRegistry", "ClientSchemaRegistry", "open_registry", "replay_schemas_topic",
           "SCHEMAS_TOPIC", "DEFAULT_CONTEXT"]

#: the registry's topic (``kafkastore.topic``)
SCHEMAS_TOPIC = "_schemas"
#: the context of subjects that name none
DEFAULT_CONTEXT = "."
#: the schema types a registry knows (absent = AVRO)
SCHEMA_TYPES = ("AVRO", "PROTOBUF", "JSON")
_EXTENSIONS = {".avsc": "AVRO", ".proto": "PROTOBUF", ".json": "JSON"}
_LIVE_SCHEMES = ("http://", "https://", "mock://")


@dataclasses.dataclass(frozen=True)
class SchemaReference:
    """A reference of a schema to another subject-version (Avro: a named type defined there)."""
    name: str
    subject: str
    version: int


@dataclasses.dataclass(frozen=True)
class RegisteredSchema:
    """A schema as the registry holds it.

    Attributes
    ----------
    id : int
        The schema id (what the wire format carries).
    schema_type : str
        ``"AVRO"``, ``"PROTOBUF"`` or ``"JSON"``.
    schema_str : str
        The schema text as registered (the registry's canonical form).
    references : tuple of SchemaReference
        Other subject-versions this schema uses.
    subject, version : str or None, int or None
        The subject-version asked for (`version`, `latest`), or the first one the id is
        registered under (`schema`); None when the source does not say.
    versions : tuple of (str, int)
        Every subject-version registered with this id that the source knows.
    deleted : bool
        The subject-version asked for is soft-deleted; for `schema` (by id): every subject-version
        of the id is.

    Parameters
    ----------
    id, schema_type, schema_str, references, subject, version, versions, deleted
        The attributes, in this order.

    Examples
    --------
    A ``_schemas`` topic with one Avro schema, as a Schema Registry writes it, replayed:

    >>> import json
    >>> import kafkafmt
    >>> schema = json.dumps({"type": "record", "name": "Payment",
    ...                      "fields": [{"name": "payment", "type": "string"}, {"name": "amount", "type": "int"}]})
    >>> key = {"keytype": "SCHEMA", "subject": "payments-value", "version": 1, "magic": 1}
    >>> value = {"subject": "payments-value", "version": 1, "id": 1, "schema": schema, "deleted": False}
    >>> _ = kafkafmt.write_log_dir("registry/_schemas-0", keys=[json.dumps(key).encode()],
    ...                            values=[json.dumps(value).encode()], timestamps=[1767225600000])
    >>> registered = kafkafmt.open_registry("registry").latest("payments-value")
    >>> registered.id, registered.schema_type, registered.subject, registered.version, registered.versions
    (1, 'AVRO', 'payments-value', 1, (('payments-value', 1),))
    """
    id: int
    schema_type: str
    schema_str: str
    references: tuple = ()
    subject: Optional[str] = None
    version: Optional[int] = None
    versions: tuple = ()
    deleted: bool = False


def _context_of(subject):
    """The context of a (possibly qualified ``:.ctx:name``) subject."""
    if subject and subject.startswith(":."):
        end = subject.find(":", 2)
        if end > 0:
            return subject[1:end]
    return DEFAULT_CONTEXT


def _references(raw):
    out = []
    for r in raw or ():
        if isinstance(r, SchemaReference):
            out.append(r)
        elif isinstance(r, dict):
            out.append(SchemaReference(str(r.get("name")), str(r.get("subject")), int(r.get("version", -1))))
        else:   # confluent-kafka's SchemaReference (attributes)
            out.append(SchemaReference(str(r.name), str(r.subject), int(r.version)))
    return tuple(out)


class SchemaRegistry:
    """The interface every schema source implements.

    Subclasses implement `schema`, `version`, `versions` and `subjects`; `latest` and
    `resolve_references` are built on them.

    Examples
    --------
    Every source `open_registry` opens answers the same questions:

    >>> import json
    >>> import kafkafmt
    >>> schema = json.dumps({"type": "record", "name": "Payment",
    ...                      "fields": [{"name": "payment", "type": "string"}, {"name": "amount", "type": "int"}]})
    >>> key = {"keytype": "SCHEMA", "subject": "payments-value", "version": 1, "magic": 1}
    >>> value = {"subject": "payments-value", "version": 1, "id": 1, "schema": schema, "deleted": False}
    >>> _ = kafkafmt.write_log_dir("registry/_schemas-0", keys=[json.dumps(key).encode()],
    ...                            values=[json.dumps(value).encode()], timestamps=[1767225600000])
    >>> registry = kafkafmt.open_registry("registry")
    >>> isinstance(registry, kafkafmt.SchemaRegistry)
    True
    >>> registry.subjects(), registry.versions("payments-value"), registry.schema(1).schema_type
    (['payments-value'], [1], 'AVRO')
    """

    #: where the schemas come from (for error texts)
    source = "schema registry"

    def schema(self, schema_id: int, *, context: str = DEFAULT_CONTEXT) -> RegisteredSchema:
        """The schema registered with ``schema_id`` (soft-deleted ones included).

        Raises
        ------
        SchemaNotFoundError
            The id is not known (or was hard-deleted).
        """
        raise NotImplementedError

    def version(self, subject: str, version: int) -> RegisteredSchema:
        """Version ``version`` of ``subject`` (soft-deleted included; ``deleted`` says so).

        Raises
        ------
        SchemaNotFoundError
            No such subject or version.
        """
        raise NotImplementedError

    def versions(self, subject: str, include_deleted: bool = False) -> list:
        """The versions of ``subject``, ascending (soft-deleted ones only with include_deleted)."""
        raise NotImplementedError

    def subjects(self, include_deleted: bool = False) -> list:
        """Every subject with a version (with only soft-deleted versions: only with include_deleted), sorted."""
        raise NotImplementedError

    def latest(self, subject: str, include_deleted: bool = False) -> RegisteredSchema:
        """The highest version of ``subject`` that is not soft-deleted (any with include_deleted).

        Raises
        ------
        SchemaNotFoundError
            The subject has no such version.
        """
        vs = self.versions(subject, include_deleted=include_deleted)
        if not vs:
            raise SchemaNotFoundError(f"subject {subject!r} has no {'' if include_deleted else 'live '}version "
                                      f"in the {self.source}")
        return self.version(subject, vs[-1])

    def resolve_references(self, schema: RegisteredSchema) -> list:
        """Every schema ``schema`` references, transitively, dependencies first (each once).

        Raises
        ------
        SchemaNotFoundError
            A referenced subject-version is missing.
        SchemaRegistryError
            The references form a cycle.
        """
        out, done, active = [], set(), set()

        def visit(s, depth):
            for ref in s.references:
                key = (ref.subject, ref.version)
                if key in done:
                    continue
                if key in active or depth > 100:
                    raise SchemaRegistryError(f"schema references form a cycle at {ref.subject!r} version "
                                              f"{ref.version} ({self.source})")
                active.add(key)
                target = self.version(ref.subject, ref.version) if ref.version >= 0 else self.latest(ref.subject)
                visit(target, depth + 1)
                active.discard(key)
                done.add(key)
                out.append(target)

        visit(schema, 0)
        return out

    def __repr__(self):
        return f"<{type(self).__name__} {self.source}>"


# ------------------------------------------------------------------------------------------------
# the _schemas topic

class _Replay:
    """The registry's state while its topic is replayed (store + id maps, as InMemoryCache)."""

    def __init__(self):
        self.store = {}        # key tuple -> value dict
        self.ids = {}          # context -> id -> {subject: version}
        self.problems = []     # (offset, text) of records skipped

    # -- InMemoryCache
    def _id_map(self, subject, schema_id):
        return self.ids.setdefault(_context_of(subject), {}).setdefault(schema_id, {})

    def registered(self, subject, version, value):          # schemaRegistered / schemaDeleted
        self._id_map(subject, value["id"])[subject] = version

    def tombstoned(self, subject, version, old):            # schemaTombstoned
        if old is None:
            return
        guids = self.ids.get(_context_of(subject), {})
        sv = guids.get(old["id"])
        if not sv:
            return
        if sv.get(subject) == version:
            del sv[subject]
        if not sv:
            del guids[old["id"]]

    def key_of_id(self, schema_id, context=DEFAULT_CONTEXT):
        sv = self.ids.get(context, {}).get(schema_id)
        if not sv:
            return None
        subject, version = next(iter(sv.items()))
        return ("SCHEMA", subject, version)

    # -- KafkaStoreMessageHandler
    def apply(self, key_bytes, value_bytes, offset):
        if key_bytes is None:
            self.problems.append((offset, "null key skipped"))
            return
        try:
            key = json.loads(bytes(key_bytes))
        except ValueError as exc:
            self.problems.append((offset, f"key is not JSON ({exc}): skipped"))
            return
        if not isinstance(key, dict):
            self.problems.append((offset, "key is not a JSON object: skipped"))
            return
        kt = key.get("keytype")
        if kt == "NOOP":
            return
        subject = key.get("subject")
        if kt == "SCHEMA":
            if key.get("magic", 1) not in (0, 1) or not isinstance(subject, str) \
                    or not isinstance(key.get("version"), int):
                self.problems.append((offset, "SCHEMA key with a bad magic, subject or version: skipped"))
                return
            k = ("SCHEMA", subject, key["version"])
        elif kt in ("CONFIG", "MODE", "DELETE_SUBJECT", "CLEAR_SUBJECT"):
            k = (kt, subject)
        elif kt in ("CONTEXT", "ASSOC"):
            k = (kt, json.dumps(key, sort_keys=True))          # kept, not used
        else:
            self.problems.append((offset, f"unknown keytype {kt!r}: skipped"))
            return
        value = None
        if value_bytes is not None:
            try:
                value = json.loads(bytes(value_bytes))
            except ValueError as exc:
                self.problems.append((offset, f"{kt} value is not JSON ({exc}): skipped"))
                return
            if not isinstance(value, dict):
                self.problems.append((offset, f"{kt} value is not a JSON object: skipped"))
                return
        if kt == "SCHEMA" and value is not None:
            if not isinstance(value.get("id"), int) or not isinstance(value.get("schema"), str):
                self.problems.append((offset, "SCHEMA value without an integer id or a schema text: skipped"))
                return
            value.setdefault("schemaType", "AVRO")
            value.setdefault("deleted", False)
            # validateUpdate: an id already naming another text is refused
            old_key = self.key_of_id(value["id"], _context_of(subject))
            if old_key is not None:
                old = self.store.get(old_key)
                if old is not None and old["schema"] != value["schema"]:
                    self.problems.append((offset, f"schema id {value['id']} already names another schema: "
                                                  f"ignored, as the registry does"))
                    return
        if value is None:
            old = self.store.pop(k, None)
        else:
            old = self.store.get(k)
            self.store[k] = value
        # handleUpdate
        if kt == "SCHEMA":
            if value is not None:
                self.registered(subject, k[2], value)
            else:
                self.tombstoned(subject, k[2], old)
        elif value is None:
            return
        elif kt == "DELETE_SUBJECT":
            subject = value.get("subject", subject)
            upto = value.get("version")
            if not isinstance(upto, int):
                return
            for v in range(1, upto + 1):
                sv = self.store.get(("SCHEMA", subject, v))
                if sv is not None and not sv.get("deleted"):
                    sv = dict(sv, deleted=True)
                    self.store[("SCHEMA", subject, v)] = sv
                    self.registered(subject, v, sv)
        elif kt == "CLEAR_SUBJECT":
            self.clear_subject(value.get("subject", subject))

    def clear_subject(self, subject):
        def deleted(s, v):
            sv = self.store.get(("SCHEMA", s, v))
            return sv is None or sv.get("deleted")

        guids = self.ids.get(_context_of(subject), {})
        for sid in list(guids):
            sv = guids[sid]
            for s in [s for s, v in sv.items() if s == subject and deleted(s, v)]:
                del sv[s]
            if not sv:
                del guids[sid]
        for k in [k for k, v in self.store.items() if k[0] == "SCHEMA" and k[1] == subject and v.get("deleted")]:
            del self.store[k]


def replay_schemas_topic(keys, values, offsets=None):
    """Replay the records of a ``_schemas`` partition (keys and values as bytes or None, in offset order).

    Returns
    -------
    TopicSchemaRegistry
    """
    state = _Replay()
    offsets = range(len(keys)) if offsets is None else offsets
    for k, v, o in zip(keys, values, offsets):
        state.apply(k, v, int(o))
    return TopicSchemaRegistry(state)


class TopicSchemaRegistry(SchemaRegistry):
    """The registry's state replayed from its ``_schemas`` topic (see the module docstring).

    Build it with `from_records`, `from_log_dirs` or `replay_schemas_topic`. ``problems`` lists
    ``(offset, text)`` for every record the replay skipped.
    """

    def __init__(self, state: _Replay, source="_schemas topic"):
        self._state = state
        self.source = source
        self.problems = state.problems
        # subject -> [(version, deleted)], ascending (the state no longer changes)
        self._by_subject = {}
        for k, v in state.store.items():
            if k[0] == "SCHEMA":
                self._by_subject.setdefault(k[1], []).append((k[2], bool(v.get("deleted"))))
        for vs in self._by_subject.values():
            vs.sort()

    @classmethod
    def from_records(cls, records, source="_schemas topic"):
        """Replay a `kafkafmt.Records` of the topic (e.g. ``read_log_dir(".../_schemas-0")``)."""
        key, value = records.key, records.value
        reg = replay_schemas_topic(key.to_pylist(), value.to_pylist(), records.offset)
        reg.source = source
        return reg

    @classmethod
    def from_log_dirs(cls, roots, *, topic=SCHEMAS_TOPIC, storage_options=None, filesystem=None):
        """Find ``<topic>-0`` among ``roots`` (log dirs, folders of log dirs, the partition folder
        itself; paths or URLs) and replay it; among several copies, the longest.

        Raises
        ------
        SchemaRegistryError
            No such partition under the roots.
        """
        from kafkafmt.log import find_partitions
        from kafkafmt.errors import KafkafmtWarning

        roots_list = [roots] if isinstance(roots, (str, os.PathLike)) else list(roots)
        with warnings.catch_warnings():
            # "no partition of topic _schemas": the error below says it, and what to do
            warnings.simplefilter("ignore", KafkafmtWarning)
            found = list(find_partitions(roots_list, [topic], None, None, storage_options, filesystem))
        if not found:
            where = ", ".join(map(str, roots_list)) or "(no roots)"
            raise SchemaRegistryError(f"no schema registry given and no {topic}-0 partition (the Schema "
                                      f"Registry's topic) found under {where}: pass a schema registry "
                                      f"(a log dir, a folder of schema files, a registry URL)")
        best = None
        for part in found:
            recs = _read_topic_partition(part)
            end = int(recs.offset[-1]) if len(recs) else -1
            if best is None or end > best[0]:
                best = (end, recs, part)
        return cls.from_records(best[1], source=f"{topic} topic at {best[2].url}")

    # -- the interface
    def _registered(self, key, value, schema_id=None, context=DEFAULT_CONTEXT):
        sid = value["id"] if schema_id is None else schema_id
        sv = self._state.ids.get(context, {}).get(sid, {})
        versions = tuple(sorted(sv.items()))
        if schema_id is not None:
            deleted = all(self._state.store.get(("SCHEMA", s, v), {}).get("deleted", True) for s, v in versions)
        else:
            deleted = bool(value.get("deleted"))
        return RegisteredSchema(id=sid, schema_type=value.get("schemaType") or "AVRO", schema_str=value["schema"],
                                references=_references(value.get("references")), subject=key[1],
                                version=key[2], versions=versions, deleted=deleted)

    def schema(self, schema_id, *, context=DEFAULT_CONTEXT):
        key = self._state.key_of_id(schema_id, context)
        value = None if key is None else self._state.store.get(key)
        if value is None:
            raise SchemaNotFoundError(f"schema id {schema_id} is not in the {self.source}")
        return self._registered(key, value, schema_id, context)

    def version(self, subject, version):
        key = ("SCHEMA", subject, int(version))
        value = self._state.store.get(key)
        if value is None:
            raise SchemaNotFoundError(f"subject {subject!r} has no version {version} in the {self.source}")
        return self._registered(key, value)

    def versions(self, subject, include_deleted=False):
        return [v for v, deleted in self._by_subject.get(subject, ()) if include_deleted or not deleted]

    def subjects(self, include_deleted=False):
        return sorted(s for s, vs in self._by_subject.items() if include_deleted or any(not d for _, d in vs))

    def ids(self, context=DEFAULT_CONTEXT):
        """Every id that resolves, ascending."""
        return sorted(self._state.ids.get(context, {}))

    def config(self, subject=None):
        """The compatibility config of a subject (None: the global one) as stored, or None."""
        return self._state.store.get(("CONFIG", subject))

    def mode(self, subject=None):
        """The mode of a subject (None: the global one) as stored, or None."""
        return self._state.store.get(("MODE", subject))


# ------------------------------------------------------------------------------------------------
# files and inline schemas

class _TableRegistry(SchemaRegistry):
    """A registry over a plain table of entries (folders, inline schemas)."""

    def __init__(self, entries, source):
        # entries: dicts id, subject, version, schemaType, schema, references, deleted
        self.source = source
        self._by_id = {}
        self._by_sv = {}
        for e in entries:
            self._by_id.setdefault(e["id"], e)
            if e.get("subject") is not None:
                self._by_sv[(e["subject"], e["version"])] = e

    def _registered(self, e, subject=None, version=None):
        versions = tuple(sorted((s, v) for (s, v), x in self._by_sv.items() if x["id"] == e["id"]))
        return RegisteredSchema(id=e["id"], schema_type=e.get("schemaType") or "AVRO", schema_str=e["schema"],
                                references=_references(e.get("references")), subject=subject or e.get("subject"),
                                version=version if subject else e.get("version"), versions=versions,
                                deleted=bool(e.get("deleted")))

    def schema(self, schema_id, *, context=DEFAULT_CONTEXT):
        e = self._by_id.get(schema_id)
        if e is None:
            raise SchemaNotFoundError(f"schema id {schema_id} is not in the {self.source}")
        return self._registered(e)

    def version(self, subject, version):
        e = self._by_sv.get((subject, int(version)))
        if e is None:
            raise SchemaNotFoundError(f"subject {subject!r} has no version {version} in the {self.source}")
        return self._registered(e, subject, int(version))

    def versions(self, subject, include_deleted=False):
        return sorted(v for (s, v), e in self._by_sv.items()
                      if s == subject and (include_deleted or not e.get("deleted")))

    def subjects(self, include_deleted=False):
        return sorted({s for (s, v), e in self._by_sv.items() if include_deleted or not e.get("deleted")})


_FILE_NAME = re.compile(r"^(?:(?P<version>\d+)-)?(?P<id>\d+)(?P<ext>\.avsc|\.proto|\.json)$")


class FolderSchemaRegistry(_TableRegistry):
    """Schema files in a local folder, named ``[<subject>/][<version>-]<id>.avsc|.proto|.json``,
    plus an optional ``manifest.json`` (see the module docstring).

    Raises
    ------
    SchemaRegistryError
        The folder holds no schema file, two files claim one id with different texts, or the
        manifest is malformed.
    """

    def __init__(self, folder):
        folder = os.fspath(folder)
        entries, named = [], set()
        manifest = os.path.join(folder, "manifest.json")
        if os.path.isfile(manifest):
            entries += self._manifest(folder, manifest, named)
        found = []
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames.sort()
            for name in sorted(filenames):
                m = _FILE_NAME.match(name)
                path = os.path.join(dirpath, name)
                if m is None or os.path.abspath(path) in named:
                    continue
                rel = os.path.relpath(dirpath, folder)
                subject = None if rel == "." else rel.replace(os.sep, "/")
                found.append((subject, None if m.group("version") is None else int(m.group("version")),
                              int(m.group("id")), _EXTENSIONS[m.group("ext")], path))
        next_version = {}
        for subject, version, sid, stype, path in sorted(found, key=lambda f: (f[0] or "", f[1] or 0, f[2])):
            if subject is not None:
                if version is None:
                    version = next_version.get(subject, 0) + 1
                next_version[subject] = max(next_version.get(subject, 0), version)
            entries.append(dict(id=sid, subject=subject, version=version, schemaType=stype,
                                schema=self._read(path)))
        if not entries:
            raise SchemaRegistryError(f"no schema file ([<subject>/][<version>-]<id>.avsc|.proto|.json or "
                                      f"manifest.json) in {folder}")
        seen = {}
        for e in entries:
            other = seen.setdefault(e["id"], e)
            if other["schema"] != e["schema"]:
                raise SchemaRegistryError(f"schema id {e['id']} names two different schemas in {folder}")
        super().__init__(entries, f"schema folder {folder}")

    @staticmethod
    def _read(path):
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise SchemaRegistryError(f"cannot read schema file: {exc}", file=path) from exc

    def _manifest(self, folder, path, named):
        try:
            with open(path, encoding="utf-8") as f:
                raw = json.load(f)
        except (OSError, ValueError) as exc:
            raise SchemaRegistryError(f"cannot read the schema manifest: {exc}", file=path) from exc
        items = raw.get("schemas", raw) if isinstance(raw, dict) else raw
        if not isinstance(items, list):
            raise SchemaRegistryError("the schema manifest is a list of entries (or {\"schemas\": [...]})", file=path)
        out = []
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("id"), int) or \
                    ("schema" not in item and "file" not in item):
                raise SchemaRegistryError(f"manifest entry {i} needs an integer id and a schema or file", file=path)
            text = item.get("schema")
            if "file" in item:
                fp = os.path.abspath(os.path.join(folder, item["file"]))
                named.add(fp)
                text = self._read(fp)
            elif not isinstance(text, str):
                text = json.dumps(text)
            stype = item.get("schemaType") or (_EXTENSIONS.get(os.path.splitext(item.get("file", ""))[1], "AVRO"))
            out.append(dict(id=item["id"], subject=item.get("subject"), version=item.get("version", 1),
                            schemaType=stype, schema=text, references=item.get("references"),
                            deleted=bool(item.get("deleted"))))
        return out


class InlineSchemaRegistry(_TableRegistry):
    """Schemas given directly: ``{id: schema}`` (text or parsed JSON; or a `RegisteredSchema`),
    or one schema that every id resolves to (``schema_type`` applies to all of them)."""

    def __init__(self, schemas, schema_type="AVRO", source="schema given directly"):
        self._any = None
        entries = []
        if isinstance(schemas, dict) and schemas and all(isinstance(k, int) for k in schemas):
            for sid, s in schemas.items():
                if isinstance(s, RegisteredSchema):
                    entries.append(dict(id=sid, schemaType=s.schema_type, schema=s.schema_str,
                                        references=s.references, subject=s.subject, version=s.version))
                else:
                    entries.append(dict(id=sid, schemaType=schema_type, schema=_text(s)))
        else:
            self._any = dict(id=-1, schemaType=schema_type, schema=_text(schemas))
        super().__init__(entries, source)

    def schema(self, schema_id, *, context=DEFAULT_CONTEXT):
        if self._any is not None:
            return self._registered(dict(self._any, id=schema_id))
        return super().schema(schema_id)


def _text(schema):
    if isinstance(schema, str):
        return schema
    return json.dumps(schema)


# ------------------------------------------------------------------------------------------------
# a live registry

class ClientSchemaRegistry(SchemaRegistry):
    """A live Schema Registry through confluent-kafka's ``SchemaRegistryClient`` (imported when
    used; ``pip install 'kafkafmt[schema-registry]'``). Every answer is cached.

    Parameters
    ----------
    client : str or SchemaRegistryClient
        A URL (``http(s)://...``; ``mock://name`` for the client's in-memory mock) or a client.
    conf : dict, optional
        More client configuration (``basic.auth.user.info``, ``ssl.ca.location``...).
    """

    def __init__(self, client, conf=None):
        if isinstance(client, str):
            try:
                from confluent_kafka.schema_registry import SchemaRegistryClient
            except ImportError as exc:
                raise SchemaRegistryError("a live schema registry needs confluent-kafka: "
                                          "pip install 'kafkafmt[schema-registry]'") from exc
            settings = dict(conf or {}, url=client)
            new = getattr(SchemaRegistryClient, "new_client", None)
            self.source = f"schema registry at {client}"
            client = new(settings) if new is not None else SchemaRegistryClient(settings)
        else:
            self.source = f"schema registry {type(client).__name__}"
        self.client = client
        self._cache = {}
        self._lock = threading.Lock()

    def _cached(self, key, fn):
        with self._lock:
            if key in self._cache:
                hit = self._cache[key]
                if isinstance(hit, Exception):
                    raise hit
                return hit
        try:
            value = fn()
        except SchemaNotFoundError as exc:
            with self._lock:
                self._cache[key] = exc
            raise
        with self._lock:
            self._cache[key] = value
        return value

    def _call(self, what, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:    # noqa: BLE001 - the client raises its own SchemaRegistryError
            code = getattr(exc, "http_status_code", None)
            if code == 404:
                raise SchemaNotFoundError(f"{what} is not in the {self.source}") from exc
            raise SchemaRegistryError(f"{what}: the {self.source} failed: {exc}") from exc

    @staticmethod
    def _stype(s):
        return getattr(s, "schema_type", None) or "AVRO"

    def schema(self, schema_id, *, context=DEFAULT_CONTEXT):
        def get():
            s = self._call(f"schema id {schema_id}", self.client.get_schema, schema_id)
            return RegisteredSchema(id=schema_id, schema_type=self._stype(s), schema_str=s.schema_str,
                                    references=_references(s.references))
        return self._cached(("id", schema_id), get)

    def _from_registered(self, rs, subject, deleted=False):
        s = rs.schema
        return RegisteredSchema(id=rs.schema_id, schema_type=self._stype(s), schema_str=s.schema_str,
                                references=_references(s.references), subject=subject, version=rs.version,
                                versions=((subject, rs.version),), deleted=deleted)

    def version(self, subject, version):
        def get():
            rs = self._call(f"subject {subject!r} version {version}", self.client.get_version, subject,
                            int(version), deleted=True)
            live = self.versions(subject)
            return self._from_registered(rs, subject, deleted=bool(live) and int(version) not in live)
        return self._cached(("version", subject, int(version)), get)

    def versions(self, subject, include_deleted=False):
        def get():
            try:
                vs = self._call(f"subject {subject!r}", self.client.get_versions, subject, deleted=include_deleted)
            except SchemaNotFoundError:
                return []
            return sorted(int(v) for v in vs)
        return self._cached(("versions", subject, include_deleted), get)

    def subjects(self, include_deleted=False):
        return self._cached(("subjects", include_deleted),
                            lambda: sorted(self._call("subjects", self.client.get_subjects, deleted=include_deleted)))

    def latest(self, subject, include_deleted=False):
        if include_deleted:
            return super().latest(subject, include_deleted=True)

        def get():
            rs = self._call(f"subject {subject!r}", self.client.get_latest_version, subject)
            return self._from_registered(rs, subject)
        return self._cached(("latest", subject), get)


# ------------------------------------------------------------------------------------------------

def _is_schema_folder(path):
    """A manifest, or a schema file in the folder or one of its subfolders (not deeper: a log dir's
    partition folders are not walked)."""
    if os.path.isfile(os.path.join(path, "manifest.json")):
        return True
    try:
        entries = list(os.scandir(path))
    except OSError:
        return False
    for e in entries:
        if e.is_file() and _FILE_NAME.match(e.name):
            return True
    for e in entries:
        if e.is_dir():
            try:
                if any(_FILE_NAME.match(n) for n in os.listdir(e.path)):
                    return True
            except OSError:
                pass
    return False


def open_registry(source=None, *, roots=None, storage_options=None, filesystem=None) -> SchemaRegistry:
    """The schema source for ``source``.

    Parameters
    ----------
    source : None, str, os.PathLike, dict or SchemaRegistry
        * None: the ``_schemas`` partition among ``roots`` (the log dirs being read);
        * ``http://``, ``https://`` or ``mock://`` URL: a live registry (`ClientSchemaRegistry`);
        * a local folder holding schema files (`FolderSchemaRegistry`), or one ``.avsc`` file
          (every id resolves to it);
        * any other path or URL: log dirs (or the ``_schemas-0`` folder) whose ``_schemas``
          partition is replayed (`TopicSchemaRegistry`), read with ``storage_options``/``filesystem``;
        * a dict ``{id: schema}``: `InlineSchemaRegistry`;
        * a `SchemaRegistry`: returned as is.
    roots : str or list, optional
        The roots of the read, searched when ``source`` is None.
    storage_options : dict, optional
        For a ``_schemas`` partition in object storage, fsspec-style (as pandas takes them).
    filesystem : fsspec.AbstractFileSystem, optional
        The filesystem of a ``_schemas`` partition, instead of ``storage_options``.

    Returns
    -------
    SchemaRegistry

    Raises
    ------
    SchemaRegistryError
        Nothing to open: e.g. no ``_schemas`` partition under ``roots`` (the error names what was
        looked for and where).

    Examples
    --------
    Schemas given inline; the sample's own ``_schemas`` partition, found among the roots; and the
    error when the log dirs read hold none:

    >>> import json
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> schema = json.dumps({"type": "record", "name": "Payment", "fields": [{"name": "amount", "type": "int"}]})
    >>> registry = kafkafmt.open_registry({1: schema})
    >>> registry
    <InlineSchemaRegistry schema given directly>
    >>> registry.schema(1).schema_type
    'AVRO'
    >>> found = kafkafmt.open_registry(roots=[sample_dir()])
    >>> found.latest("shipments-value").version, found.latest("shipments-value").id
    (2, 2)
    >>> kafkafmt.open_registry(roots=[sample_dir() + "/orders-0"])
    Traceback (most recent call last):
    ...
    kafkafmt.errors.SchemaRegistryError: no schema registry given and no _schemas-0 partition ...
    """
    if isinstance(source, SchemaRegistry):
        return source
    if isinstance(source, dict):
        return InlineSchemaRegistry(source)
    if source is None:
        if roots is None or (not isinstance(roots, (str, os.PathLike)) and not list(roots)):
            raise SchemaRegistryError(f"no schema registry given and no log dirs to find the {SCHEMAS_TOPIC} "
                                      f"topic in: pass a schema registry (a log dir, a folder of schema files, "
                                      f"a registry URL)")
        return TopicSchemaRegistry.from_log_dirs(roots, storage_options=storage_options, filesystem=filesystem)
    if isinstance(source, (str, os.PathLike)):
        s = os.fspath(source)
        if s.startswith(_LIVE_SCHEMES):
            return ClientSchemaRegistry(s)
        if "://" not in s and filesystem is None:
            if os.path.isfile(s) and os.path.splitext(s)[1] in _EXTENSIONS:
                with open(s, encoding="utf-8") as f:
                    return InlineSchemaRegistry(f.read(), _EXTENSIONS[os.path.splitext(s)[1]],
                                                source=f"schema file {s}")
            if os.path.isdir(s) and _is_schema_folder(s):
                return FolderSchemaRegistry(s)
        return TopicSchemaRegistry.from_log_dirs(s, storage_options=storage_options, filesystem=filesystem)
    raise TypeError(f"a schema registry is None, a path, a URL, a dict or a SchemaRegistry, "
                    f"not {type(source).__name__}")


def _read_topic_partition(part):
    """Every record of the registry's partition, planned and read as every read is (below the readers
    of `kafkafmt.read._readers`, which decode values with this module's schemas)."""
    from kafkafmt.record import DecodeOptions, decode
    from kafkafmt.log import plan
    from kafkafmt.record import Records
    from kafkafmt.log import read_tasks

    report = []
    options = DecodeOptions.for_columns(["key", "value"], threads=1)
    parts = [recs for recs, _ in read_tasks(plan(part, report=report), report, options)]
    if not parts:
        return decode(b"", **options.decode_kwargs())
    return Records.concat(parts) if len(parts) > 1 else parts[0]
