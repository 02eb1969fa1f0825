"""The cyclic garbage collector: the ``kafkafmt`` command's own process collects less often (its start-up frozen,
the young generation every `COMMAND_THRESHOLDS` allocations, the collector still on); a process that imports
kafkafmt, or runs its command line in-process, keeps its own settings."""
from __future__ import annotations

import gc
import json
import subprocess
import sys

from kafkafmt._util.collect import COMMAND_THRESHOLDS

# the command's own entry point in a fresh process: the collector as the command runs, and after
_PROBE = """
import gc, json, sys
import kafkafmt.__main__ as entry
import kafkafmt.cli as cli
seen, command = {}, cli.run
def run(*args):
    seen.update(enabled=gc.isenabled(), thresholds=gc.get_threshold(), frozen=gc.get_freeze_count())
    return command(*args)
cli.run = run
before = gc.get_threshold(), gc.get_freeze_count()
seen["rc"] = entry.main(sys.argv[1:])
seen["after"] = (gc.get_threshold(), gc.get_freeze_count()) == before
print(json.dumps(seen))
"""


def _probe(*argv):
    p = subprocess.run([sys.executable, "-c", _PROBE, *map(str, argv)], capture_output=True, text=True,
                       check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_import_and_in_process_command_keep_the_callers_settings(capsys):
    callers = (("", [True, [700, 10, 10], 0]),
               ("gc.disable(); gc.set_threshold(123, 4, 5); ", [False, [123, 4, 5], 0]))
    for setup, want in callers:
        code = (f"import gc, json; {setup}import kafkafmt; "
                f"print(json.dumps([gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()]))")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert json.loads(p.stdout) == want           # importing pauses the collector and leaves it as it was
    from kafkafmt.cli import main

    before = gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()
    assert main(["stats", "--sample", "--json"]) == 0
    capsys.readouterr()
    assert (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()) == before


def test_command_process_collects_less():
    got = _probe("stats", "--sample", "--json")
    assert got["rc"] == 0 and got["enabled"] and tuple(got["thresholds"]) == COMMAND_THRESHOLDS
    assert got["frozen"] > 10_000                     # the start-up's objects, out of every collection
    assert got["after"]                               # and as they were once it returned
