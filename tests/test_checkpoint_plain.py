"""The checkpoint files' plain fast path (a usual file told whole by one pattern) gives what the line-by-line
reading by Java's rules gives, and fails where it fails -- on files written as a broker writes them and on
files changed at random (signs, leading zeros, big numbers, other whitespace, other line ends, counts that
differ, names Kafka does not allow, non-ASCII)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkafmt.errors import KafkafmtError
from kafkafmt.log import sidefiles
from kafkafmt.log.sidefiles import _checkpoints

FIELD = st.sampled_from(["0", "7", "007", "-1", "+3", "2147483647", "2147483648", "999999999", "1000000000",
                         "999999999999999999", "9223372036854775807", "9223372036854775808", "x"])
TOPIC = st.sampled_from(["orders", "__consumer_offsets", "a.b-c_d", "ünï", "t t", ""])


@st.composite
def files(draw, fields):
    n = draw(st.integers(0, 4))
    rows = []
    for _ in range(n):
        row = ([draw(TOPIC)] if fields == 3 else []) + [draw(FIELD), draw(FIELD)]
        rows.append(draw(st.sampled_from([" ", " ", "\t", "  "])).join(row))
    count = draw(st.sampled_from([str(n), str(n), str(n + 1), "0" + str(n)]))
    version = draw(st.sampled_from(["0", "0", "0", "1", "00"]))
    end = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    text = end.join([version, count] + rows) + draw(st.sampled_from([end, "", end + end]))
    return text.encode("utf-8")


def _both(read, data, monkeypatch):
    def outcome():
        try:
            got = read(data)
        except KafkafmtError as exc:
            return "error", str(exc)
        return "ok", (got if isinstance(got, dict) and "entries" not in got
                      else (got["version"], got["entries"].tolist()))

    fast = outcome()
    with monkeypatch.context() as m:
        m.setattr(_checkpoints, "_plain_fields", lambda *a: None)
        slow = outcome()
    return fast, slow


@pytest.mark.parametrize("read, fields", [(sidefiles.read_offset_checkpoint, 3),
                                          (sidefiles.read_leader_epoch_checkpoint, 2)])
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_checkpoints_read_alike(read, fields, data):
    with pytest.MonkeyPatch.context() as mp:
        fast, slow = _both(read, data.draw(files(fields)), mp)
    assert fast == slow


def test_a_brokers_files_take_the_plain_way(tmp_path, monkeypatch):
    offsets = {("orders", 0): 12, ("__consumer_offsets", 49): 9 * 10 ** 17, ("orders", 0 + 1): 0}
    sidefiles.write_offset_checkpoint(tmp_path / "replication-offset-checkpoint", offsets)
    sidefiles.write_leader_epoch_checkpoint(tmp_path / "leader-epoch-checkpoint", [(0, 0), (3, 120)])
    calls = []
    monkeypatch.setattr(_checkpoints, "_checkpoint_rows", lambda *a: calls.append(a))
    assert sidefiles.read_offset_checkpoint(tmp_path / "replication-offset-checkpoint") == offsets
    got = sidefiles.read_leader_epoch_checkpoint(tmp_path / "leader-epoch-checkpoint")
    assert got["version"] == 0 and got["entries"].tolist() == [(0, 0), (3, 120)]
    assert got["entries"].dtype == np.dtype(sidefiles.EPOCH_ENTRY_DTYPE) and not calls


@pytest.mark.parametrize("line", ["t 2147483647 5", "t 2147483648 5", "t -1 5", "t 1 9223372036854775807",
                                  "t 1 9223372036854775808", "t 1 -9223372036854775808", "t 0999999999 1",
                                  "t 1 0999999999999999999", "t.x-y_z 1 2", "t/x 1 2", "t 1 2 3", "t 1"])
def test_offset_checkpoint_lines_at_the_edges_read_alike(line, monkeypatch):
    fast, slow = _both(sidefiles.read_offset_checkpoint, f"0\n1\n{line}\n".encode(), monkeypatch)
    assert fast == slow


@pytest.mark.parametrize("line", ["2147483647 5", "2147483648 5", "-1 5", "1 9223372036854775807",
                                  "1 9223372036854775808", "0999999999 1", "1 2 3"])
def test_leader_epoch_lines_at_the_edges_read_alike(line, monkeypatch):
    fast, slow = _both(sidefiles.read_leader_epoch_checkpoint, f"0\n1\n{line}\n".encode(), monkeypatch)
    assert fast == slow
