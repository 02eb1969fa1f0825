"""Every top-level package the project imports is declared in pyproject.toml for that use.

A package that is only installed on the developer's machine makes the tests pass there and fail on a
fresh one (issue 20: crc32c and python-snappy had left the test extra while the tests still used them).
The rules, by where the import is:

* ``kafkafmt/`` at module level: a runtime dependency (``kafkafmt/spark/`` may use the ``spark`` extra,
  which is what importing it means);
* ``kafkafmt/`` inside a function or a ``try``: a runtime dependency or an extra (an optional feature);
* ``tests/``: a runtime dependency or the ``test`` extra; a package of another extra only in a module
  that reaches it through ``pytest.importorskip`` (the Spark tests) or is one of the Spark test helpers;
* ``fuzz/``: runtime, ``test`` or ``fuzz``; ``asv_bench/``: runtime, ``test``, ``bench`` or ``spark``.

Declared dependencies come from the installed project's metadata (what pip read from pyproject.toml),
the package that provides an import name from the installed distributions' file lists.
"""
from __future__ import annotations

import ast
import importlib.metadata as md
import os
import pathlib
import re
import sys
import sysconfig

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
RUNTIME = ""       # the "extra" of a runtime dependency


def _normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def declared():
    """{extra or RUNTIME: {normalized distribution names}} from the installed kafkafmt's metadata."""
    try:
        requires = md.requires("kafkafmt") or []
    except md.PackageNotFoundError:
        pytest.fail("kafkafmt is not installed: run the README's second command (pip install -e \".[test]\")")
    out = {}
    for req in requires:
        name, own_extras = _name_and_extras(req)
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", req)
        names = out.setdefault(_normalize(extra.group(1)) if extra else RUNTIME, set())
        names.add(name)
        # pyspark[connect] declares what the connect extra of pyspark requires (grpcio ...)
        for sub in own_extras:
            try:
                names.update(_name_and_extras(r)[0] for r in md.requires(name) or ()
                             if re.search(rf"""extra\s*==\s*["']{re.escape(sub)}["']""", r))
            except md.PackageNotFoundError:
                pass
    return out


def _name_and_extras(req):
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", req)
    return _normalize(m.group(1)), [e.strip() for e in (m.group(2) or "").split(",") if e.strip()]


def providers():
    """{top-level import name: {normalized distribution names}} of every installed distribution."""
    out = {}
    for dist in md.distributions():
        name = dist.metadata["Name"]
        if not name:
            continue
        tops = set()
        text = dist.read_text("top_level.txt")
        if text:
            tops.update(t.strip() for t in text.split() if t.strip())
        for f in dist.files or ():
            parts = pathlib.PurePosixPath(str(f)).parts
            if not parts or parts[0].endswith((".dist-info", ".egg-info", ".data")) or parts[0] in ("..", "bin"):
                continue
            top = parts[0]
            if len(parts) == 1:
                if not top.endswith((".py", ".so", ".pyd")):
                    continue
                top = top.split(".")[0]
            tops.add(top)
        for t in tops:
            out.setdefault(t, set()).add(_normalize(name))
    return out


_STDLIB = set(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names)


def is_stdlib(top):
    if top in _STDLIB or top == "__future__":
        return True
    if getattr(sys, "stdlib_module_names", None):
        return False
    import importlib.util            # Python 3.9: judge by where the module lives

    spec = importlib.util.find_spec(top)
    if spec is None or spec.origin in (None, "built-in", "frozen"):
        return spec is not None
    std = os.path.realpath(sysconfig.get_paths()["stdlib"])
    return os.path.realpath(spec.origin).startswith(std + os.sep) and "site-packages" not in spec.origin


class Import:
    __slots__ = ("top", "file", "line", "guarded")

    def __init__(self, top, file, line, guarded):
        self.top, self.file, self.line, self.guarded = top, file, line, guarded

    def __repr__(self):
        return f"{self.file}:{self.line}: {self.top}"


