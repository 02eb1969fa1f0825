"""Protobuf schemas as the Schema Registry stores them, compiled at run time into descriptors.

A registered PROTOBUF schema is ``.proto`` text in the registry's own printout (fully-qualified
``.pkg.Msg`` type names; a map field as ``repeated .pkg.Msg.XEntry f = n;`` plus a nested
``message XEntry { option map_entry = true; ... }``), or -- what confluent-kafka's serializer
registers and its mock registry hands back -- a base64 ``FileDescriptorProto``. Its references
name other subjects by the file name they are imported as; Google's well-known types
(``google/protobuf/*.proto``), ``google/type/*.proto`` and Confluent's ``confluent/meta.proto`` /
``confluent/type/decimal.proto`` are built in, as they are in the registry.

The text is parsed by proto-schema-parser (a pure-Python ``.proto`` parser; protoc, as bundled
with grpcio-tools, refuses the registry's ``option map_entry = true`` text: "map_entry should not
be set explicitly", needs files on disk and is a 10 MB binary dependency; measured on a 40-line
schema: proto-schema-parser 7 ms, protoc 3.4 ms -- once per schema id, either is negligible), its
syntax tree turned into a ``FileDescriptorProto`` here (type names resolved by protobuf's scoping
rules, ``map<K, V>`` into entry messages, proto3 ``optional`` into synthetic oneofs), and the
``protobuf`` package's ``DescriptorPool`` builds and checks the descriptors. One pool per compiled
schema: two versions of one file never meet.

    ps = compile_registered(registry, registry.schema(7))
    ps.message_at([0])            # the Descriptor of the message index array [0]
    ps.first_message()            # the first message of the file (the registry's "name" of the schema)
"""
from __future__ import annotations

import base64
import binascii
import re

from kafkafmt.errors import SchemaError, SchemaNotFoundError
from kafkafmt._util.extras import install_command
from kafkafmt.values._formats import references_by_name

__all__ = ["ProtoSchema", "compile_registered", "compile_text", "parse_proto", "well_known_files",
           "descriptor_of", "MAX_REFERENCE_DEPTH"]

#: import levels followed before references are taken for a cycle
MAX_REFERENCE_DEPTH = 64

_SCALARS = {
    "double": 1, "float": 2, "int64": 3, "uint64": 4, "int32": 5, "fixed64": 6, "fixed32": 7, "bool": 8,
    "string": 9, "bytes": 12, "uint32": 13, "sfixed32": 15, "sfixed64": 16, "sint32": 17, "sint64": 18,
}
TYPE_GROUP, TYPE_MESSAGE, TYPE_ENUM = 10, 11, 14
LABEL_OPTIONAL, LABEL_REQUIRED, LABEL_REPEATED = 1, 2, 3


def _pb():
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("Protobuf values need protobuf and proto-schema-parser: "
                          f"{install_command('protobuf')}") from exc
    return descriptor_pb2, descriptor_pool


_WELL_KNOWN = None


def well_known_files():
    """{file name: serialized FileDescriptorProto} of the files every schema may import without a
    reference: Google's well-known types, google/type/* (when googleapis-common-protos is
    installed) and Confluent's meta and decimal files (when confluent-kafka is)."""
    global _WELL_KNOWN
    if _WELL_KNOWN is None:
        import importlib
        found = {}
        modules = ["google.protobuf." + m for m in (
            "any_pb2", "api_pb2", "descriptor_pb2", "duration_pb2", "empty_pb2", "field_mask_pb2",
            "source_context_pb2", "struct_pb2", "timestamp_pb2", "type_pb2", "wrappers_pb2")]
        modules += ["google.type." + m for m in (
            "calendar_period_pb2", "color_pb2", "date_pb2", "datetime_pb2", "dayofweek_pb2", "decimal_pb2",
            "expr_pb2", "fraction_pb2", "interval_pb2", "latlng_pb2", "localized_text_pb2", "money_pb2",
            "month_pb2", "phone_number_pb2", "postal_address_pb2", "quaternion_pb2", "timeofday_pb2")]
        modules += ["confluent_kafka.schema_registry.confluent.meta_pb2",
                    "confluent_kafka.schema_registry.confluent.type.decimal_pb2"]
        for name in modules:
            try:
                mod = importlib.import_module(name)
            except Exception:  # noqa: BLE001 - an optional package missing or broken: that file is not built in
                continue
            fd = mod.DESCRIPTOR
            found[fd.name] = fd.serialized_pb
        _WELL_KNOWN = found
    return _WELL_KNOWN


