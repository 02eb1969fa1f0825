"""Spark Kafka-source options, read for segment files.

The same option names as Spark's Kafka source (so a batch job switches by changing the format):
``subscribe`` / ``subscribePattern`` / ``assign``, ``startingOffsets`` / ``endingOffsets``
("earliest", "latest" or JSON ``{"topic": {"0": 23}}``, -2 = earliest, -1 = latest),
``startingTimestamp`` / ``endingTimestamp`` (ms, all partitions), ``startingOffsetsByTimestamp`` /
``endingOffsetsByTimestamp`` (JSON per partition), ``includeHeaders``, ``failOnDataLoss``,
``minPartitions``, and the isolation level (``kafka.isolation.level`` as Spark passes consumer
settings, or ``isolationLevel``). Options of a live cluster (bootstrap servers, group ids,
security settings, streaming rate limits) make no sense for files and are rejected.

kafkafmt's own: ``includeBatchMetadata`` (producerId, producerEpoch, baseSequence, leaderEpoch,
codec columns), ``maxBytesPerBatch`` (decoded bytes per Arrow batch a task yields),
``targetPartitionBytes`` (segment bytes packed into one input partition).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

EARLIEST, LATEST = -2, -1

_REJECTED_EXACT = {
    "kafka.bootstrap.servers": "there is no broker: point .load() at a log directory instead",
    "kafka.group.id": "segment files are read without a consumer group",
    "groupidprefix": "segment files are read without a consumer group",
    "maxoffsetspertrigger": "a streaming option; kafka-segments reads files in batch",
    "minoffsetspertrigger": "a streaming option; kafka-segments reads files in batch",
    "maxtriggerdelay": "a streaming option; kafka-segments reads files in batch",
    "fetchoffset.numretries": "there is no broker to fetch offsets from",
    "fetchoffset.retryintervalms": "there is no broker to fetch offsets from",
    "kafkaconsumer.polltimeoutms": "there is no consumer to poll",
}
_REJECTED_PREFIXES = ("kafka.security.", "kafka.sasl.", "kafka.ssl.")
_ACCEPTED = {
    "path", "paths", "subscribe", "subscribepattern", "assign", "startingoffsets", "endingoffsets",
    "startingtimestamp", "endingtimestamp", "startingoffsetsbytimestamp", "endingoffsetsbytimestamp",
    "startingoffsetsbytimestampstrategy", "includeheaders", "failondataloss", "minpartitions",
    "kafka.isolation.level", "isolationlevel", "includebatchmetadata", "maxbytesperbatch",
    "targetpartitionbytes",
}


class OptionError(ValueError):
    """An option the kafka-segments source cannot use, with the reason."""


def _bool(value, name):
    v = str(value).strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise OptionError(f"option {name} must be true or false, not {value!r}")


def _int(value, name, lo=None):
    try:
        v = int(str(value).strip())
    except ValueError:
        raise OptionError(f"option {name} must be an integer, not {value!r}") from None
    if lo is not None and v < lo:
        raise OptionError(f"option {name} must be >= {lo}, not {v}")
    return v


def _offsets_json(value, name, allow):
    """'earliest' / 'latest' or {"topic": {"partition": offset}}."""
    v = str(value).strip()
    if v.lower() in ("earliest", "latest"):
        if v.lower() not in allow:
            raise OptionError(f"{name}={v} is not allowed for a batch query (as in Spark's Kafka source)")
        return v.lower()
    try:
        parsed = json.loads(v)
        out = {str(t): {int(p): int(o) for p, o in parts.items()} for t, parts in parsed.items()}
    except (ValueError, AttributeError, TypeError):
        raise OptionError(f"{name} must be earliest, latest or JSON like {{\"topic\":{{\"0\":23}}}}, "
                          f"not {value!r}") from None
    for t, parts in out.items():
        for p, o in parts.items():
            if o < -2:
                raise OptionError(f"{name}: offset {o} for {t}-{p} is invalid (-2 earliest, -1 latest)")
            if name == "startingOffsets" and o == LATEST:
                raise OptionError(f"{name}: latest (-1) is not allowed for a batch query's start ({t}-{p})")
            if name == "endingOffsets" and o == EARLIEST:
                raise OptionError(f"{name}: earliest (-2) is not allowed for a batch query's end ({t}-{p})")
    return out


@dataclass
class Options:
    paths: list
    subscribe: list = None
    pattern: object = None
    assign: dict = None
    starting: object = "earliest"            # "earliest" or {topic: {partition: offset}}
    ending: object = "latest"
    starting_ts: object = None               # int ms, or {topic: {partition: ms}}
    ending_ts: object = None
    include_headers: bool = False
    fail_on_data_loss: bool = True
    min_partitions: int = None
    isolation: str = "read_uncommitted"
    batch_metadata: bool = False
    max_bytes_per_batch: int = 32 << 20
    target_partition_bytes: int = 128 << 20
    extra: dict = field(default_factory=dict)

    def wants(self, topic, partition=None):
        """Does the subscription include this topic (and partition)?"""
        if self.assign is not None:
            return topic in self.assign and (partition is None or partition in self.assign[topic])
        if self.subscribe is not None:
            return topic in self.subscribe
        if self.pattern is not None:
            return self.pattern.fullmatch(topic) is not None
        return True


def parse(options) -> Options:
    """Validate the options given to spark.read.format("kafka-segments") (case-insensitive)."""
    opts = {str(k).lower(): v for k, v in dict(options).items()}
    for key in opts:
        if key in _REJECTED_EXACT:
            raise OptionError(f"option {key} is not supported by kafka-segments: {_REJECTED_EXACT[key]}")
        if key.startswith(_REJECTED_PREFIXES):
            raise OptionError(f"option {key} is not supported by kafka-segments: files need no security settings")
        if key not in _ACCEPTED:
            if key.startswith("kafka."):
                raise OptionError(f"option {key} is a Kafka consumer setting; kafka-segments reads files "
                                  "without a consumer (only kafka.isolation.level applies)")
            raise OptionError(f"unknown option {key} for kafka-segments")
    raw_paths = opts.get("paths") or opts.get("path")
    if not raw_paths:
        raise OptionError("give the log directory: spark.read.format('kafka-segments').load('/path/to/kafka-logs')")
    if isinstance(raw_paths, str) and raw_paths.startswith("["):
        paths = [str(p) for p in json.loads(raw_paths)]
    else:
        paths = [p.strip() for p in str(raw_paths).split(",") if p.strip()]
    o = Options(paths=paths)
    chosen = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
    if len(chosen) > 1:
        raise OptionError(f"give only one of subscribe, subscribePattern, assign (got {', '.join(chosen)})")
    if "subscribe" in opts:
        o.subscribe = [t.strip() for t in str(opts["subscribe"]).split(",") if t.strip()]
        if not o.subscribe:
            raise OptionError("subscribe needs at least one topic")
    if "subscribepattern" in opts:
        try:
            o.pattern = re.compile(str(opts["subscribepattern"]))
        except re.error as exc:
            raise OptionError(f"subscribePattern is not a valid regular expression: {exc}") from None
    if "assign" in opts:
        try:
            o.assign = {str(t): {int(p) for p in ps} for t, ps in json.loads(str(opts["assign"])).items()}
        except (ValueError, AttributeError, TypeError):
            raise OptionError(f"assign must be JSON like {{\"topic\":[0,1]}}, not {opts['assign']!r}") from None
    if "startingoffsets" in opts:
        o.starting = _offsets_json(opts["startingoffsets"], "startingOffsets", ("earliest",))
    if "endingoffsets" in opts:
        o.ending = _offsets_json(opts["endingoffsets"], "endingOffsets", ("latest",))
    if "startingtimestamp" in opts:
        o.starting_ts = _int(opts["startingtimestamp"], "startingTimestamp", 0)
    if "endingtimestamp" in opts:
        o.ending_ts = _int(opts["endingtimestamp"], "endingTimestamp", 0)
    for key, attr in (("startingoffsetsbytimestamp", "starting_ts"), ("endingoffsetsbytimestamp", "ending_ts")):
        if key in opts:
            if getattr(o, attr) is not None:
                raise OptionError(f"give either {key} or the global timestamp option, not both")
            try:
                setattr(o, attr, {str(t): {int(p): int(ts) for p, ts in ps.items()}
                                  for t, ps in json.loads(str(opts[key])).items()})
            except (ValueError, AttributeError, TypeError):
                raise OptionError(f"{key} must be JSON like {{\"topic\":{{\"0\":1700000000000}}}}") from None
    if "includeheaders" in opts:
        o.include_headers = _bool(opts["includeheaders"], "includeHeaders")
    if "failondataloss" in opts:
        o.fail_on_data_loss = _bool(opts["failondataloss"], "failOnDataLoss")
    if "minpartitions" in opts:
        o.min_partitions = _int(opts["minpartitions"], "minPartitions", 1)
    iso = opts.get("kafka.isolation.level", opts.get("isolationlevel"))
    if iso is not None:
        iso = str(iso).strip().lower()
        if iso not in ("read_committed", "read_uncommitted"):
            raise OptionError(f"isolation level must be read_committed or read_uncommitted, not {iso!r}")
        o.isolation = iso
    if "includebatchmetadata" in opts:
        o.batch_metadata = _bool(opts["includebatchmetadata"], "includeBatchMetadata")
    if "maxbytesperbatch" in opts:
        o.max_bytes_per_batch = _int(opts["maxbytesperbatch"], "maxBytesPerBatch", 1)
    if "targetpartitionbytes" in opts:
        o.target_partition_bytes = _int(opts["targetpartitionbytes"], "targetPartitionBytes", 1)
    return o
