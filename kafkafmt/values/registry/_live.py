"""A live Schema Registry (``http(s)://``, confluent-kafka's ``mock://``) through confluent-kafka's client, its
answers cached: `ClientSchemaRegistry`.
"""
from __future__ import annotations

import threading

from kafkafmt.errors import SchemaNotFoundError, SchemaRegistryError
from kafkafmt.values.registry._base import DEFAULT_CONTEXT, RegisteredSchema, SchemaRegistry, references_of
from kafkafmt._util.extras import install_command

__all__ = ["ClientSchemaRegistry", "LIVE_SCHEMES"]

LIVE_SCHEMES = ("http://", "https://", "mock://")


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
                                          f"{install_command('schema-registry')}") from exc
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
                                    references=references_of(s.references))
        return self._cached(("id", schema_id), get)

    def _from_registered(self, rs, subject, deleted=False):
        s = rs.schema
        return RegisteredSchema(id=rs.schema_id, schema_type=self._stype(s), schema_str=s.schema_str,
                                references=references_of(s.references), subject=subject, version=rs.version,
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