# ------------------------------------------------------------------------------------------------
# .proto text -> FileDescriptorProto

def _camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def _opt_value(v):
    from proto_schema_parser import ast
    if isinstance(v, ast.Identifier):
        return v.name
    return v


def _options(opts):
    return {o.name.strip("()"): _opt_value(o.value) for o in opts or () if hasattr(o, "name")}


class _Converter:
    """One .proto syntax tree into a FileDescriptorProto (type names left for `_resolve`)."""

    def __init__(self, tree, name, dp):
        self.dp = dp
        self.tree = tree
        self.fdp = dp.FileDescriptorProto(name=name)
        self.edition = tree.edition
        self.proto3 = tree.syntax == "proto3"

    def convert(self):
        from proto_schema_parser import ast
        f = self.fdp
        if self.edition is not None:
            f.syntax = "editions"
            try:
                f.edition = self.dp.Edition.Value(f"EDITION_{self.edition}")
            except ValueError:
                raise SchemaError(f"unknown protobuf edition {self.edition!r}") from None
        elif self.tree.syntax:
            f.syntax = self.tree.syntax
        for el in self.tree.file_elements:
            if isinstance(el, ast.Package):
                f.package = el.name
            elif isinstance(el, ast.Import):
                if el.public:
                    f.public_dependency.append(len(f.dependency))
                if el.weak:
                    f.weak_dependency.append(len(f.dependency))
                f.dependency.append(el.name)
            elif isinstance(el, ast.Message):
                self._message(el, f.message_type.add())
            elif isinstance(el, ast.Enum):
                self._enum(el, f.enum_type.add())
        return f

    def _enum(self, el, ep):
        from proto_schema_parser import ast
        ep.name = el.name
        for v in el.elements:
            if isinstance(v, ast.EnumValue):
                ep.value.add(name=v.name, number=int(v.number))
            elif isinstance(v, ast.Option) and v.name == "allow_alias":
                ep.options.allow_alias = bool(_opt_value(v.value))
        if not ep.value:
            raise SchemaError(f"enum {el.name} has no value")

    def _field(self, el, mp, oneof_index=None):
        from proto_schema_parser import ast
        fp = mp.field.add(name=el.name, number=int(el.number))
        card = getattr(el, "cardinality", None)
        card = None if card is None else card.value
        if isinstance(el, ast.MapField):
            entry = mp.nested_type.add(name=_camel(el.name) + "Entry")
            entry.options.map_entry = True
            entry.field.add(name="key", number=1, label=LABEL_OPTIONAL, **self._type(el.key_type))
            entry.field.add(name="value", number=2, label=LABEL_OPTIONAL, **self._type(el.value_type))
            fp.label = LABEL_REPEATED
            fp.type_name = entry.name           # relative: resolved in the message's scope
            opts = _options(el.options)
        elif isinstance(el, ast.Group):
            nested = mp.nested_type.add()
            self._message(ast.Message(name=el.name, elements=el.elements), nested)
            fp.name = el.name.lower()
            fp.type = TYPE_GROUP
            fp.type_name = el.name
            fp.label = {"REPEATED": LABEL_REPEATED, "REQUIRED": LABEL_REQUIRED}.get(card, LABEL_OPTIONAL)
            opts = {}
        else:
            for k, v in self._type(el.type).items():
                setattr(fp, k, v)
            opts = _options(el.options)
            if card == "REPEATED":
                fp.label = LABEL_REPEATED
            elif card == "REQUIRED":
                fp.label = LABEL_REQUIRED
            else:
                fp.label = LABEL_OPTIONAL
                if card == "OPTIONAL" and self.proto3 and oneof_index is None:
                    fp.proto3_optional = True
        if oneof_index is not None:
            fp.oneof_index = oneof_index
        if "packed" in opts:
            fp.options.packed = bool(opts["packed"])
        if "default" in opts and card != "REPEATED":
            d = opts["default"]
            fp.default_value = ("true" if d else "false") if isinstance(d, bool) else str(d)
        if "deprecated" in opts:
            fp.options.deprecated = bool(opts["deprecated"])
        if self.edition is not None and "features.field_presence" in opts:
            fp.options.features.field_presence = self.dp.FeatureSet.FieldPresence.Value(
                str(opts["features.field_presence"]))
        return fp

    def _type(self, name):
        if name in _SCALARS:
            return {"type": _SCALARS[name]}
        return {"type_name": name}

    def _message(self, el, mp):
        from proto_schema_parser import ast
        mp.name = el.name
        synthetic = []
        for item in el.elements:
            if isinstance(item, (ast.Field, ast.MapField, ast.Group)):
                fp = self._field(item, mp)
                if fp.proto3_optional:
                    synthetic.append(fp)
            elif isinstance(item, ast.OneOf):
                idx = len(mp.oneof_decl)
                mp.oneof_decl.add(name=item.name)
                for m in item.elements:
                    if isinstance(m, (ast.Field, ast.MapField, ast.Group)):
                        self._field(m, mp, idx)
            elif isinstance(item, ast.Message):
                self._message(item, mp.nested_type.add())
            elif isinstance(item, ast.Enum):
                self._enum(item, mp.enum_type.add())
            elif isinstance(item, ast.Option) and item.name == "map_entry":
                mp.options.map_entry = bool(_opt_value(item.value))
        # proto3 optional: one synthetic oneof per field, after the real ones (as protoc orders them)
        for fp in synthetic:
            names = {o.name for o in mp.oneof_decl}
            oname = "_" + fp.name
            while oname in names:
                oname = "X" + oname
            fp.oneof_index = len(mp.oneof_decl)
            mp.oneof_decl.add(name=oname)


