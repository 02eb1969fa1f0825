"""``python -m kafkafmt`` and the ``kafkafmt`` console script: see kafkafmt.cli."""
from __future__ import annotations

import sys

from kafkafmt.cli import main

if __name__ == "__main__":
    sys.exit(main())
