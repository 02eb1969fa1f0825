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
