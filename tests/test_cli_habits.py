"""The command line's habits, as kcat and kafka-dump-log have them and as every command shares them: paths
printed as given, help that reads in order, a bad option value said in one line (exit 2), record counts and
print formats, real --topic/--partition options, and a pipe whose reader goes away stopping the work."""
import os
import shutil

import pytest

import kafkafmt
from kcli import run as cli


def no_traceback(p):
    assert "Traceback" not in p.stderr, p.stderr


def flip(path, pos, mask=0xFF):
    data = bytearray(path.read_bytes())
    data[pos] ^= mask
    path.write_bytes(bytes(data))


# ----------------------------------------------------------------------------------------------
# paths as given, help in order

def test_recover_prints_paths_as_given(sample, tmp_path):
    """recover names a file as verify (every command) does: under the path given, not made absolute."""
    shutil.copytree(sample / "orders-1", tmp_path / "logs" / "orders-1")
    seg = sorted((tmp_path / "logs" / "orders-1").glob("*.log"))[0]
    flip(seg, int(kafkafmt.read_segment(seg).batches.position[1]) + 70)
    named = os.path.join("logs", "orders-1", seg.name)
    verify = cli("verify", "logs", cwd=tmp_path, check=1)
    assert named in verify.stdout + verify.stderr
    for args in (["recover", "logs"], ["recover", "logs", "--json"]):
        p = cli(*args, cwd=tmp_path, check=1)
        assert named in p.stdout and str(tmp_path) not in p.stdout, p.stdout
    p = cli("recover", str(tmp_path / "logs"), check=1)          # an absolute path given: absolute paths
    assert str(seg) in p.stdout


def test_value_decoder_help_reads_in_order():
    text = " ".join(cli("dump", "--help", check=0).stdout.split())
    assert "--value-decoder FORMAT decode values as FORMAT and print them as JSON text" in text
    assert "--key-decoder FORMAT decode keys as FORMAT, as --value-decoder does values" in text
    text = " ".join(cli("export", "--help", check=0).stdout.split())
    assert "--value-format FORMAT decode values as FORMAT and write them as typed (nested) columns" in text
