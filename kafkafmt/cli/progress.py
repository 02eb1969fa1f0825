"""The command line's progress bar on stderr (bytes and records per second), drawn by tqdm
(`kafkafmt._util.progress`): shown only on a terminal, or as ``--progress`` / ``KAFKAFMT_PROGRESS`` say."""
from __future__ import annotations

import time

from kafkafmt._util.progress import progress_bar, records_text


class Progress:
    """``advance(nbytes, nrecords)`` as work is done; ``set_label`` names what is read; ``clear()``
    before a message is written to the same terminal; ``close()`` erases the bar.

    enabled: None decides from the stream (a terminal) and ``KAFKAFMT_PROGRESS`` (1 forces it on,
    0 off); True / False force it."""

    def __init__(self, total_bytes=None, *, enabled=None, stream=None, label="", interval=0.1):
        self.bar = progress_bar(total_bytes, label=label, enabled=enabled, stream=stream, interval=interval)
        self.enabled = not self.bar.disable
        self.records = 0
        self.start = time.monotonic()

    @property
    def bytes(self):
        return self.bar.n

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def set_label(self, label):
        self.bar.set_description_str(label, refresh=False)
        self._postfix()
        self.bar.refresh()

    def _postfix(self):
        self.bar.set_postfix_str(records_text(self.records, time.monotonic() - self.start), refresh=False)

    def advance(self, nbytes=0, nrecords=0):
        self.records += int(nrecords)
        if self.enabled:
            self._postfix()
        self.bar.update(int(nbytes))

    def clear(self):
        """Erase the bar (before writing a message to the same terminal); the next advance draws it again."""
        if self.enabled:
            self.bar.clear()

    def close(self):
        self.bar.close()
