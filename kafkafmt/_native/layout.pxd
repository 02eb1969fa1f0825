# cython: language_level=3
"""Kafka's on-disk layouts, written once as named offsets (all fields big-endian).

Every entry of a log starts with the log overhead: int64 offset, int32 size (bytes that follow).

v2 record batch (magic 2), offsets from the start of the entry:
  baseOffset int64 @0, batchLength int32 @8, partitionLeaderEpoch int32 @12, magic int8 @16,
  crc uint32 @17 (crc32c of attributes..end), attributes int16 @21, lastOffsetDelta int32 @23,
  baseTimestamp int64 @27, maxTimestamp int64 @35, producerId int64 @43, producerEpoch int16 @51,
  baseSequence int32 @53, recordsCount int32 @57, records @61.
  attributes: bits 0-2 codec, bit 3 timestamp type, bit 4 transactional, bit 5 control, bit 6 delete horizon.
v2 record: length varint, attributes int8, timestampDelta varlong, offsetDelta varint, keyLength varint,
  key, valueLength varint, value, headerCount varint, headers (keyLength varint, key, valueLength varint, value).

v0/v1 message (magic 0, 1), offsets from the start of the entry:
  offset int64 @0, size int32 @8, crc uint32 @12 (crc32 of magic..end), magic int8 @16, attributes int8 @17,
  [v1: timestamp int64 @18], keyLength int32, key, valueLength int32, value.
  attributes: bits 0-2 codec, bit 3 timestamp type (v1).
"""

cdef enum:
    LOG_OVERHEAD = 12
    OFFSET_OFFSET = 0
    SIZE_OFFSET = 8
    MAGIC_OFFSET = 16

    # v2 batch header
    PARTITION_LEADER_EPOCH_OFFSET = 12
    CRC_OFFSET = 17
    ATTRIBUTES_OFFSET = 21
    LAST_OFFSET_DELTA_OFFSET = 23
    BASE_TIMESTAMP_OFFSET = 27
    MAX_TIMESTAMP_OFFSET = 35
    PRODUCER_ID_OFFSET = 43
    PRODUCER_EPOCH_OFFSET = 51
    BASE_SEQUENCE_OFFSET = 53
    RECORDS_COUNT_OFFSET = 57
    RECORDS_OFFSET = 61
    V2_HEADER_SIZE = 61
    V2_MIN_RECORD_SIZE = 7            # length, attributes, ts delta, offset delta, key len, value len, header count

    # v0/v1 message, offsets from the start of the entry
    LEGACY_CRC_OFFSET = 12
    LEGACY_ATTRIBUTES_OFFSET = 17
    LEGACY_TIMESTAMP_OFFSET = 18
    V0_KEY_LENGTH_OFFSET = 18
    V1_KEY_LENGTH_OFFSET = 26
    V0_RECORD_OVERHEAD = 14           # crc, magic, attributes, key length, value length
    V1_RECORD_OVERHEAD = 22           # + timestamp

    # attribute bits
    CODEC_MASK = 0x07
    TIMESTAMP_TYPE_BIT = 0x08
    TRANSACTIONAL_BIT = 0x10
    CONTROL_BIT = 0x20

    # codecs
    CODEC_NONE = 0
    CODEC_GZIP = 1
    CODEC_SNAPPY = 2
    CODEC_LZ4 = 3
    CODEC_ZSTD = 4

# Error codes returned by the C loops. Their exception kinds and messages are in scan.pyx's
# ERROR_INFO (the one table kafkafmt.record._decoder turns into exceptions).
cdef enum:
    ERR_NONE = 0
    ERR_SIZE_TOO_SMALL = 1        # size field below the minimum for the entry's magic
    ERR_BAD_MAGIC = 2
    ERR_CRC = 3
    ERR_BAD_COUNT = 4             # v2 record count negative or larger than the payload can hold
    ERR_RECORD_TRUNCATED = 5      # a record or field runs past the end of its batch
    ERR_VARINT = 6                # a varint longer than allowed
    ERR_BAD_LENGTH = 7            # a negative length other than -1 (null), or a negative header key length
    ERR_RECORD_SIZE = 8           # bytes consumed differ from the record's length field
    ERR_TRAILING = 9              # bytes left in a batch after its declared records
    ERR_INNER_COMPRESSED = 10     # a compressed message inside a compressed wrapper
    ERR_INNER_EMPTY = 11          # a compressed wrapper with no inner messages
    ERR_INNER_MAGIC = 12          # an inner message with a magic other than 0 or 1
    ERR_WRAPPER_OFFSET = 13       # v1 wrapper offset below the last inner relative offset
    ERR_CONTROL_KEY = 14          # a control record whose key is not version + type
    ERR_NULL_WRAPPER = 15         # a compressed wrapper with a null value
    ERR_INNER_CRC = 16
    ERR_SIZE_TOO_LARGE = 18       # size field larger than any batch may be
    ERR_DECOMPRESS = 19           # a compressed payload does not decompress
    ERR_DECOMPRESS_LIMIT = 20     # it decompresses to more than max_decompressed
    ERR_NOMEM = 21
    NEED_GROW = 100               # an output is full: grow it and call again
