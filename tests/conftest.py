import importlib.util
import os
import pathlib
import sys

import pytest

TESTS = pathlib.Path(__file__).resolve().parent
REPO = TESTS.parent
DEFAULT_CORPUS = REPO.parent / "shared" / "real-corpus"

if str(TESTS) not in sys.path:          # so test modules can `import kpy`
    sys.path.insert(0, str(TESTS))
if importlib.util.find_spec("kafkafmt") is None:    # not installed: use the (in-place built) work tree
    sys.path.insert(0, str(REPO))


#: skip reasons that mean something the project declares is absent: under KAFKAFMT_REQUIRE_ALL=1 (set by
#: .ci/run) such a skip is a failure, so a run on a machine that lacks them cannot pass by skipping
_ABSENT = ("could not import", "required is:", "real corpus not found", "no java on PATH")


def _absent(report):
    if not report.skipped or not os.environ.get("KAFKAFMT_REQUIRE_ALL"):
        return None
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return reason if any(a in reason for a in _ABSENT) else None


def _fail_absent(report):
    reason = _absent(report)
    if reason is not None:
        report.outcome = "failed"
        report.longrepr = f"KAFKAFMT_REQUIRE_ALL=1 and a declared dependency is absent: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_absent(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_absent(outcome.get_result())


#: most pytest-xdist workers ``-n auto`` starts: each may start a Spark JVM, an S3 server and the sample of its own,
#: so more workers than this cost more in set-up than they give back
WORKERS_CAP = 4


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pyproject.toml's addopts): one worker per core, at most `WORKERS_CAP`."""
    return max(1, min(WORKERS_CAP, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else os.cpu_count() or 1))


def pytest_addoption(parser):
    parser.addoption("--real-corpus", action="store", default=None, metavar="PATH",
                     help="folder of real Kafka data with expected.json "
                          "(default: $KAFKAFMT_REAL_CORPUS, else <repo>/../shared/real-corpus)")


def _corpus_path(config):
    for where, value in (("--real-corpus", config.getoption("--real-corpus")),
                         ("KAFKAFMT_REAL_CORPUS", os.environ.get("KAFKAFMT_REAL_CORPUS"))):
        if value:
            return pathlib.Path(value), where
    return DEFAULT_CORPUS, "default"


@pytest.fixture(scope="session")
def real_corpus(pytestconfig):
    path, where = _corpus_path(pytestconfig)
    if not (path / "expected.json").is_file():
        pytest.skip(f"real corpus not found: {path}/expected.json missing (from {where}; "
                    f"set --real-corpus PATH or KAFKAFMT_REAL_CORPUS)")
    return path


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """One local[2] SparkSession for the test session, with kafka-segments registered (quiet logs,
    UTC, the Python workers running this interpreter)."""
    pytest.importorskip("pyspark", minversion="4.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log4j = tmp_path_factory.mktemp("log4j") / "log4j2.properties"
    log4j.write_text("rootLogger.level = error\nrootLogger.appenderRef.stdout.ref = console\n"
                     "appender.console.type = Console\nappender.console.name = console\n"
                     "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
                     "appender.console.layout.pattern = %p %c{1}: %m%n\n")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("kafkafmt-tests")
               .config("spark.driver.extraJavaOptions",
                       f"-Dlog4j2.configurationFile={log4j} -XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    import kafkafmt.spark

    kafkafmt.spark.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def sample(tmp_path_factory):
    """The bundled sample log dir, generated into a temporary folder (KAFKAFMT_SAMPLE_DIR, restored)."""
    root = tmp_path_factory.mktemp("sample") / "logs"
    old = os.environ.get("KAFKAFMT_SAMPLE_DIR")
    os.environ["KAFKAFMT_SAMPLE_DIR"] = str(root)
    try:
        from kafkafmt.sample import sample_dir

        path = pathlib.Path(sample_dir())
    finally:
        if old is None:
            del os.environ["KAFKAFMT_SAMPLE_DIR"]
        else:
            os.environ["KAFKAFMT_SAMPLE_DIR"] = old
    assert path == root
    return path


@pytest.fixture
def units_read(monkeypatch):
    """How many times `kafkafmt.log.read_units` gave each kind as the readers of `kafkafmt.read` call it: "chunks"
    (a partition read in one pass with others), "fallback" (one read on its own), "records" (a piece read in
    one pass, as `read_log_dirs` takes it)."""
    import kafkafmt.read._readers as readers

    seen = {"chunks": 0, "fallback": 0, "records": 0}
    real = readers.read_units

    def counting(*args, **kwargs):
        for kind, x, idx in real(*args, **kwargs):
            seen[kind] += 1
            yield kind, x, idx

    monkeypatch.setattr(readers, "read_units", counting)
    return seen