def _imports_of_python(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []

    def visit(node, guarded):
        for child in ast.iter_child_nodes(node):
            g = guarded or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Try))
            if isinstance(child, ast.Import):
                found.extend(Import(a.name.split(".")[0], path, child.lineno, guarded) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.append(Import(child.module.split(".")[0], path, child.lineno, guarded))
            visit(child, g)

    visit(tree, False)
    text = path.read_text(encoding="utf-8")
    for m in re.finditer(r"""importorskip\(\s*["']([\w.]+)["']""", text):
        found.append(Import(m.group(1).split(".")[0], path, text.count("\n", 0, m.start()) + 1, "importorskip"))
    return found


def _imports_of_cython(path):
    found = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = re.match(r"\s*(?:from\s+([\w.]+)\s+(?:c?import)\s|c?import\s+([\w.]+))", line)
        if m:
            mod = m.group(1) or m.group(2)
            found.append(Import(mod.split(".")[0], path, n, line.startswith((" ", "\t"))))
    return found


def imports_under(folder, root=REPO):
    out = []
    for path in sorted((root / folder).rglob("*")):
        if path.suffix == ".py":
            out += _imports_of_python(path)
        elif path.suffix in (".pyx", ".pxd"):
            out += _imports_of_cython(path)
    return out


def local_names(folder, root=REPO):
    """Modules a folder provides to itself (test helpers, fuzz drivers, benchmark modules)."""
    return {p.stem for p in (root / folder).rglob("*.py")} | {p.name for p in (root / folder).iterdir() if p.is_dir()}


#: import names whose distribution has another name, for packages not installed here
UNINSTALLED_NAMES = {"grpc": "grpcio", "kafka": "kafka-python", "snappy": "python-snappy",
                     "asv_runner": "asv-runner", "confluent_kafka": "confluent-kafka", "google": "protobuf"}

#: Cython's own declarations (cimport libc / cpython / cython) are part of the build, not packages
_BUILD = {"libc", "cpython", "cython", "posix", "libcpp"}


def allowed_extras(imp, folder, root=REPO):
    """The extras (RUNTIME included) that may provide this import, by the rules of the module doc."""
    rel = imp.file.relative_to(root).as_posix()
    if folder == "kafkafmt":
        if imp.guarded or rel.startswith("kafkafmt/spark/"):
            return None if imp.guarded else {RUNTIME, "spark"}     # None: runtime or any extra
        return {RUNTIME}
    if folder == "tests":
        skipped = imp.top in _skipped_in(imp.file) or imp.file.name in SPARK_TEST_HELPERS
        return None if skipped else {RUNTIME, "test"}
    if folder == "fuzz":
        return {RUNTIME, "test", "fuzz"}
    return {RUNTIME, "test", "bench", "spark"}


#: helpers of the Spark tests, imported only by test modules that importorskip pyspark
SPARK_TEST_HELPERS = ("spark_cluster.py",)


def _skipped_in(path):
    """Packages a test module reaches through pytest.importorskip (it is skipped without them)."""
    return {i.top for i in _imports_of_python(path) if i.guarded == "importorskip"}


#: the folders whose modules import each other (tests use the fuzz drivers, fuzz the tests' kpy)
SOURCE_FOLDERS = ("tests", "fuzz", "asv_bench")


def problems(folder, decl, prov, root=REPO):
    own = {"kafkafmt"}.union(*(local_names(f, root) for f in SOURCE_FOLDERS if (root / f).is_dir()))
    out = []
    for imp in imports_under(folder, root):
        if imp.top in own or imp.top in _BUILD or is_stdlib(imp.top):
            continue
        # a package of an extra that is not installed here (the README installs [test] only) is known
        # by its distribution's name
        dists = prov.get(imp.top) or {_normalize(UNINSTALLED_NAMES.get(imp.top, imp.top))} & set().union(*decl.values())
        where = imp.file.relative_to(root).as_posix()
        if not dists:
            out.append(f"{where}:{imp.line}: imports {imp.top!r}, which no installed distribution provides "
                       "(declare the package in pyproject.toml and reinstall)")
            continue
        extras = allowed_extras(imp, folder, root)
        ok = {e for e, names in decl.items() if dists & names and (extras is None or e in extras)}
        if not ok:
            want = "a runtime dependency or any extra" if extras is None else \
                " or ".join("runtime" if e == RUNTIME else f"[{e}]" for e in sorted(extras))
            out.append(f"{where}:{imp.line}: imports {imp.top!r} ({', '.join(sorted(dists))}), "
                       f"not declared as {want} in pyproject.toml")
    return sorted(set(out))


@pytest.mark.parametrize("folder", ["kafkafmt", "tests", "fuzz", "asv_bench"])
def test_every_import_is_declared_for_its_use(folder):
    assert problems(folder, declared(), providers()) == []


def test_the_rule_catches_an_undeclared_import(tmp_path):
    """The check itself can fail: a test module importing a package that only the bench extra
    declares (aiokafka) is reported, one that no installed distribution provides too, and a module
    of kafkafmt importing an extra's package at module level; pyspark through importorskip is fine."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_probe.py").write_text(
        "import pytest\nimport numpy\nimport aiokafka\nimport no_such_package_kafkafmt\n"
        "pyspark = pytest.importorskip('pyspark')\n")
    (tmp_path / "kafkafmt").mkdir()
    (tmp_path / "kafkafmt" / "probe.py").write_text("import numpy\nimport s3fs\n\ndef f():\n    import s3fs\n")
    decl = {RUNTIME: {"numpy"}, "test": {"pytest"}, "bench": {"aiokafka"}, "spark": {"pyspark"}, "s3": {"s3fs"}}
    prov = {"numpy": {"numpy"}, "pytest": {"pytest"}, "aiokafka": {"aiokafka"}, "pyspark": {"pyspark"},
            "s3fs": {"s3fs"}}
    found = problems("tests", decl, prov, tmp_path)
    assert len(found) == 2, found
    assert "'aiokafka'" in found[0] and "[test]" in found[0]
    assert "no installed distribution" in found[1]
    found = problems("kafkafmt", decl, prov, tmp_path)
    assert len(found) == 1 and "probe.py:2" in found[0] and "runtime" in found[0], found
