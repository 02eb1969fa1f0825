"""Kafka's internal topics as tables (see `kafkafmt.internal._coordinator` until it is split by job)."""
from __future__ import annotations

from kafkafmt.internal import _coordinator
from kafkafmt.internal._coordinator import *  # noqa: F401,F403
from kafkafmt.internal._coordinator import __all__  # noqa: F401

__doc__ = _coordinator.__doc__


def __getattr__(name):
    return getattr(_coordinator, name)