def _collect(fdp, prefix, out):
    """Fully-qualified names (with a leading dot) of the messages and enums in a file: {name: kind}."""
    def walk(msgs, enums, scope):
        for e in enums:
            out[f"{scope}.{e.name}"] = "enum"
        for m in msgs:
            name = f"{scope}.{m.name}"
            out[name] = "message"
            walk(m.nested_type, m.enum_type, name)
    walk(fdp.message_type, fdp.enum_type, prefix)


def _resolve(fdp, known):
    """Resolve every field's type name by protobuf's scoping rules (innermost scope first; the
    first component of a dotted name decides the scope), and set message / enum types."""
    package = "." + fdp.package if fdp.package else ""

    def lookup(name, scope):
        if name.startswith("."):
            return name if name in known else None
        first, _, rest = name.partition(".")
        s = scope
        while True:
            cand = f"{s}.{first}"
            if cand in known or any(k.startswith(cand + ".") for k in known):
                full = cand + ("." + rest if rest else "")
                if full in known:
                    return full
                # the first component names a scope that lacks the rest: C++ fails there; go on
            if not s:
                return None
            s = s.rpartition(".")[0]

    def walk(msgs, scope):
        for m in msgs:
            inner = f"{scope}.{m.name}"
            for f in m.field:
                if f.type_name:
                    full = lookup(f.type_name, inner)
                    if full is None:
                        raise SchemaError(f"{inner[1:]}.{f.name}: unknown type {f.type_name!r}")
                    f.type_name = full
                    if f.type != TYPE_GROUP:
                        f.type = TYPE_MESSAGE if known[full] == "message" else TYPE_ENUM
            walk(m.nested_type, inner)

    walk(fdp.message_type, package)


