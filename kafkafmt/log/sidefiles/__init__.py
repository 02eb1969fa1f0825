"""Kafka's side files: read and write every file a broker keeps beside its ``.log`` segments."""
from kafkafmt.log.sidefiles._indexes import *  # noqa: F401,F403
from kafkafmt.log.sidefiles._indexes import __all__  # noqa: F401
