"""Tiered-storage (KIP-405) layouts in object stores."""
from kafkafmt.log.tiered._base import *  # noqa: F401,F403
from kafkafmt.log.tiered._base import __all__  # noqa: F401
