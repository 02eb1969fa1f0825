"""The documentation's examples are tests: every code block of the guide pages and every docstring example runs.

Conventions of ``docs/**/*.md`` (written down for authors in docs/contributing-docs.md):

* each page runs in a fresh temporary folder holding ``kafka-logs``, a copy of the bundled sample log dir
  (``kafkafmt.sample``), with ``KAFKAFMT_SAMPLE_DIR`` pointing at a session-wide sample; a page whose Python
  blocks use ``spark`` finds it defined (the local[2] session of ``tests/conftest.py``, ``kafka-segments``
  registered); environment variables a page sets are undone after it;
* `````python`` blocks run in order in one namespace per page; what they print is checked against a
  `````text`` block that follows right after (its lines appear in the output in that order; ``...`` stands
  for any text; runs of whitespace count as one space);
* `````console`` blocks hold ``$ kafkafmt ...`` command lines (pipes allowed), each run by bash with this
  Python's ``kafkafmt`` first on PATH; it must exit 0 and print the lines shown under it (same matching);
* `````text`` blocks are output, not code; any other block needs ``<!-- not-run: reason -->`` on the line
  before it, and such blocks are counted: at most ``MAX_NOT_RUN`` on the whole site.

Docstring examples (``>>>``) of every kafkafmt module run as doctests (ELLIPSIS, NORMALIZE_WHITESPACE) in the
same kind of folder, and every public function and class has one. ``docs/_ext/apicheck.py`` checks that every
public name has a numpydoc docstring; its ``PENDING`` is the one list of what is known to be missing.
"""
from __future__ import annotations

import contextlib
import doctest
import importlib
import importlib.util
import io
import os
import pathlib
import pkgutil
import re
import shlex
import shutil
import subprocess
import sys

import pytest

import kcli
from mdblocks import blocks_of

REPO = pathlib.Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
#: design notes, not the guide: their blocks show signatures and layouts, not runnable examples
NOT_GUIDE = {"architecture.md"}
#: blocks that cannot run here (several machines, a cluster, package installs), each marked and counted
MAX_NOT_RUN = 4
RUNNABLE = {"python", "console"}
OUTPUT = {"text"}

def guide_pages():
    return sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts and p.name not in NOT_GUIDE)


def _squeeze(text):
    return " ".join(text.split())


def _pattern(line):
    return re.compile("^" + ".*".join(re.escape(_squeeze(part)) for part in line.strip().split("...")) + "$")


def expect_lines(expected, actual, where):
    """Every line of ``expected`` (``...`` matches any text; a line of only ``...`` anything) appears in
    ``actual``, in order; runs of whitespace count as one space (pandas pads columns to the widest value)."""
    got = [_squeeze(a) for a in actual.splitlines()]
    pos = 0
    for line in expected.splitlines():
        if not line.strip() or line.strip() == "...":
            continue
        pat = _pattern(line)
        while pos < len(got) and not pat.match(got[pos]):
            pos += 1
        assert pos < len(got), f"{where}: expected output line not found (in order): {line.strip()!r}\n" \
                               f"--- output ---\n{actual}"
        pos += 1


def console_commands(text):
    """``[(command, expected output)]`` of a console block."""
    cmds, cur = [], None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            cmd = line[2:]
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1] + " " + lines[i].strip()
            cur = [cmd, []]
            cmds.append(cur)
        else:
            assert cur is not None, f"output before the first '$ ' line: {line!r}"
            cur[1].append(line)
        i += 1
    return [(c, "\n".join(o)) for c, o in cmds]


@pytest.fixture(scope="module")
def sample_root(sample):
    return sample


