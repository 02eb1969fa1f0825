"""One error hierarchy for everything kafkafmt raises about the data it reads.

Every error carries where it happened: ``file`` (when known), ``position``
(byte position in the file or buffer, of the batch or field at fault) and
``offset`` (the Kafka offset of the batch, when it could be read).
"""
from __future__ import annotations


class KafkafmtError(Exception):
    """Base class of every error kafkafmt raises about input data."""

    def __init__(self, message: str, *, file=None, position=None, offset=None):
        self.reason = message
        self.file = None if file is None else str(file)
        self.position = position
        self.offset = offset
        self.batch_position = position   # start of the batch at fault (position may lie inside it)
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.file is not None and self.file not in self.reason:      # a path is said once
            where.append(self.file)
        if self.position is not None:
            where.append(f"position {self.position}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        return f"{self.reason} ({', '.join(where)})" if where else self.reason

    def located(self, *, file=None, position=None, offset=None):
        """Return a copy of this error with missing location fields filled in."""
        err = type(self)(
            self.reason,
            file=self.file if self.file is not None else file,
            position=self.position if self.position is not None else position,
            offset=self.offset if self.offset is not None else offset,
        )
        err.__cause__ = self.__cause__
        return err


class CorruptRecordError(KafkafmtError, ValueError):
    """The bytes do not form valid Kafka records (bad length, varint, magic...)."""


class CrcError(CorruptRecordError):
    """A stored checksum does not match the checksum of the bytes."""


class CompressionError(CorruptRecordError):
    """A compressed payload could not be decompressed."""


class DecompressionLimitError(CompressionError):
    """A payload decompresses to more bytes than the configured cap."""


class UnsupportedCodecError(CorruptRecordError):
    """The attributes name a compression codec Kafka does not define."""


class EncodeError(KafkafmtError, ValueError):
    """Records given to the writer cannot be encoded as asked."""


class NotKafkaDataError(CorruptRecordError):
    """A file given as Kafka data does not start with a Kafka log entry (a PNG, a text file...)."""


class DataLossError(KafkafmtError, RuntimeError):
    """Records a read should return are gone or cannot be read: offsets in neither a partition's
    tiered uploads nor its local segments, copies that disagree, offsets deleted before a stream read
    them (Spark's ``failOnDataLoss=true``)."""

    def _format(self):
        return self.reason


class IncarnationError(KafkafmtError, ValueError):
    """Copies of one partition belong to different incarnations of its topic (other topic ids in their
    ``partition.metadata``: a topic deleted and created again) and nothing says which to read: give
    ``topic_id`` (``--topic-id``, ``.option("topicId", ...)``), or add the cluster's ``__cluster_metadata``
    log dir to the roots."""


class NotALogDirError(KafkafmtError, NotADirectoryError):
    """A path given as a partition folder or log dir is not one (a file, or a folder without Kafka data)."""


class TopicNotFoundError(KafkafmtError, LookupError):
    """No topic, or more than one, holds what was asked for: an internal topic's table whose topic is
    found under none of the names there are, or under several (the message names the candidates)."""


class KafkafmtWarning(UserWarning):
    """Something was read in a slower or degraded way (an index fell back to a scan...)."""


# --- storage (local files and object stores) ---------------------------------------------------
# ``file`` is the URL (or local path) of the object; messages never carry storage options.

class StorageError(KafkafmtError, OSError):
    """A file or object could not be listed or read from its store."""

    def __init__(self, message: str, *, file=None, position=None, offset=None):
        KafkafmtError.__init__(self, message, file=file, position=position, offset=offset)

    def __str__(self):
        return self._format()


class StorageNotFoundError(StorageError, FileNotFoundError):
    """No such file, object, folder or bucket."""


#: a file, partition folder or log dir that was asked for does not exist (one class, two names)
PathNotFoundError = StorageNotFoundError


class StoragePermissionError(StorageError, PermissionError):
    """The store denied access (credentials missing, wrong or not allowed)."""


class StorageUnavailableError(StorageError):
    """Requests kept failing (throttled, server errors, timeouts, dropped connections) after retries."""


class ObjectChangedError(StorageError):
    """An object changed size while being read (rewritten, truncated or deleted)."""


class UnsupportedLayoutError(KafkafmtError, ValueError):
    """A tiered-storage object cannot be read as stored (e.g. encrypted without a key, unknown format)."""


class RecoveryError(KafkafmtError):
    """A repair (``kafkafmt recover``) cannot be done as asked: object storage, a manifest that does
    not match the files it names, a path that is not local Kafka data."""


class LogDirLockedError(RecoveryError):
    """A log dir's ``.lock`` is held by another process (a running broker)."""


class PartitionLockedError(KafkafmtError):
    """A partition folder is being written already: by another `kafkafmt.LogWriter` (in this process or
    another), or its log dir's ``.lock`` is held by a running broker. A second writer would append the same
    offsets twice."""


# --- typed values (schema registry, Avro) --------------------------------------------------------

class SchemaRegistryError(KafkafmtError, LookupError):
    """A schema source cannot be opened or read (no ``_schemas`` partition, an unreadable folder...)."""


class SchemaNotFoundError(SchemaRegistryError, KeyError):
    """A schema id, subject or version is not known to the schema source."""

    def __str__(self):
        return self._format()


class SchemaError(KafkafmtError, ValueError):
    """A schema is invalid, or a writer schema cannot be resolved to the reader schema."""


class ValueDecodeError(KafkafmtError, ValueError):
    """A record's key or value does not decode in the requested format (``strict=True``), or as the Kafka
    message it holds (an internal topic's record: `kafkafmt.internal.decode_coordinator_record`)."""
