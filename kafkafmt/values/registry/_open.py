"""``open_registry(source)``: a schema source from what the user gave -- a registry object, a URL, a folder, a
file, an inline schema, or by default the ``_schemas`` topic among the log dirs being read.
"""
from __future__ import annotations

import os

from kafkafmt.errors import SchemaRegistryError
from kafkafmt.values.registry._base import SCHEMA_FILE_EXTENSIONS, SCHEMAS_TOPIC, SchemaRegistry
from kafkafmt.values.registry._folders import FolderSchemaRegistry, is_schema_folder
from kafkafmt.values.registry._inline import InlineSchemaRegistry
from kafkafmt.values.registry._live import LIVE_SCHEMES, ClientSchemaRegistry
from kafkafmt.values.registry._topic import TopicSchemaRegistry

__all__ = ["open_registry"]

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
        if s.startswith(LIVE_SCHEMES):
            return ClientSchemaRegistry(s)
        if "://" not in s and filesystem is None:
            if os.path.isfile(s) and os.path.splitext(s)[1] in SCHEMA_FILE_EXTENSIONS:
                with open(s, encoding="utf-8") as f:
                    return InlineSchemaRegistry(f.read(), SCHEMA_FILE_EXTENSIONS[os.path.splitext(s)[1]],
                                                source=f"schema file {s}")
            if os.path.isdir(s) and is_schema_folder(s):
                return FolderSchemaRegistry(s)
        return TopicSchemaRegistry.from_log_dirs(s, storage_options=storage_options, filesystem=filesystem)
    raise TypeError(f"a schema registry is None, a path, a URL, a dict or a SchemaRegistry, "
                    f"not {type(source).__name__}")
