"""What docs/architecture.md claims about the layout, checked against the code."""
from __future__ import annotations

import ast
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent


def modules():
    """{dotted name: path} of kafkafmt's Python modules."""
    out = {}
    for p in (REPO / "kafkafmt").rglob("*.py"):
        rel = p.relative_to(REPO).with_suffix("")
        out[".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)] = p
    return out


def import_graph():
    """{module: {kafkafmt modules it imports}}, module-level and function-level imports alike (a lazy
    import still ties two modules together); the package itself (``import kafkafmt``) is left out."""
    mods = modules()

    def owner(name):
        while name and name not in mods:
            name = name.rsplit(".", 1)[0] if "." in name else ""
        return name

    graph = {m: set() for m in mods}
    for m, p in mods.items():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for t in targets:
                r = owner(t) if t.startswith("kafkafmt") else ""
                if r and r not in (m, "kafkafmt") and not m.startswith(r + "."):
                    graph[m].add(r)
    return graph


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _calls(path, names):
    """(line, call) of the calls in a module to one of ``names``: a builtin (``open``), a module's
    function (``os.listdir``), or any object's method (``.list``, written with the leading dot)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                full = f.id
            elif isinstance(f, ast.Attribute):
                owner = f.value.id if isinstance(f.value, ast.Name) else None
                full = f"{owner}.{f.attr}" if owner else f".{f.attr}"
                if "." + f.attr in names:
                    out.append((node.lineno, full))
                    continue
            else:
                continue
            if full in names:
                out.append((node.lineno, full))
    return out


def test_only_discovery_walks_folders():
    """The command line and Spark find data through kafkafmt.log._discovery only: no module of theirs lists a
    folder (os.listdir/scandir/walk, a Storage's list) -- the one read path of docs/architecture.md."""
    doors = sorted((REPO / "kafkafmt" / "cli").glob("*.py")) + sorted((REPO / "kafkafmt" / "spark").glob("*.py"))
    found = {str(p.relative_to(REPO)): _calls(p, {"os.listdir", "os.scandir", "os.walk", ".list", "glob.glob"})
             for p in doors + [REPO / "kafkafmt" / "read" / "_readers.py", REPO / "kafkafmt" / "log" / "_planner.py"]}
    assert {k: v for k, v in found.items() if v} == {}


def test_every_read_goes_through_the_storage_interface():
    """No module of the read path opens a data file itself: bytes come from a Storage's blob (mmap for
    local files, ranged reads for object stores)."""
    read_path = ["record/_decoder", "record/_entries", "log/_framing", "log/_ranges", "log/_segments", "log/_discovery",
                 "log/_planner", "read/_readers", "log/_transactions", "log/tiered/_base", "log/tiered/_kafka",
                 "log/tiered/_aiven", "spark/stream", "spark/read", "spark/planning", "cli/reading", "cli/common"]
    found = {m: _calls(REPO / "kafkafmt" / f"{m}.py", {"open", "io.open", "os.open", "mmap.mmap"})
             for m in read_path}
    assert {k: v for k, v in found.items() if v} == {}


# The packages by concern, bottom to top (docs/architecture.md draws the same): a package imports only packages
# of lower layers -- lazy imports included -- so e.g. `values` never imports `read`, `log` never `cli` or `spark`.
LAYERS = [
    {"errors", "_version", "_native", "_util"},
    {"codecs", "storage", "internal"},
    {"record"},
    {"log"},
    {"values"},
    {"read"},
    {"polars", "sample", "recovery", "lakehouse", "spark", "report"},
    {"cli"},
    {"__main__"},
]


def package_of(module):
    """kafkafmt.log._discovery -> "log"; kafkafmt.errors -> "errors"; kafkafmt -> "kafkafmt"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "kafkafmt"


def test_every_package_has_a_layer():
    packages = {package_of(m) for m in modules()} - {"kafkafmt"}
    assert packages == set().union(*LAYERS)


def test_packages_import_only_lower_layers():
    level = {p: i for i, layer in enumerate(LAYERS) for p in layer}
    wrong = sorted((m, d) for m, deps in import_graph().items() for d in deps
                   if package_of(m) != "kafkafmt" and package_of(m) != package_of(d)
                   and level[package_of(d)] >= level[package_of(m)])
    assert wrong == []


def test_the_layering_check_finds_an_upward_import():
    level = {p: i for i, layer in enumerate(LAYERS) for p in layer}
    assert level["read"] > level["values"] > level["log"] > level["record"]
    assert level["cli"] > level["spark"] > level["log"]


def test_no_module_imports_the_top_package():
    """`kafkafmt/__init__.py` re-exports the public API; nothing inside imports from it (the version lives in
    kafkafmt._version), so no import runs back up."""
    found = []
    for m, p in modules().items():
        if m in ("kafkafmt", "kafkafmt.__main__"):
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "kafkafmt" and node.level == 0:
                names = [a.name for a in node.names if f"kafkafmt.{a.name}" not in modules()]
                if names:
                    found.append((m, names))
    assert found == []


def _fresh(code):
    """What ``code`` prints (the last line, as JSON) in a new interpreter."""
    import json
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


_LOADED = "json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'kafkafmt'))"


def test_the_top_package_imports_a_name_when_it_is_first_used():
    """``import kafkafmt`` loads none of its packages; a public name loads the package that defines it (the
    reader, not the writer, the export or the recovery), and is the very object that package gives; every name
    of ``__all__`` is there, ``from kafkafmt import *`` included, and so is every package they come from as an
    attribute."""
    assert _fresh(f"import json, sys, kafkafmt; print({_LOADED})") == ["kafkafmt", "kafkafmt._version"]
    loaded = _fresh(f"import json, sys, kafkafmt; kafkafmt.read_log_dirs; print({_LOADED})")
    assert "kafkafmt.read" in loaded
    assert not any(m.startswith(("kafkafmt.lakehouse", "kafkafmt.recovery")) for m in loaded)
    import importlib

    import kafkafmt

    for name in kafkafmt.__all__:
        obj = getattr(kafkafmt, name)
        home = getattr(obj, "__module__", None)
        if home is not None and home.startswith("kafkafmt."):
            assert getattr(importlib.import_module(home), getattr(obj, "__name__", name)) is obj, name
    assert set(kafkafmt.__all__) <= set(dir(kafkafmt))
    assert _fresh("import json\nfrom kafkafmt import *\nprint(json.dumps(read_log_dirs.__module__))") == \
        "kafkafmt.read._readers"
    # each package the names come from, as an attribute; a package they do not come from only once imported, as any
    # package's: asking for it is no import (of pyspark, say)
    packages = ["log", "record", "read", "values", "storage", "recovery", "lakehouse", "internal"]
    assert _fresh(f"import json, kafkafmt; print(json.dumps([kafkafmt.__dict__.get(p) is None for p in {packages}] + "
                  f"[getattr(kafkafmt, p).__name__ for p in {packages}] + [hasattr(kafkafmt, 'spark')]))") == \
        [True] * len(packages) + [f"kafkafmt.{p}" for p in packages] + [False]
    with pytest.raises(AttributeError, match="no attribute 'read_log_dir_'"):
        kafkafmt.read_log_dir_


def test_type_checkers_see_the_names_the_top_package_gives():
    """The ``if TYPE_CHECKING:`` imports of ``kafkafmt/__init__.py`` (what type checkers and editors read) name
    each public name from the module the lazy import takes it from, and ``__all__`` is those names."""
    import kafkafmt

    tree = ast.parse((REPO / "kafkafmt" / "__init__.py").read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING")
    seen = {a.asname or a.name: (node.module, a.name) for node in block.body for a in node.names}
    assert seen == kafkafmt._FROM
    assert sorted(kafkafmt.__all__) == sorted(seen)


def test_a_command_imports_what_it_uses():
    """``kafkafmt stats`` (its own process) loads neither the lakehouse export nor the recovery."""
    loaded = _fresh("import json, sys, contextlib, io\nimport kafkafmt.__main__ as entry\n"
                    "with contextlib.redirect_stdout(io.StringIO()):\n    entry.main(['stats', '--sample', '--json'])\n"
                    f"print({_LOADED})")
    assert "kafkafmt.report.figures" in loaded
    assert not any(m.startswith(("kafkafmt.lakehouse", "kafkafmt.recovery")) for m in loaded)


def test_at_most_twenty_top_level_entries():
    entries = [p.name for p in (REPO / "kafkafmt").iterdir()
               if p.name != "__pycache__" and not p.name.endswith((".so", ".c"))]
    assert len(entries) <= 20, sorted(entries)


#: what a merge, a patch or an editor leaves behind: never part of the package
LEFTOVER_PATTERNS = ("*.orig", "*.rej", "*~", ".*.swp", ".*.swo", "#*#", ".#*")


def leftovers(names):
    """The names (paths) among ``names`` whose file name is a merge, patch or editor leftover."""
    import fnmatch

    return sorted(n for n in names if any(fnmatch.fnmatch(pathlib.PurePath(n).name, pat) for pat in LEFTOVER_PATTERNS))



def test_segment_file_suffixes_are_spelt_in_one_place():
    """A segment's file suffixes (its log's, side files', producer snapshot's, the broker's leftover suffixes) are
    spelt in `kafkafmt.log._names` only; every other module takes them from there (a string of code, not a
    docstring or a message). The side files' reader compares the suffix it is given with two of them: the naming
    module reads file names with its offset rule, so it cannot import that module."""
    from kafkafmt.log import _names

    suffixes = {_names.LOG_SUFFIX, _names.SNAPSHOT_SUFFIX, *_names.SIDE_FILE_SUFFIXES, *_names.LEFTOVER_SUFFIXES}
    allowed = {"kafkafmt/log/_names.py": suffixes, "kafkafmt/log/sidefiles/_indexes.py": {".index", ".timeindex"}}
    assert _spelt_outside(suffixes, allowed) == {}
    assert _names.LEFTOVER_SUFFIXES == (".deleted", ".cleaned", ".swap")     # (Kafka's own: LogFileUtils, LocalLog)
    assert _names.SIDE_FILE_SUFFIXES == (".index", ".timeindex", ".txnindex")


def test_a_segment_names_offset_width_is_spelt_in_one_place():
    """The 20 digits of a segment's base offset in its name (local files, the tiered layouts' uploads, ``stats``'
    rows) come from `kafkafmt.log._names` (``SEGMENT_DIGITS``, ``segment_file_name``): no other module formats or
    matches them itself. A KRaft snapshot's name has its own widths (Kafka's ``Snapshots``: a 20-digit offset, a
    10-digit epoch) and is not a segment's."""
    import re

    spelt = re.compile(r"0?20d\}|\\d\{\{?20\}")
    allowed = {"kafkafmt/log/_names.py", "kafkafmt/cli/dump_records.py"}
    found = {}
    for rel, node in _package_nodes():
        if isinstance(node, ast.JoinedStr):
            specs = [v.format_spec for v in node.values if isinstance(v, ast.FormattedValue) and v.format_spec]
            if any(isinstance(c, ast.Constant) and c.value == "020d" for sp in specs for c in sp.values):
                found.setdefault(rel, []).append(node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and spelt.search(node.value) \
                and rel not in allowed:
            found.setdefault(rel, []).append(node.lineno)
    assert found == {}


def test_a_partition_folders_file_names_are_spelt_in_one_place():
    """``partition.metadata`` and ``leader-epoch-checkpoint`` are named by `kafkafmt.log._names`
    (``PARTITION_METADATA``, ``LEADER_EPOCH_CHECKPOINT``): no other module spells either name as a value."""
    names = {"partition.metadata", "leader-epoch-checkpoint"}
    assert _spelt_outside(names, {"kafkafmt/log/_names.py": names}) == {}


def _package_nodes():
    """(module path from the repository's root, AST node) of every node of kafkafmt's modules."""
    for p in sorted((REPO / "kafkafmt").rglob("*.py")):
        rel = p.relative_to(REPO).as_posix()
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            yield rel, node


def _spelt_outside(values, allowed):
    """{module: [(line, value)]} of the constants among ``values`` spelt in a module that ``allowed`` ({module:
    the values it may spell}) does not let spell them (a string of code: a docstring or a message is longer)."""
    found = {}
    for rel, node in _package_nodes():
        if isinstance(node, ast.Constant) and node.value in values and node.value not in allowed.get(rel, ()):
            found.setdefault(rel, []).append((node.lineno, node.value))
    return found


def test_no_merge_or_editor_leftovers():
    """No ``*.orig`` / ``*.rej`` / editor file in the package on disk, nor among the files git tracks (anywhere in the
    checkout, when it is one)."""
    import shutil
    import subprocess

    on_disk = [str(p.relative_to(REPO)) for p in (REPO / "kafkafmt").rglob("*") if p.is_file()]
    tracked = []
    if shutil.which("git") and (REPO / ".git").exists():
        out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=False)
        tracked = [n for n in out.stdout.decode("utf-8", "replace").split("\0") if n] if out.returncode == 0 else []
    assert leftovers(on_disk + tracked) == []


