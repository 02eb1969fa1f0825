"""Tiered-storage (KIP-405) layouts in object stores: recognise them from object names and read them.

Two layouts are known, both found by listing (no `__remote_log_metadata` needed): Kafka's ``LocalTieredStorage``
(`kafkafmt.log.tiered._kafka`) and Aiven's tiered-storage-for-apache-kafka (`kafkafmt.log.tiered._aiven`), each a
`TieredLayout` registered in `LAYOUTS`.
"""
from kafkafmt.log.tiered._base import (ID, LAYOUTS, SIDE_FILE_KINDS, TOPIC, RemotePartition, RemoteSegment,
                                       TieredLayout, finish_partitions, layout_named, list_remote_partitions,
                                       looks_tiered, open_remote_log, partitions_at, read_remote_side_file,
                                       register_layout, segment_end_offset, will_finish)
from kafkafmt.log.tiered._kafka import (KAFKA_SUFFIXES, KafkaTieredLayout, kafka_id, kafka_partition_dir_name,
                                        kafka_segment_file_name, parse_kafka_id, parse_kafka_partition_dir,
                                        parse_kafka_segment_file)
from kafkafmt.log.tiered._aiven import (AIVEN_SUFFIXES, AivenLayout, AivenManifest, AivenSegmentBlob,
                                        aiven_segment_key, oaep_decrypt, parse_aiven_manifest,
                                        parse_aiven_segment_file, parse_aiven_topic_dir, read_aiven_manifest)

__all__ = ["ID", "TOPIC", "SIDE_FILE_KINDS", "LAYOUTS", "register_layout", "layout_named", "looks_tiered",
           "RemoteSegment", "RemotePartition", "TieredLayout", "open_remote_log", "read_remote_side_file",
           "segment_end_offset", "list_remote_partitions", "partitions_at", "finish_partitions", "will_finish",
           "KAFKA_SUFFIXES", "KafkaTieredLayout", "kafka_id", "parse_kafka_id", "parse_kafka_partition_dir",
           "parse_kafka_segment_file", "kafka_partition_dir_name", "kafka_segment_file_name",
           "AIVEN_SUFFIXES", "AivenLayout", "AivenManifest", "AivenSegmentBlob", "parse_aiven_manifest",
           "read_aiven_manifest", "parse_aiven_topic_dir", "parse_aiven_segment_file", "aiven_segment_key",
           "oaep_decrypt"]