@pytest.fixture
def workdir(tmp_path, sample_root, monkeypatch):
    """A folder holding ``kafka-logs`` (a copy of the sample: examples may repair or write into it)."""
    shutil.copytree(sample_root, tmp_path / "kafka-logs", ignore=shutil.ignore_patterns(".complete"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KAFKAFMT_SAMPLE_DIR", str(sample_root))
    monkeypatch.setenv("KAFKAFMT_PROGRESS", "0")
    return tmp_path


_SHELL_OPERATORS = "|;&<>()"


def plain_command(cmd):
    """The words of a console line that is one command without a pipe, redirection, list or expansion (it
    runs the same in the test's process), else None (it needs a shell)."""
    lex = shlex.shlex(cmd, posix=True, punctuation_chars=_SHELL_OPERATORS)
    lex.whitespace_split = True
    words = list(lex)
    if any(set(w) <= set(_SHELL_OPERATORS) or any(c in w for c in "$`*?~") for w in words):
        return None
    return words


def run_console(block, cwd):
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONWARNINGS"] = "ignore"
    for cmd, expected in console_commands(block.text):
        assert cmd.startswith("kafkafmt "), f"{block}: a console block runs kafkafmt commands, not {cmd!r}"
        words = plain_command(cmd)
        if words is not None:
            r = kcli.run(*words[1:], cwd=cwd)
        else:
            # ``kafkafmt`` is the console script of this interpreter's installation
            script = f"kafkafmt() {{ {sys.executable!r} -m kafkafmt \"$@\"; }}\nset -o pipefail\n{cmd}\n"
            r = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                               timeout=300)
        assert r.returncode == 0, f"{block}: `{cmd}` exited {r.returncode}\n{r.stdout}\n{r.stderr}"
        expect_lines(expected, r.stdout, f"{block}: `{cmd}`")


def uses_spark(page):
    """Whether a Python block of the page that runs uses the name ``spark``."""
    return any(re.search(r"\bspark\b", b.text) for b in blocks_of(page) if b.lang == "python" and not b.not_run)


def run_page(page, cwd, namespace=None):
    blocks = blocks_of(page)
    namespace = {"__name__": "__docs__", **(namespace or {})}
    for n, block in enumerate(blocks):
        if block.not_run or block.lang in OUTPUT:
            continue
        if block.lang == "console":
            run_console(block, cwd)
            continue
        assert block.lang == "python", f"{block}: a {block.lang or 'plain'} block needs <!-- not-run: reason -->"
        code = compile("\n" * (block.line) + block.text, str(page), "exec")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code, namespace)
        following = blocks[n + 1] if n + 1 < len(blocks) else None
        if following is not None and following.lang in OUTPUT and not following.not_run:
            expect_lines(following.text, out.getvalue(), f"{block} -> {following}")


def _page_id(p):
    return p.relative_to(DOCS).as_posix()


@pytest.fixture(params=guide_pages(), ids=_page_id)
def guide_page(request):
    """(page, namespace): the session's Spark is started here, in the fixture's setup, for a page whose
    blocks use ``spark`` -- what the first such page would otherwise count as its own time."""
    page = request.param
    return page, ({"spark": request.getfixturevalue("spark")} if uses_spark(page) else {})


def test_guide_page_examples_run(guide_page, workdir):
    page, namespace = guide_page
    environ = dict(os.environ)
    try:
        run_page(page, workdir, namespace)
    finally:
        os.environ.clear()
        os.environ.update(environ)


def test_not_run_blocks_are_marked_and_few():
    blocks = [b for p in guide_pages() for b in blocks_of(p)]
    unmarked = [b for b in blocks if b.lang not in RUNNABLE | OUTPUT and not b.not_run]
    assert unmarked == [], "blocks that neither run nor say why (<!-- not-run: reason -->)"
    not_run = [b for b in blocks if b.not_run]
    assert len(not_run) <= MAX_NOT_RUN, f"{len(not_run)} blocks not run (at most {MAX_NOT_RUN}): {not_run}"
    runs = [b for b in blocks if b.lang in RUNNABLE and not b.not_run]
    assert len(runs) >= 2 * len(not_run), (len(runs), len(not_run))


def test_block_parsing_and_matching_can_fail(tmp_path):
    """The machinery itself: a page with a failing example fails, wrong output fails, markers are read."""
    page = tmp_path / "p.md"
    page.write_text("x\n\n```python\nprint('a'); print('b')\n```\n```text\nb\na\n```\n\n"
                    "<!-- not-run: needs a cluster -->\n```bash\nrm -rf /\n```\n")
    b = blocks_of(page)
    assert [x.lang for x in b] == ["python", "text", "bash"] and b[2].not_run == "needs a cluster"
    with pytest.raises(AssertionError, match="not found"):
        run_page(page, tmp_path)
    page.write_text("```python\nprint('a 1 z'); print('b')\n```\n```text\na ... z\nb\n```\n")
    run_page(page, tmp_path)
    page.write_text("```python\nraise KeyError('x')\n```\n")
    with pytest.raises(KeyError):
        run_page(page, tmp_path)
    assert console_commands("$ kafkafmt a \\\n  b\nout\n$ kafkafmt c\n") == [("kafkafmt a  b", "out"),
                                                                              ("kafkafmt c", "")]


# -- docstring examples ------------------------------------------------------------------------------------

def kafkafmt_modules():
    import kafkafmt

    names = ["kafkafmt"]
    for info in pkgutil.walk_packages(kafkafmt.__path__, "kafkafmt."):
        names.append(info.name)
    return sorted(names)


