"""The public names of kafkafmt and whether each is documented: a numpydoc docstring and an API-reference entry.

Used twice: as a Sphinx extension (``docs/conf.py``), where every problem is a warning and so, with ``-W``, a
failed build; and by ``tests/test_docs.py``, which lists the problems by name. The rules:

* the public names are ``kafkafmt.__all__`` and the ``__all__`` (else the public functions and classes) of
  each module in ``DOCUMENTED_MODULES``, plus the public methods and properties of every public class;
* every public function, class, method and property has a docstring of its own;
* a public function, and a class that is not an exception or an enum, has numpydoc's ``Parameters`` section
  when it takes parameters, and an ``Examples`` section;
* every public name (constants too) has an entry in the API reference (checked by Sphinx only).
"""
from __future__ import annotations

import enum
import importlib
import inspect
import re

#: the modules the API reference documents, besides the package itself
DOCUMENTED_MODULES = ("kafkafmt", "kafkafmt.internal", "kafkafmt.codecs", "kafkafmt.spark", "kafkafmt.sample")

# TEMPORARY, the one list of known-missing documentation: names in files other branches are editing at the same
# time, filled in there before they merge. Empty it: a name on it that has become documented fails the check
# ("stale"), and any name not on it fails as usual. An entry naming a module (not a public name) is a docstring
# example of that module known not to run yet: tests/test_docs.py expects its doctest to fail, and fails when
# it passes (take it off then).
PENDING = frozenset()

_SECTION = re.compile(r"^[ \t]*(Parameters|Returns|Yields|Raises|Warns|Examples|Attributes|Methods|See Also|Notes|"
                      r"Other Parameters|Receives|Warnings|References)[ \t]*\n[ \t]*-{3,}[ \t]*$", re.M)


def sections(doc):
    """The numpydoc section titles of a docstring."""
    return set(_SECTION.findall(doc or ""))


def _own_doc(obj):
    if isinstance(obj, property):
        return obj.fget.__doc__ if obj.fget is not None else None
    if inspect.isclass(obj):
        return obj.__dict__.get("__doc__")
    return getattr(obj, "__doc__", None)


def _inherited(cls, name):
    for base in cls.__mro__[1:]:
        member = base.__dict__.get(name)
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if member is not None and _own_doc(member):
            return member
    return None


def _takes_parameters(obj):
    target = obj.__init__ if inspect.isclass(obj) else obj
    if inspect.isclass(obj) and target is object.__init__:
        return False
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return False
    return any(p.name not in ("self", "cls") for p in sig.parameters.values())


def module_names(modname):
    """The public names of one documented module."""
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n, o in vars(mod).items() if not n.startswith("_")
                 and (inspect.isfunction(o) or inspect.isclass(o)) and o.__module__ == modname]
    return list(names)


def public_names():
    """``[(dotted name, object, kind)]`` with kind one of "function", "class", "exception", "member", "data"."""
    out = []
    for modname in DOCUMENTED_MODULES:
        mod = importlib.import_module(modname)
        for name in module_names(modname):
            obj = getattr(mod, name)
            full = f"{modname}.{name}"
            if inspect.isclass(obj):
                plain = issubclass(obj, (BaseException, enum.Enum))
                out.append((full, obj, "exception" if plain else "class"))
                if plain:
                    continue
                for mname, member in vars(obj).items():
                    if mname.startswith("_"):
                        continue
                    if isinstance(member, (staticmethod, classmethod)):
                        member = member.__func__
                    if inspect.isfunction(member) or isinstance(member, property):
                        if not _own_doc(member):        # an override documented by its base (as autodoc
                            member = _inherited(obj, mname) or member   # shows it: autodoc_inherit_docstrings)
                        out.append((f"{full}.{mname}", member, "member"))
            elif inspect.isfunction(obj) or inspect.isbuiltin(obj):
                out.append((full, obj, "function"))
            else:
                out.append((full, obj, "data"))
    return out


def problem(obj, kind):
    """What is missing from one name's docstring, or None."""
    if kind == "data":
        return None
    doc = _own_doc(obj)
    if not doc or not doc.strip():
        return "no docstring"
    if kind in ("function", "class"):
        have = sections(doc)
        missing = [s for s in ("Parameters",) if _takes_parameters(obj) and s not in have]
        missing += [s for s in ("Examples",) if s not in have]
        if missing:
            return "no " + " / ".join(missing) + " section"
    return None


def problems():
    """``({dotted name: problem}, stale)``: every undocumented public name not on PENDING, and the names on
    PENDING that are documented now (the list must shrink with them)."""
    found, names = {}, set()
    for name, obj, kind in public_names():
        names.add(name)
        p = problem(obj, kind)
        if p:
            found[name] = p
    bad = {n: p for n, p in found.items() if n not in PENDING}
    stale = sorted(n for n in PENDING - set(found) if n in names or n not in pending_doctests())
    return bad, stale


def pending_doctests():
    """The entries of PENDING that name a module: doctests (by name) known not to run yet."""
    out = set()
    for name in PENDING:
        try:
            if inspect.ismodule(importlib.import_module(name)):
                out.add(name)
        except ImportError:
            pass
    return out


def _check(app, env):
    from sphinx.util import logging

    log = logging.getLogger("kafkafmt.apicheck")
    bad, stale = problems()
    for name, p in sorted(bad.items()):
        log.warning("public name %s: %s (numpydoc: Parameters, Returns, Raises, Examples)", name, p)
    for name in stale:
        log.warning("%s is documented now: take it off docs/_ext/apicheck.py's PENDING", name)
    documented = set(env.get_domain("py").objects)
    for name, _, _ in public_names():
        if name not in documented:
            log.warning("public name %s has no entry in the API reference (docs/api/)", name)


def setup(app):
    app.connect("env-check-consistency", _check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