def test_the_leftover_check_finds_leftovers():
    names = ["kafkafmt/log/sidefiles/_indexes.py.orig", "kafkafmt/a.py.rej", "kafkafmt/b.py~", "kafkafmt/.c.py.swp",
             "kafkafmt/#d.py#", "kafkafmt/e.py", "docs/f.md", "kafkafmt/.gitignore"]
    assert leftovers(names) == sorted(names[:5])


def test_packages_use_each_others_public_faces():
    """A module outside a package imports that package's public face, never its private modules (`_name`);
    inside a package, sibling modules import each other's modules but only their public names: a name with a
    leading underscore is private to its module."""

    def private_part(importer, dotted):
        parts = dotted.split(".")
        for i, part in enumerate(parts[1:], 1):
            if part.startswith("_") and not part.startswith("__") and part not in ("_native", "_util", "_version"):
                owner = ".".join(parts[:i])             # the package holding the private module or name
                if importer != owner and not importer.startswith(owner + "."):
                    return dotted
        return None

    wrong = []
    for m, p in modules().items():
        package = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names
                                         if not node.module.startswith(package + ".")]
                wrong += [(m, f"{node.module}.{a.name}") for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")
                          and f"{node.module}.{a.name}" not in modules()]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            wrong += [(m, d) for d in names if private_part(m, d)]
    assert wrong == []