def parse_proto(text, name="schema.proto", dependencies=()):
    """A ``FileDescriptorProto`` of a schema: ``.proto`` text, or a base64 serialized
    ``FileDescriptorProto`` (what confluent-kafka registers).

    Parameters
    ----------
    text : str
    name : str
        The file's name (what other files import it as).
    dependencies : iterable of FileDescriptorProto
        The files it imports (for resolving type names in .proto text).

    Raises
    ------
    SchemaError
        Neither parses.
    """
    dp, _ = _pb()
    stripped = text.strip()
    if stripped and re.fullmatch(r"[A-Za-z0-9+/=\s]+", stripped) and not re.search(r"\b(message|syntax)\b", stripped):
        try:
            raw = base64.b64decode(stripped, validate=False)
            fdp = dp.FileDescriptorProto.FromString(raw)
        except (binascii.Error, ValueError, Exception) as exc:  # noqa: BLE001 - DecodeError and friends
            raise SchemaError(f"the schema is neither .proto text nor a base64 FileDescriptorProto: {exc}") from None
        fdp.name = name
        return fdp
    try:
        from proto_schema_parser.parser import Parser
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("Protobuf schemas in .proto text need proto-schema-parser: "
                          f"{install_command('protobuf')}") from exc
    try:
        tree = Parser().parse(text)
    except Exception as exc:  # noqa: BLE001 - the parser raises its own errors
        raise SchemaError(f"the .proto text does not parse: {str(exc).strip()[:300]}") from None
    fdp = _Converter(tree, name, dp).convert()
    known = {}
    for dep in dependencies:
        _collect(dep, "." + dep.package if dep.package else "", known)
    _collect(fdp, "." + fdp.package if fdp.package else "", known)
    _resolve(fdp, known)
    return fdp


# ------------------------------------------------------------------------------------------------
# compiled schemas

class ProtoSchema:
    """A compiled Protobuf schema: its own descriptor pool and file.

    Attributes
    ----------
    file : google.protobuf.descriptor.FileDescriptor
    pool : google.protobuf.descriptor_pool.DescriptorPool
    """

    def __init__(self, pool, file):
        self.pool, self.file = pool, file

    def first_message(self):
        """The first message of the file (the registry's name of a Protobuf schema)."""
        msgs = list(self.file.message_types_by_name.values())
        if not msgs:
            raise SchemaError(f"the Protobuf schema {self.file.name} defines no message")
        return self.message_at([0])

    def message_at(self, indexes):
        """The message of a message-index array (positions in the file, then nested).

        Raises
        ------
        SchemaError
            An index out of range.
        """
        dp, _ = _pb()
        proto = dp.FileDescriptorProto()
        self.file.CopyToProto(proto)
        msgs, name = proto.message_type, proto.package
        if not indexes:
            indexes = [0]
        for depth, i in enumerate(indexes):
            if not 0 <= i < len(msgs):
                where = "top-level" if depth == 0 else f"nested in {name}"
                raise SchemaError(f"message index {i} out of range: {len(msgs)} {where} message(s)")
            name = f"{name}.{msgs[i].name}" if name else msgs[i].name
            msgs = msgs[i].nested_type
        return self.pool.FindMessageTypeByName(name)

    def message_named(self, full_name):
        """The message called ``full_name`` (None when the file has none)."""
        try:
            d = self.pool.FindMessageTypeByName(full_name.lstrip("."))
        except KeyError:
            return None
        return d

    def record_messages(self):
        """The messages of the file a value may be: those no other message of the file uses as a
        field's type (map entries and a message's use of itself do not count), and that are not
        used only to nest others (no fields of their own) -- the top-level ones; when there are
        none, the nested ones (in declaration order); when every message is used (they use each
        other), the top-level messages.

        Returns
        -------
        list of google.protobuf.descriptor.Descriptor
        """
        top = list(self.file.message_types_by_name.values())
        nested, entries = [], []

        def walk(descs):
            for d in descs:
                (entries if d.GetOptions().map_entry else nested).append(d)
                walk(d.nested_types)

        for d in top:
            walk(d.nested_types)
        used = set()
        for m in top + nested + entries:
            for f in m.fields:
                t = f.message_type
                # (a map entry's value type counts as used by the map's owner)
                if t is not None and t.full_name != _owner(m).full_name:
                    used.add(t.full_name)

        def values(descs):
            return [d for d in descs if d.full_name not in used and (d.fields or not d.nested_types)]

        found = values(top) or values(nested) or [d for d in top if d.full_name not in used] or top
        if not found:
            raise SchemaError(f"the Protobuf schema {self.file.name} defines no message")
        return found


