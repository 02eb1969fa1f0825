"""The ``_schemas`` topic replayed as Confluent's Schema Registry replays it (KafkaStoreReaderThread): keys and
values as the registry writes them, deletes and tombstones, contexts, ids per context: `TopicSchemaRegistry`
(read from a log dir through the log layer) and `replay_schemas_topic` (from keys and values).
"""
from __future__ import annotations

import json
import os
import warnings

from kafkafmt.errors import SchemaNotFoundError, SchemaRegistryError
from kafkafmt.values.registry._base import (DEFAULT_CONTEXT, SCHEMAS_TOPIC, RegisteredSchema, SchemaRegistry,
                                            context_of, references_of)

__all__ = ["TopicSchemaRegistry", "replay_schemas_topic"]

class _Replay:
    """The registry's state while its topic is replayed (store + id maps, as InMemoryCache)."""

    def __init__(self):
        self.store = {}        # key tuple -> value dict
        self.ids = {}          # context -> id -> {subject: version}
        self.problems = []     # (offset, text) of records skipped

    # -- InMemoryCache
    def _id_map(self, subject, schema_id):
        return self.ids.setdefault(context_of(subject), {}).setdefault(schema_id, {})

    def registered(self, subject, version, value):          # schemaRegistered / schemaDeleted
        self._id_map(subject, value["id"])[subject] = version

    def tombstoned(self, subject, version, old):            # schemaTombstoned
        if old is None:
            return
        guids = self.ids.get(context_of(subject), {})
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

    def _object(self, raw, offset, what):
        """The JSON object ``raw`` holds, or None: the record is skipped (the problem noted, ``what``
        naming the part)."""
        try:
            doc = json.loads(bytes(raw))
        except ValueError as exc:
            self.problems.append((offset, f"{what} is not JSON ({exc}): skipped"))
            return None
        if not isinstance(doc, dict):
            self.problems.append((offset, f"{what} is not a JSON object: skipped"))
            return None
        return doc

    # -- KafkaStoreMessageHandler
    def apply(self, key_bytes, value_bytes, offset):
        if key_bytes is None:
            self.problems.append((offset, "null key skipped"))
            return
        key = self._object(key_bytes, offset, "key")
        if key is None:
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
            value = self._object(value_bytes, offset, f"{kt} value")
            if value is None:
                return
        if kt == "SCHEMA" and value is not None:
            if not isinstance(value.get("id"), int) or not isinstance(value.get("schema"), str):
                self.problems.append((offset, "SCHEMA value without an integer id or a schema text: skipped"))
                return
            value.setdefault("schemaType", "AVRO")
            value.setdefault("deleted", False)
            # validateUpdate: an id already naming another text is refused
            old_key = self.key_of_id(value["id"], context_of(subject))
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

        guids = self.ids.get(context_of(subject), {})
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
        from kafkafmt.errors import KafkafmtWarning
        from kafkafmt.log import find_partitions

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
                                references=references_of(value.get("references")), subject=key[1],
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


def _read_topic_partition(part):
    """Every record of the registry's partition, planned and read as every read is (below the readers
    of `kafkafmt.read._readers`, which decode values with this module's schemas)."""
    from kafkafmt.log import plan, read_tasks
    from kafkafmt.record import DecodeOptions, Records, decode

    report = []
    options = DecodeOptions.for_columns(["key", "value"], threads=1)
    parts = [recs for recs, _ in read_tasks(plan(part, report=report), report, options)]
    if not parts:
        return decode(b"", **options.decode_kwargs())
    return Records.concat(parts) if len(parts) > 1 else parts[0]
