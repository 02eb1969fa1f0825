"""The schema registry interface: `SchemaRegistry` (a schema by id, by subject and version, the latest version,
references resolved), `RegisteredSchema` and `SchemaReference` as the registry's REST API returns them, and
`TableRegistry`, a registry over a table of schemas (folders and inline schemas build on it).
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from kafkafmt.errors import SchemaNotFoundError, SchemaRegistryError

__all__ = ["DEFAULT_CONTEXT", "RegisteredSchema", "SCHEMAS_TOPIC", "SCHEMA_FILE_EXTENSIONS", "SCHEMA_TYPES",
           "SchemaReference", "SchemaRegistry", "TableRegistry", "context_of", "references_of"]

#: the registry's topic (``kafkastore.topic``)
SCHEMAS_TOPIC = "_schemas"
#: the context of subjects that name none
DEFAULT_CONTEXT = "."
#: the schema types a registry knows (absent = AVRO)
SCHEMA_TYPES = ("AVRO", "PROTOBUF", "JSON")
SCHEMA_FILE_EXTENSIONS = {".avsc": "AVRO", ".proto": "PROTOBUF", ".json": "JSON"}


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


def context_of(subject):
    """The context of a (possibly qualified ``:.ctx:name``) subject."""
    if subject and subject.startswith(":."):
        end = subject.find(":", 2)
        if end > 0:
            return subject[1:end]
    return DEFAULT_CONTEXT


def references_of(raw):
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


class TableRegistry(SchemaRegistry):
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
                                references=references_of(e.get("references")), subject=subject or e.get("subject"),
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
