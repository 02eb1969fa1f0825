"""Spark Kafka-source options, read for segment files.

The same option names as Spark's Kafka source (so a batch job switches by changing the format):
``subscribe`` / ``subscribePattern`` / ``assign``, ``startingOffsets`` / ``endingOffsets``
("earliest", "latest" or JSON ``{"topic": {"0": 23}}``, -2 = earliest, -1 = latest),
``startingTimestamp`` / ``endingTimestamp`` (ms, all partitions), ``startingOffsetsByTimestamp`` /
``endingOffsetsByTimestamp`` (JSON per partition), ``includeHeaders``, ``failOnDataLoss``,
``minPartitions``, and the isolation level (``kafka.isolation.level`` as Spark passes consumer
settings, or ``isolationLevel``). Options of a live cluster (bootstrap servers, group ids,
security settings) make no sense for files and are rejected.

Streams (``spark.readStream``) also take Spark's rate limits ``maxOffsetsPerTrigger``,
``minOffsetsPerTrigger`` and ``maxTriggerDelay`` (rejected for a batch read, as Spark's Kafka source
ignores them there); their ``startingOffsets`` defaults to latest and accepts -1 per partition;
``endingOffsets`` / ``endingTimestamp`` / ``endingOffsetsByTimestamp`` are batch-only.

kafkafmt's own: ``includeBatchMetadata`` (producerId, producerEpoch, baseSequence, leaderEpoch,
codec columns), ``maxBytesPerBatch`` (decoded bytes per Arrow batch a task yields),
``targetPartitionBytes`` (segment bytes packed into one input partition), ``storage.<key>`` (an
option of the filesystem holding URL paths) and ``tieredKey.<key id>`` (the RSA private key, PEM
text, of encrypted Aiven tiered-storage uploads: the readers' ``tiered_keys``). `Options.read_options`
is what the workers read with: the library's `kafkafmt.read.ReadOptions`, as the other doors build it.

Typed keys and values (`kafkafmt.spark.typedcols`): ``valueFormat`` / ``keyFormat`` (a name in
the table of formats, `kafkafmt.values.FORMATS`: avro, registry, protobuf, ...), ``schemaRegistry`` (default: the
``_schemas`` topic among the paths), ``valueSchema`` / ``keySchema`` (as the command line's
``--value-schema`` takes it, `kafkafmt.values.reader_schema_of_text`: an id, ``v<version>``, a
subject, a Protobuf message's full name, JSON like ``{"message": "pkg.Msg"}``, or a schema),
``mode`` (from_avro's: FAILFAST, the default, fails the query on a bad value; PERMISSIVE makes it
null with the reason in valueError), ``untypedTopics`` (a topic without a schema: ``error``, the
default, fails the query naming it; ``bytes`` keeps its values as bytes, null in ``value`` and the
bytes in ``valueBytes``, keys alike in ``keyBytes``), ``schemaEvolutionMode`` (streams:
``restart``, the default, fails the query when a subject gets a new latest version, so that a
restart reads with it; ``none`` keeps the schema the query started with), and how values are
shaped (`kafkafmt.values._options`): ``recursive.fields.max.depth`` (Spark's from_protobuf option:
how many times a recursive record or message appears on a path; 5 by default, the field past it
holding JSON text), ``timeUnit`` (``us``, the default, or ``ns``: Protobuf Timestamp / Duration and
JSON Schema date-time; Spark holds microseconds) and ``additionalProperties`` (``keep``, the
default, or ``drop``: a JSON Schema object's properties outside its schema).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from kafkafmt.log import DEFAULT_REPLICAS

EARLIEST, LATEST = -2, -1

_REJECTED_EXACT = {
    "kafka.bootstrap.servers": "there is no broker: point .load() at a log directory instead",
    "kafka.group.id": "segment files are read without a consumer group",
    "groupidprefix": "segment files are read without a consumer group",
    "fetchoffset.numretries": "there is no broker to fetch offsets from",
    "fetchoffset.retryintervalms": "there is no broker to fetch offsets from",
    "kafkaconsumer.polltimeoutms": "there is no consumer to poll",
}
# rate limits of a stream: accepted by spark.readStream, rejected (with this reason) for a batch read
_STREAM_ONLY = {
    "maxoffsetspertrigger": "a streaming option (spark.readStream); a batch read takes every offset in range",
    "minoffsetspertrigger": "a streaming option (spark.readStream); a batch read takes every offset in range",
    "maxtriggerdelay": "a streaming option (spark.readStream); a batch read has no triggers",
}
_BATCH_ONLY = {
    "endingoffsets": "a stream has no end (use Trigger.AvailableNow to stop at the data present when it starts)",
    "endingtimestamp": "a stream has no end (use Trigger.AvailableNow to stop at the data present when it starts)",
    "endingoffsetsbytimestamp": "a stream has no end (use Trigger.AvailableNow to stop at the data present when "
                                "it starts)",
}
_REJECTED_PREFIXES = ("kafka.security.", "kafka.sasl.", "kafka.ssl.")
_ACCEPTED = {
    "path", "paths", "subscribe", "subscribepattern", "assign", "startingoffsets", "endingoffsets",
    "startingtimestamp", "endingtimestamp", "startingoffsetsbytimestamp", "endingoffsetsbytimestamp",
    "startingoffsetsbytimestampstrategy", "includeheaders", "failondataloss", "minpartitions",
    "kafka.isolation.level", "isolationlevel", "includebatchmetadata", "maxbytesperbatch",
    "targetpartitionbytes", "maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay", "decode",
    "replicas", "includelogdir", "valueformat", "keyformat", "schemaregistry", "valueschema", "keyschema", "mode",
    "schemaevolutionmode", "untypedtopics", "topicid", "recursive.fields.max.depth", "timeunit",
    "additionalproperties",
}
_TIME_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


class OptionError(ValueError):
    """An option the kafka-segments source cannot use, with the reason."""


def _topic_id(text):
    """topicId: one topic id, or a JSON object ``{"topic": "id"}`` (as the library's ``topic_id``)."""
    text = str(text).strip()
    if text.startswith("{"):
        try:
            ids = json.loads(text)
        except ValueError as exc:
            raise OptionError(f"topicId is not a JSON object of topic ids: {exc}") from None
        if not isinstance(ids, dict) or not all(isinstance(v, str) for v in ids.values()):
            raise OptionError('topicId: give one topic id or {"topic": "id", ...}')
        return ids
    if not text:
        raise OptionError("topicId is empty")
    return text


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


def _duration_ms(value, name):
    """Spark's time strings: "15m", "30s", "500ms", "1h", or a plain number of milliseconds."""
    v = str(value).strip().lower()
    num = v.rstrip("abcdefghijklmnopqrstuvwxyz ")
    unit = v[len(num):].strip() or "ms"
    try:
        n = float(num)
    except ValueError:
        n = None
    if n is None or n < 0 or unit not in _TIME_UNITS:
        raise OptionError(f"option {name} must be a duration like 15m, 30s or 500ms, not {value!r}")
    return int(n * _TIME_UNITS[unit])


def _offsets_json(value, name, allow, stream=False):
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
            if name == "startingOffsets" and o == LATEST and not stream:
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
    include_log_dir: bool = False            # includeLogDir: the logDir column (several copies of a partition)
    replicas: str = DEFAULT_REPLICAS         # dedup | all (kafkafmt.log._discovery.REPLICAS)
    topic_id: object = None                  # topicId: the incarnation read where copies hold several
    fail_on_data_loss: bool = True
    min_partitions: int = None
    isolation: str = "read_uncommitted"
    batch_metadata: bool = False
    decode: str = None                       # an internal topic's table (kafkafmt.internal.INTERNAL_TABLES)
    max_bytes_per_batch: int = 32 << 20
    target_partition_bytes: int = 128 << 20
    stream: bool = False                     # parsed for spark.readStream
    max_offsets_per_trigger: int = None
    min_offsets_per_trigger: int = None
    max_trigger_delay_ms: int = 15 * 60_000  # Spark's default maxTriggerDelay (15m)
    timestamp_strategy: str = "error"        # startingOffsetsByTimestampStrategy: error | latest
    extra: dict = field(default_factory=dict)
    storage_options: dict = None             # storage.<key> options, for the filesystem (never logged)
    tiered_keys: dict = None                 # tieredKey.<key id>: private keys of encrypted uploads (never logged)
    value_format: str = None                 # valueFormat / keyFormat: typed values (kafkafmt.values._typed)
    key_format: str = None
    schema_registry: str = None
    value_schema: object = None
    key_schema: object = None
    mode: str = "FAILFAST"                   # from_avro's mode: FAILFAST | PERMISSIVE
    untyped_topics: str = "error"            # untypedTopics: a topic without a schema: error | bytes
    schema_evolution: str = "restart"        # schemaEvolutionMode (streams): restart | none
    shape: object = None                     # recursive.fields.max.depth, timeUnit, additionalProperties (ValueShape)
    typed: object = None                     # the plan of typed values (kafkafmt.spark.typedcols.SparkTyped)

    def __repr__(self):     # secrets in storage options and keys stay out of plans and logs
        shown = {k: v for k, v in self.__dict__.items() if k not in ("storage_options", "tiered_keys")}
        for name in ("storage_options", "tiered_keys"):
            if getattr(self, name):
                shown[name] = {k: "***" for k in getattr(self, name)}
        return f"Options({shown})"

    def read_options(self, **settings):
        """The `kafkafmt.read.ReadOptions` the query's reads use (what the other doors build from their
        flags): its isolation level, failOnDataLoss as ``errors``, maxBytesPerBatch as the chunk size,
        the storage options and tiered keys, replicas, the typed-value options (``mode`` as
        ``value_errors``); one thread per task (Spark runs the tasks in parallel); then ``settings``."""
        from kafkafmt.read import ReadOptions

        return ReadOptions(isolation=self.isolation, errors="strict" if self.fail_on_data_loss else "salvage",
                           max_bytes=self.max_bytes_per_batch, threads=1, storage_options=self.storage_options,
                           tiered_keys=self.tiered_keys, replicas=self.replicas, topic_id=self.topic_id,
                           value_format=self.value_format,
                           key_format=self.key_format, schema_registry=self.schema_registry,
                           value_schema=self.value_schema, key_schema=self.key_schema,
                           value_errors="strict" if self.mode == "FAILFAST" else "null",
                           untyped_topics=self.untyped_topics, **self.shape_options()).replace(**settings)

    def shape_options(self):
        """How values are shaped, as the readers take them (`kafkafmt.values._options`)."""
        import dataclasses

        from kafkafmt.values import ValueShape

        return dataclasses.asdict(self.shape if self.shape is not None else ValueShape())

    def wants(self, topic, partition=None):
        """Does the subscription include this topic (and partition)?"""
        if self.assign is not None:
            return topic in self.assign and (partition is None or partition in self.assign[topic])
        if self.subscribe is not None:
            return topic in self.subscribe
        if self.pattern is not None:
            return self.pattern.fullmatch(topic) is not None
        return True


STORAGE_PREFIX = "storage."
TIERED_KEY_PREFIX = "tieredkey."


def _storage_value(v):
    """Spark passes option values as strings: true/false and numbers become Python values."""
    s = str(v)
    if s.lower() in ("true", "false"):
        return s.lower() == "true"
    try:
        return int(s)
    except ValueError:
        return s


def _typed_options(o, opts):
    from kafkafmt.values import FORMATS, format_names, reader_schema_of_text

    for key, attr, side in (("valueformat", "value_format", "value"), ("keyformat", "key_format", "key")):
        if key in opts:
            fmt = str(opts[key]).strip().lower()
            if fmt not in FORMATS or side not in FORMATS[fmt].sides:
                raise OptionError(f"{key} must be one of {', '.join(format_names(side))}, not {opts[key]!r}")
            setattr(o, attr, None if fmt == "bytes" else fmt)
    if "schemaregistry" in opts:
        o.schema_registry = str(opts["schemaregistry"]).strip()
    for key, attr in (("valueschema", "value_schema"), ("keyschema", "key_schema")):
        if key in opts:
            setattr(o, attr, reader_schema_of_text(opts[key]))
    if "mode" in opts:
        o.mode = str(opts["mode"]).strip().upper()
        if o.mode not in ("FAILFAST", "PERMISSIVE"):
            raise OptionError(f"mode must be FAILFAST or PERMISSIVE (as from_avro's), not {opts['mode']!r}")
    if "untypedtopics" in opts:
        from kafkafmt.values import UNTYPED_TOPICS

        o.untyped_topics = str(opts["untypedtopics"]).strip().lower()
        if o.untyped_topics not in UNTYPED_TOPICS:
            raise OptionError(f"untypedTopics must be {' or '.join(UNTYPED_TOPICS)}, not {opts['untypedtopics']!r}")
    shaping = {"recursive.fields.max.depth": "recursive_fields_max_depth", "timeunit": "time_unit",
               "additionalproperties": "additional_properties"}
    if any(key in opts for key in shaping):
        from kafkafmt.values import ValueShape

        try:
            o.shape = ValueShape(**{attr: str(opts[key]).strip().lower() for key, attr in shaping.items()
                                    if key in opts})
        except ValueError as exc:
            raise OptionError(str(exc).replace("recursive_fields_max_depth", "recursive.fields.max.depth")
                              .replace("time_unit", "timeUnit").replace("additional_properties",
                                                                        "additionalProperties")) from None
    if "schemaevolutionmode" in opts:
        o.schema_evolution = str(opts["schemaevolutionmode"]).strip().lower()
        if o.schema_evolution not in ("restart", "none"):
            raise OptionError(f"schemaEvolutionMode must be restart or none, not {opts['schemaevolutionmode']!r}")
    if (o.value_format or o.key_format) and o.decode:
        raise OptionError("decode (an internal topic's table) and valueFormat/keyFormat exclude each other")
    if not (o.value_format or o.key_format) and (o.schema_registry or o.value_schema is not None
                                                 or o.key_schema is not None or "untypedtopics" in opts):
        raise OptionError("schemaRegistry / valueSchema / keySchema / untypedTopics need valueFormat or keyFormat")


def parse(options, stream=False) -> Options:
    """Validate the options given to spark.read.format("kafka-segments") (case-insensitive);
    ``stream=True`` for spark.readStream (rate limits allowed, startingOffsets defaults to latest);
    ``stream=None`` when the kind of query is not known yet (DataSource.schema(), which Spark calls for
    both): options valid for either kind pass, everything else is checked as usual."""
    opts = {str(k).lower(): v for k, v in dict(options).items()}
    for key in opts:
        if stream is False and key in _STREAM_ONLY:
            raise OptionError(f"option {key} is not supported by a kafka-segments batch read: {_STREAM_ONLY[key]}")
        if stream is True and key in _BATCH_ONLY:
            raise OptionError(f"option {key} is not supported by a kafka-segments stream: {_BATCH_ONLY[key]}")
        if key in _REJECTED_EXACT:
            raise OptionError(f"option {key} is not supported by kafka-segments: {_REJECTED_EXACT[key]}")
        if key.startswith(_REJECTED_PREFIXES):
            raise OptionError(f"option {key} is not supported by kafka-segments: files need no security settings")
        if key not in _ACCEPTED and not key.startswith((STORAGE_PREFIX, TIERED_KEY_PREFIX)):
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
    o = Options(paths=paths, stream=bool(stream))
    # storage.<key>: passed to the filesystem (fsspec storage_options), keys as given (case kept)
    o.storage_options = {str(k)[len(STORAGE_PREFIX):]: _storage_value(v) for k, v in dict(options).items()
                         if str(k).lower().startswith(STORAGE_PREFIX)} or None
    # tieredKey.<key id>: PEM text, the key id as given (case kept)
    o.tiered_keys = {str(k)[len(TIERED_KEY_PREFIX):]: str(v) for k, v in dict(options).items()
                     if str(k).lower().startswith(TIERED_KEY_PREFIX)} or None
    if stream:
        o.starting = "latest"      # as Spark's Kafka source for streams
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
        o.starting = _offsets_json(opts["startingoffsets"], "startingOffsets",
                                   ("earliest",) if stream is False else ("earliest", "latest"),
                                   stream is not False)
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
    if "startingoffsetsbytimestampstrategy" in opts:
        strategy = str(opts["startingoffsetsbytimestampstrategy"]).strip().lower()
        if strategy not in ("error", "latest"):
            raise OptionError(f"startingOffsetsByTimestampStrategy must be error or latest, not {strategy!r}")
        o.timestamp_strategy = strategy
    if "maxoffsetspertrigger" in opts:
        o.max_offsets_per_trigger = _int(opts["maxoffsetspertrigger"], "maxOffsetsPerTrigger", 1)
    if "minoffsetspertrigger" in opts:
        o.min_offsets_per_trigger = _int(opts["minoffsetspertrigger"], "minOffsetsPerTrigger", 1)
    if "maxtriggerdelay" in opts:
        o.max_trigger_delay_ms = _duration_ms(opts["maxtriggerdelay"], "maxTriggerDelay")
    if o.min_offsets_per_trigger and o.max_offsets_per_trigger and \
            o.min_offsets_per_trigger > o.max_offsets_per_trigger:
        raise OptionError("minOffsetsPerTrigger must not exceed maxOffsetsPerTrigger")
    if "includeheaders" in opts:
        o.include_headers = _bool(opts["includeheaders"], "includeHeaders")
    if "includelogdir" in opts:
        o.include_log_dir = _bool(opts["includelogdir"], "includeLogDir")
    if "replicas" in opts:
        from kafkafmt.log import REPLICAS

        o.replicas = str(opts["replicas"]).strip().lower()
        if o.replicas not in REPLICAS:
            raise OptionError(f"replicas must be one of {', '.join(REPLICAS)}, not {opts['replicas']!r}")
    if "topicid" in opts:
        o.topic_id = _topic_id(opts["topicid"])
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
    if "decode" in opts:
        from kafkafmt.internal import INTERNAL_TABLES

        o.decode = str(opts["decode"]).strip().lower()
        if o.decode not in INTERNAL_TABLES:
            raise OptionError(f"decode must be one of {', '.join(INTERNAL_TABLES)} (Kafka's and Kafka Connect's "
                              f"internal topics as tables), "
                              f"not {opts['decode']!r}")
        if stream:
            raise OptionError("decode is for batch reads (spark.read), not streams")
        table = INTERNAL_TABLES[o.decode]
        if o.subscribe is None and o.pattern is None and o.assign is None and not table.names:
            o.subscribe = [table.topic]     # a Connect cluster names its topics: the planner finds it
    _typed_options(o, opts)
    if "maxbytesperbatch" in opts:
        o.max_bytes_per_batch = _int(opts["maxbytesperbatch"], "maxBytesPerBatch", 1)
    if "targetpartitionbytes" in opts:
        o.target_partition_bytes = _int(opts["targetpartitionbytes"], "targetPartitionBytes", 1)
    return o