def _owner(m):
    """The message a (possibly map entry) message's fields belong to."""
    while m.GetOptions().map_entry and m.containing_type is not None:
        m = m.containing_type
    return m


def _add(pool, fdp, what):
    try:
        pool.Add(fdp)
    except Exception as exc:  # noqa: BLE001 - TypeError / descriptor errors of the pool
        raise SchemaError(f"{what} is not a valid Protobuf schema: {exc}") from None


def _new_pool():
    _, descriptor_pool = _pb()
    return descriptor_pool.DescriptorPool()


def _add_closure(pool, fdp, files, added, depth=0):
    """Add fdp's imports (from ``files``, then the built-in ones), then fdp."""
    dp, _ = _pb()
    if fdp.name in added:
        return
    if depth > MAX_REFERENCE_DEPTH:
        raise SchemaError("Protobuf imports nested too deeply (a cycle?)")
    added.add(fdp.name)
    for dep in fdp.dependency:
        if dep in files:
            _add_closure(pool, files[dep], files, added, depth + 1)
        elif dep in well_known_files():
            _add_closure(pool, dp.FileDescriptorProto.FromString(well_known_files()[dep]), files, added, depth + 1)
        else:
            raise SchemaNotFoundError(f"{fdp.name} imports {dep!r}, which is neither a reference of the schema "
                                      f"nor a built-in file")
    _add(pool, fdp, f"file {fdp.name}")


def compile_text(text, name="schema.proto", imports=None):
    """A `ProtoSchema` of one schema text and ``imports`` ({file name: text}) it needs."""
    dp, _ = _pb()
    files = {}
    wk = well_known_files()

    order = list((imports or {}).items())
    # dependencies before dependents: parse until every file is done (cycle: error)
    pending = dict(order)
    rounds = 0
    while pending:
        rounds += 1
        if rounds > MAX_REFERENCE_DEPTH + len(order):
            raise SchemaError("Protobuf references form a cycle")
        for fname, ftext in list(pending.items()):
            deps = _imports_of(ftext)
            if any(d in pending and d != fname for d in deps):
                continue
            files[fname] = parse_proto(ftext, fname, _transitive(deps, files, wk, dp))
            del pending[fname]
    main = parse_proto(text, name, _transitive(_imports_of(text), files, wk, dp))
    pool = _new_pool()
    _add_closure(pool, main, {k: v for k, v in files.items() if v is not None}, set())
    return ProtoSchema(pool, pool.FindFileByName(name))


def _imports_of(text):
    """The files a schema imports (base64 descriptors: their dependency list)."""
    found = re.findall(r'^\s*import\s+(?:public\s+|weak\s+)?"([^"]+)"\s*;', text, re.M)
    if found or re.search(r"\b(message|syntax|enum)\b", text):
        return found
    try:
        return list(parse_proto(text).dependency)
    except SchemaError:
        return []


def _transitive(names, files, wk, dp):
    """The FileDescriptorProtos of ``names`` and of what they import, publicly or not."""
    out, seen, stack = [], set(), list(names)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if files.get(n) is not None:
            f = files[n]
        elif n in wk:
            f = dp.FileDescriptorProto.FromString(wk[n])
        else:
            continue
        out.append(f)
        stack.extend(f.dependency)
    return out


def compile_registered(registry, rs):
    """A `ProtoSchema` of a registered schema with its references (each imported under the
    reference's name).

    Raises
    ------
    SchemaError
        The schema or a reference does not parse or build.
    SchemaNotFoundError
        A reference (or an import that is neither a reference nor built in) is missing.
    """
    imports = references_by_name(registry, rs, "Protobuf schema", MAX_REFERENCE_DEPTH)
    name = f"schema-{rs.id}.proto" if rs.id is not None and rs.id >= 0 else "schema.proto"
    while name in imports:
        name = "_" + name
    return compile_text(rs.schema_str, name, imports)


def descriptor_of(obj):
    """The message Descriptor of a generated message class, a message, or a Descriptor (None if
    ``obj`` is none of them)."""
    d = getattr(obj, "DESCRIPTOR", obj)
    if hasattr(d, "fields_by_number") and hasattr(d, "full_name"):
        return d
    return None
