"""A folder of schema files as a registry: ``<id>.avsc`` / ``<version>-<id>.proto`` / ``.json``, or a registry's
export (``schemas.json``): `FolderSchemaRegistry`.
"""
from __future__ import annotations

import json
import os
import re

from kafkafmt.errors import SchemaRegistryError
from kafkafmt.values.registry._base import SCHEMA_FILE_EXTENSIONS, TableRegistry

__all__ = ["FolderSchemaRegistry", "is_schema_folder"]

_FILE_NAME = re.compile(r"^(?:(?P<version>\d+)-)?(?P<id>\d+)(?P<ext>\.avsc|\.proto|\.json)$")


class FolderSchemaRegistry(TableRegistry):
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
                              int(m.group("id")), SCHEMA_FILE_EXTENSIONS[m.group("ext")], path))
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
            stype = item.get("schemaType") or (SCHEMA_FILE_EXTENSIONS.get(os.path.splitext(item.get("file", ""))[1], "AVRO"))
            out.append(dict(id=item["id"], subject=item.get("subject"), version=item.get("version", 1),
                            schemaType=stype, schema=text, references=item.get("references"),
                            deleted=bool(item.get("deleted"))))
        return out


def is_schema_folder(path):
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
