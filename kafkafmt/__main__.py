"""``python -m kafkafmt`` and the ``kafkafmt`` console script: see kafkafmt.cli."""
from __future__ import annotations

import sys

from kafkafmt._util import collect

with collect.paused():      # (the command's modules make many objects and no garbage: see kafkafmt.__init__)
    from kafkafmt.cli import main as _run


def main(argv=None):
    """The ``kafkafmt`` command in a process of its own (`kafkafmt.cli.main` is the same command for a
    caller's process): the collector set for it (`kafkafmt._util.collect.command_process`)."""
    with collect.command_process():
        return _run(argv)


if __name__ == "__main__":
    sys.exit(main())