def _apicheck():
    spec = importlib.util.spec_from_file_location("kafkafmt_docs_apicheck", DOCS / "_ext" / "apicheck.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _doctests():
    """The doctests of every kafkafmt module, and (module, reason) for each module that cannot be imported
    because an optional extra it needs is not installed (pyspark without ``[spark]``)."""
    finder = doctest.DocTestFinder(exclude_empty=True)
    out, absent = [], []
    for name in kafkafmt_modules():
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            absent.append((name, f"could not import {exc.name!r}: {name} needs it (an optional extra)"))
            continue
        for t in finder.find(mod, name):
            if t.examples and (t.name == name or t.name.startswith(name + ".")):
                out.append(t)
    return out, absent


def _doctest_params():
    """Every doctest; those apicheck's PENDING names (docstring examples known not to run yet) are expected to
    fail, strictly: one that passes fails the run, so that it comes off the list. A module whose optional
    extra is not installed is one skipped case (a failure under KAFKAFMT_REQUIRE_ALL, as every such skip)."""
    pending = _apicheck().pending_doctests()
    tests, absent = _doctests()
    return [pytest.param(t, id=t.name, marks=pytest.mark.xfail(strict=True, reason="on apicheck's PENDING"))
            if t.name in pending else pytest.param(t, id=t.name) for t in tests] + \
        [pytest.param(None, id=name, marks=pytest.mark.skip(reason=why)) for name, why in absent]


@pytest.mark.parametrize("test", _doctest_params())
def test_docstring_example_runs(test, workdir, request):
    if test.name.startswith("kafkafmt.spark"):
        test.globs["spark"] = request.getfixturevalue("spark")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out = io.StringIO()
    result = runner.run(test, out=out.write)
    assert result.failed == 0, out.getvalue()


def _doctest_name(obj):
    """The name doctest gives the examples of a function or class (where it is defined)."""
    return f"{obj.__module__}.{obj.__qualname__}"


def test_every_public_function_and_class_has_an_example_that_runs():
    """Each function and class of the API reference, PENDING apart, has a doctest with examples among those
    ``test_docstring_example_runs`` runs (found where the object is defined, as doctest finds it)."""
    pytest.importorskip("pyspark")          # kafkafmt.spark's names are public names too
    check = _apicheck()
    ran = {t.name: len(t.examples) for t in _doctests()[0] if t.name not in check.pending_doctests()}
    wanted = {name: _doctest_name(obj) for name, obj, kind in check.public_names()
              if kind in ("function", "class") and name not in check.PENDING}
    missing = sorted(name for name, where in wanted.items() if not ran.get(where))
    assert missing == [], f"public functions and classes without a docstring example that runs: {missing}"
    assert len(wanted) >= 50, sorted(wanted)     # the API reference did not lose its functions and classes


# -- every public name is documented -----------------------------------------------------------------------


def test_every_public_name_has_a_numpydoc_docstring():
    pytest.importorskip("pyspark")          # kafkafmt.spark's names are public names too
    bad, stale = _apicheck().problems()
    assert bad == {}, "public names without a numpydoc docstring:\n" + \
        "\n".join(f"  {n}: {p}" for n, p in sorted(bad.items()))
    assert stale == [], f"documented now, take off PENDING in docs/_ext/apicheck.py: {stale}"


def test_the_docstring_check_can_fail():
    pytest.importorskip("pyspark")          # kafkafmt.spark's names are public names too
    check = _apicheck()

    def bare(a, b=1):
        pass

    def prose(a):
        """Does a thing with a."""

    def full(a):
        """Does a thing.

        Parameters
        ----------
        a : int
            The thing.

        Examples
        --------
        >>> full(1)
        """

    assert check.problem(bare, "function") == "no docstring"
    assert check.problem(prose, "function") == "no Parameters / Examples section"
    assert check.problem(full, "function") is None
    assert check.problem(prose, "member") is None
    names = {n for n, _, _ in check.public_names()}
    import kafkafmt

    assert {f"kafkafmt.{n}" for n in kafkafmt.__all__} <= names
    assert "kafkafmt.Records.to_arrow" in names and "kafkafmt.internal.consumer_offsets" in names


def test_public_names_are_documented_without_pyspark():
    """The site builds from ``pip install -e ".[docs]"`` alone: with pyspark mocked as docs/conf.py mocks it
    when it is missing, every public name of kafkafmt.spark still has a docstring of its own."""
    pytest.importorskip("sphinx")
    code = ("import importlib.util, sys\n"
            "from sphinx.ext.autodoc.mock import mock\n"
            "with mock(['pyspark']):\n"
            f"    spec = importlib.util.spec_from_file_location('apicheck', {str(DOCS / '_ext' / 'apicheck.py')!r})\n"
            "    check = importlib.util.module_from_spec(spec)\n"
            "    spec.loader.exec_module(check)\n"
            "    import kafkafmt.spark.source\n"
            "    assert getattr(kafkafmt.spark.source.DataSource, '__sphinx_mock__', False)\n"
            "    bad, stale = check.problems()\n"
            "print(sorted(bad.items()))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "[]", p.stdout
