"""Kafka's internal-topic message schemas, as data.

Written from Kafka's JSON message definitions (apache/kafka:
group-coordinator/src/main/resources/common/message/, transaction-coordinator/...,
share-coordinator/..., metadata/src/main/resources/common/metadata/,
storage/src/main/resources/message/ (__remote_log_metadata) and
clients/src/main/resources/common/message/ConsumerProtocol*.json), up to Kafka 4.2.

A message is ``M(name, valid_versions, flexible_versions, fields)``; a field is
``F(name, type, versions, null=..., tag=..., tagged=..., default=..., fields=[...])``:

* ``type``: ``bool int8 int16 uint16 int32 int64 float64 string bytes uuid``, ``[]T`` for an array of
  one of those, ``[]`` with ``fields`` for an array of structs, ``{}`` with ``fields`` for a struct.
* ``versions`` / ``null`` (nullable versions) / ``tagged`` (tagged versions): ``"0+"``, ``"1"``,
  ``"0-2"``, ``"none"``. A tagged-only field (no ``versions`` in Kafka's file) has ``versions`` equal to
  its tagged versions.
* ``default``: the value Kafka assumes when the field is absent (only matters for tagged fields,
  which are written only when they differ from it).

Names keep Kafka's spelling (``offset``, ``ProducerId``); JSON output lower-cases the first letter,
as Kafka's generated JSON converters do.
"""
from __future__ import annotations

import re

__all__ = ["F", "M", "Field", "Message", "GROUP_RECORDS", "SHARE_STATE_RECORDS", "TRANSACTION_RECORDS",
           "METADATA_RECORDS", "CONSUMER_PROTOCOL_SUBSCRIPTION", "CONSUMER_PROTOCOL_ASSIGNMENT",
           "TRANSACTION_STATUS", "REMOTE_LOG_METADATA_RECORDS", "REMOTE_LOG_SEGMENT_STATES",
           "REMOTE_PARTITION_DELETE_STATES", "parse_versions", "in_versions"]

NO_VERSIONS = (1, 0)  # an empty range


def parse_versions(text):
    """``"0+"`` -> (0, 32767); ``"1"`` -> (1, 1); ``"0-2"`` -> (0, 2); ``"none"``/None -> empty."""
    if text is None or text == "none":
        return NO_VERSIONS
    text = str(text)
    if text.endswith("+"):
        return (int(text[:-1]), 0x7FFF)
    if "-" in text:
        lo, hi = text.split("-")
        return (int(lo), int(hi))
    return (int(text), int(text))


def in_versions(rng, version):
    return rng[0] <= version <= rng[1]


class Field:
    __slots__ = ("name", "type", "versions", "nullable", "tag", "tagged", "default", "fields", "elem",
                 "json_name")

    def __init__(self, name, type, versions="0+", *, null=None, tag=None, tagged=None, default=None,
                 fields=None):
        self.name = name
        self.type = type
        self.tagged = parse_versions(tagged)
        self.versions = parse_versions(versions if versions is not None else tagged)
        self.nullable = parse_versions(null)
        self.tag = tag
        self.fields = tuple(fields) if fields else ()
        self.elem = type[2:] if type.startswith("[]") else None  # "" for struct arrays
        if default is None and not (null and in_versions(self.nullable, self.versions[0])):
            default = _type_default(type)
        self.default = default
        self.json_name = name[:1].lower() + name[1:]

    def __repr__(self):
        return f"F({self.name!r}, {self.type!r})"


def _type_default(type):
    if type.startswith("[]"):
        return []
    return {"bool": False, "string": "", "bytes": b"", "uuid": b"\0" * 16, "float64": 0.0, "{}": None}.get(type, 0)


class Message:
    __slots__ = ("name", "valid", "flexible", "fields")

    def __init__(self, name, valid, flexible, fields):
        self.name = name
        self.valid = parse_versions(valid)
        self.flexible = parse_versions(flexible)
        self.fields = tuple(fields)

    def __repr__(self):
        return f"<Message {self.name} v{self.valid[0]}-{self.valid[1]}>"


F = Field
M = Message

# --- shared pieces ----------------------------------------------------------------------------------
_TOPIC_ID_PARTITIONS = [F("TopicId", "uuid"), F("Partitions", "[]int32")]
_TASK_IDS = [F("SubtopologyId", "string"), F("Partitions", "[]int32")]
_TOPIC_METADATA = [
    F("TopicId", "uuid"), F("TopicName", "string"), F("NumPartitions", "int32"),
    F("PartitionMetadata", "[]", fields=[F("Partition", "int32"), F("Racks", "[]string")]),
]


def _group_key(name, member=False):
    fields = [F("GroupId", "string")]
    if member:
        fields.append(F("MemberId", "string"))
    return M(name, "0+", "none", fields)


def _group_type(name, fields, member=False):
    """(kind, key, value) of a group coordinator record type as Kafka's ``<name>Key`` /
    ``<name>Value`` define it: the key the group id (and the member id), the value version 0,
    flexible; the kind ``name`` in snake_case."""
    kind = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
    return kind, _group_key(name + "Key", member), M(name + "Value", "0", "0+", fields)


_OFFSET_COMMIT_KEY = M("OffsetCommitKey", "0+", "none", [
    F("group", "string"), F("topic", "string"), F("partition", "int32")])

_OFFSET_COMMIT_VALUE = M("OffsetCommitValue", "0-4", "4+", [
    F("offset", "int64"),
    F("leaderEpoch", "int32", "3+", default=-1),
    F("metadata", "string"),
    F("commitTimestamp", "int64"),
    F("expireTimestamp", "int64", "1", default=-1),
    F("topicId", "uuid", "4+", tagged="4+", tag=0),
])

_GROUP_METADATA_VALUE = M("GroupMetadataValue", "0-4", "4+", [
    F("protocolType", "string"),
    F("generation", "int32"),
    F("protocol", "string", null="0+"),
    F("leader", "string", null="0+"),
    F("currentStateTimestamp", "int64", "2+", default=-1),
    F("members", "[]", fields=[
        F("memberId", "string"),
        F("groupInstanceId", "string", "3+", null="3+"),
        F("clientId", "string"),
        F("clientHost", "string"),
        F("rebalanceTimeout", "int32", "1+", default=-1),
        F("sessionTimeout", "int32"),
        F("subscription", "bytes"),
        F("assignment", "bytes"),
    ]),
])

#: the first fields of a group member's current assignment (consumer, share and streams groups)
_MEMBER_STATE = [F("MemberEpoch", "int32"), F("PreviousMemberEpoch", "int32"), F("State", "int8")]
_MEMBER_ASSIGNMENT = _MEMBER_STATE + [F("AssignedPartitions", "[]", fields=_TOPIC_ID_PARTITIONS)]
#: the tasks a streams group member is assigned
_STREAMS_TASKS = [F("ActiveTasks", "[]", fields=_TASK_IDS), F("StandbyTasks", "[]", fields=_TASK_IDS),
                  F("WarmupTasks", "[]", fields=_TASK_IDS)]

# --- __consumer_offsets: record type (the key's int16) -> (kind, key, value) ---------------------------
# Types 0 and 1 share the offset-commit layout (0 is what the oldest brokers wrote; Kafka 4 calls its
# value LegacyOffsetCommitValue, identical to OffsetCommitValue v0). Types 9 and 18 existed in early
# access releases (share/streams partition metadata) and were later removed; their keys are kept so the
# group is still named.
GROUP_RECORDS = {
    0: ("offset_commit", _OFFSET_COMMIT_KEY, _OFFSET_COMMIT_VALUE),
    1: ("offset_commit", _OFFSET_COMMIT_KEY, _OFFSET_COMMIT_VALUE),
    2: ("group_metadata", M("GroupMetadataKey", "0+", "none", [F("group", "string")]), _GROUP_METADATA_VALUE),
    3: _group_type("ConsumerGroupMetadata", [
        F("Epoch", "int32"),
        F("MetadataHash", "int64", tagged="0+", tag=0, default=0)]),
    4: _group_type("ConsumerGroupPartitionMetadata", [F("Topics", "[]", fields=_TOPIC_METADATA)]),
    5: _group_type("ConsumerGroupMemberMetadata", [
        F("InstanceId", "string", null="0+"),
        F("RackId", "string", null="0+"),
        F("ClientId", "string"),
        F("ClientHost", "string"),
        F("SubscribedTopicNames", "[]string"),
        F("SubscribedTopicRegex", "string", null="0+"),
        F("RebalanceTimeoutMs", "int32", default=-1),
        F("ServerAssignor", "string", null="0+"),
        F("ClassicMemberMetadata", "{}", null="0+", tagged="0+", tag=0, fields=[
            F("SessionTimeoutMs", "int32"),
            F("SupportedProtocols", "[]", fields=[F("Name", "string"), F("Metadata", "bytes")]),
        ]),
    ], member=True),
    6: _group_type("ConsumerGroupTargetAssignmentMetadata", [F("AssignmentEpoch", "int32")]),
    7: _group_type("ConsumerGroupTargetAssignmentMember", [
        F("TopicPartitions", "[]", fields=_TOPIC_ID_PARTITIONS)], member=True),
    8: _group_type("ConsumerGroupCurrentMemberAssignment", _MEMBER_ASSIGNMENT + [
        F("PartitionsPendingRevocation", "[]", fields=_TOPIC_ID_PARTITIONS),
    ], member=True),
    9: _group_type("ShareGroupPartitionMetadata", [F("Topics", "[]", fields=_TOPIC_METADATA)]),
    10: _group_type("ShareGroupMemberMetadata", [
        F("RackId", "string", null="0+"),
        F("ClientId", "string"),
        F("ClientHost", "string"),
        F("SubscribedTopicNames", "[]string"),
    ], member=True),
    11: _group_type("ShareGroupMetadata", [F("Epoch", "int32"), F("MetadataHash", "int64")]),
    12: _group_type("ShareGroupTargetAssignmentMetadata", [F("AssignmentEpoch", "int32")]),
    13: _group_type("ShareGroupTargetAssignmentMember", [
        F("TopicPartitions", "[]", fields=_TOPIC_ID_PARTITIONS)], member=True),
    14: _group_type("ShareGroupCurrentMemberAssignment", _MEMBER_ASSIGNMENT, member=True),
    15: _group_type("ShareGroupStatePartitionMetadata", [
        F("InitializingTopics", "[]", fields=[
            F("TopicId", "uuid"), F("TopicName", "string"), F("Partitions", "[]int32")]),
        F("InitializedTopics", "[]", fields=[
            F("TopicId", "uuid"), F("TopicName", "string"), F("Partitions", "[]int32")]),
        F("DeletingTopics", "[]", fields=[F("TopicId", "uuid"), F("TopicName", "string")]),
    ]),
    16: ("consumer_group_regular_expression",
         M("ConsumerGroupRegularExpressionKey", "0+", "none", [
             F("GroupId", "string"), F("RegularExpression", "string")]),
         M("ConsumerGroupRegularExpressionValue", "0", "0+", [
             F("Topics", "[]string"), F("Version", "int64"), F("Timestamp", "int64")])),
    17: _group_type("StreamsGroupMetadata", [
        F("Epoch", "int32"),
        F("MetadataHash", "int64"),
        F("ValidatedTopologyEpoch", "int32", tagged="0+", tag=0, default=-1),
        F("LastAssignmentConfigs", "[]", null="0+", tagged="0+", tag=1,
          fields=[F("Key", "string"), F("Value", "string")]),
    ]),
    18: ("streams_group_partition_metadata", _group_key("StreamsGroupPartitionMetadataKey"), None),
    19: _group_type("StreamsGroupMemberMetadata", [
        F("InstanceId", "string", null="0+"),
        F("RackId", "string", null="0+"),
        F("ClientId", "string"),
        F("ClientHost", "string"),
        F("RebalanceTimeoutMs", "int32", default=-1),
        F("TopologyEpoch", "int32"),
        F("ProcessId", "string"),
        F("UserEndpoint", "{}", null="0+", fields=[F("Host", "string"), F("Port", "uint16")]),
        F("ClientTags", "[]", fields=[F("Key", "string"), F("Value", "string")]),
    ], member=True),
    20: _group_type("StreamsGroupTargetAssignmentMetadata", [F("AssignmentEpoch", "int32")]),
    21: _group_type("StreamsGroupTargetAssignmentMember", _STREAMS_TASKS, member=True),
    22: _group_type("StreamsGroupCurrentMemberAssignment", _MEMBER_STATE + _STREAMS_TASKS + [
        F("ActiveTasksPendingRevocation", "[]", fields=_TASK_IDS),
        F("StandbyTasksPendingRevocation", "[]", fields=_TASK_IDS),
        F("WarmupTasksPendingRevocation", "[]", fields=_TASK_IDS),
    ], member=True),
    23: _group_type("StreamsGroupTopology", [
        F("Epoch", "int32"),
        F("Subtopologies", "[]", fields=[
            F("SubtopologyId", "string"),
            F("SourceTopics", "[]string"),
            F("SourceTopicRegex", "[]string"),
            F("StateChangelogTopics", "[]", fields=[
                F("Name", "string"), F("Partitions", "int32"), F("ReplicationFactor", "int16"),
                F("TopicConfigs", "[]", fields=[F("key", "string"), F("value", "string")])]),
            F("RepartitionSinkTopics", "[]string"),
            F("RepartitionSourceTopics", "[]", fields=[
                F("Name", "string"), F("Partitions", "int32"), F("ReplicationFactor", "int16"),
                F("TopicConfigs", "[]", fields=[F("key", "string"), F("value", "string")])]),
            F("CopartitionGroups", "[]", fields=[
                F("SourceTopics", "[]int16"), F("SourceTopicRegex", "[]int16"),
                F("RepartitionSourceTopics", "[]int16")]),
        ]),
    ]),
    24: ("streams_group_target_assignment_resolved_topic_ids",
         _group_key("StreamsGroupTargetAssignmentResolvedTopicIdsKey"), None),
}

# --- __share_group_state ---------------------------------------------------------------------------
_STATE_BATCH = [F("FirstOffset", "int64"), F("LastOffset", "int64"), F("DeliveryState", "int8"),
                F("DeliveryCount", "int16")]
_SHARE_KEY = [F("GroupId", "string"), F("TopicId", "uuid"), F("Partition", "int32")]
# DeliveryCompleteCount (KIP-1226, Kafka 4.2): a tagged field, -1 when unknown
_DELIVERY_COMPLETE_COUNT = F("DeliveryCompleteCount", "int32", None, tagged="0+", tag=0, default=-1)
SHARE_STATE_RECORDS = {
    0: ("share_snapshot", M("ShareSnapshotKey", "0+", "none", _SHARE_KEY),
        M("ShareSnapshotValue", "0", "0+", [
            F("SnapshotEpoch", "int32"), F("StateEpoch", "int32"), F("LeaderEpoch", "int32"),
            F("StartOffset", "int64"), _DELIVERY_COMPLETE_COUNT, F("CreateTimestamp", "int64"),
            F("WriteTimestamp", "int64"), F("StateBatches", "[]", fields=_STATE_BATCH)])),
    1: ("share_update", M("ShareUpdateKey", "0+", "none", _SHARE_KEY),
        M("ShareUpdateValue", "0", "0+", [
            F("SnapshotEpoch", "int32"), F("LeaderEpoch", "int32"), F("StartOffset", "int64"),
            _DELIVERY_COMPLETE_COUNT, F("StateBatches", "[]", fields=_STATE_BATCH)])),
}

# --- __transaction_state ---------------------------------------------------------------------------
TRANSACTION_RECORDS = {
    0: ("transaction", M("TransactionLogKey", "0+", "none", [F("TransactionalId", "string")]),
        M("TransactionLogValue", "0-1", "1+", [
            F("ProducerId", "int64"),
            F("PreviousProducerId", "int64", None, tagged="1+", tag=0, default=-1),
            F("NextProducerId", "int64", None, tagged="1+", tag=1, default=-1),
            F("ProducerEpoch", "int16"),
            F("NextProducerEpoch", "int16", None, tagged="1+", tag=3, default=-1),
            F("TransactionTimeoutMs", "int32"),
            F("TransactionStatus", "int8"),
            F("TransactionPartitions", "[]", null="0+", fields=[
                F("Topic", "string"), F("PartitionIds", "[]int32")]),
            F("TransactionLastUpdateTimestampMs", "int64"),
            F("TransactionStartTimestampMs", "int64"),
            F("ClientTransactionVersion", "int16", None, tagged="1+", tag=2, default=0),
        ])),
}

TRANSACTION_STATUS = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
                      5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}

# --- consumer protocol (GroupMetadataValue member subscription / assignment, int16 version first) ------
_TOPIC_PARTITIONS = [F("Topic", "string"), F("Partitions", "[]int32")]
CONSUMER_PROTOCOL_SUBSCRIPTION = M("ConsumerProtocolSubscription", "0-3", "none", [
    F("Topics", "[]string"),
    F("UserData", "bytes", null="0+"),
    F("OwnedPartitions", "[]", "1+", fields=_TOPIC_PARTITIONS),
    F("GenerationId", "int32", "2+", default=-1),
    F("RackId", "string", "3+", null="3+"),
])
CONSUMER_PROTOCOL_ASSIGNMENT = M("ConsumerProtocolAssignment", "0-3", "none", [
    F("AssignedPartitions", "[]", fields=_TOPIC_PARTITIONS),
    F("UserData", "bytes", null="0+"),
])

# --- __cluster_metadata (KRaft): api key -> message; every version is flexible ---------------------
_ENDPOINT = [F("Name", "string"), F("Host", "string"), F("Port", "uint16"), F("SecurityProtocol", "int16")]
_FEATURE = [F("Name", "string"), F("MinSupportedVersion", "int16"), F("MaxSupportedVersion", "int16")]
METADATA_RECORDS = {
    0: M("RegisterBrokerRecord", "0-3", "0+", [
        F("BrokerId", "int32"),
        F("IsMigratingZkBroker", "bool", "2+", default=False),
        F("IncarnationId", "uuid"),
        F("BrokerEpoch", "int64"),
        F("EndPoints", "[]", fields=_ENDPOINT),
        F("Features", "[]", fields=_FEATURE),
        F("Rack", "string", null="0+"),
        F("Fenced", "bool", default=True),
        F("InControlledShutdown", "bool", "1+", default=False),
        F("LogDirs", "[]uuid", "3+", tagged="3+", tag=0),
    ]),
    1: M("UnregisterBrokerRecord", "0", "0+", [F("BrokerId", "int32"), F("BrokerEpoch", "int64")]),
    2: M("TopicRecord", "0", "0+", [F("Name", "string"), F("TopicId", "uuid")]),
    3: M("PartitionRecord", "0-2", "0+", [
        F("PartitionId", "int32", default=-1),
        F("TopicId", "uuid"),
        F("Replicas", "[]int32"),
        F("Isr", "[]int32"),
        F("RemovingReplicas", "[]int32"),
        F("AddingReplicas", "[]int32"),
        F("Leader", "int32", default=-1),
        F("LeaderRecoveryState", "int8", tagged="0+", tag=0, default=0),
        F("LeaderEpoch", "int32", default=-1),
        F("PartitionEpoch", "int32", default=-1),
        F("Directories", "[]uuid", "1+"),
        F("EligibleLeaderReplicas", "[]int32", "2+", null="2+", tagged="2+", tag=1),
        F("LastKnownElr", "[]int32", "2+", null="2+", tagged="2+", tag=2),
    ]),
    4: M("ConfigRecord", "0", "0+", [
        F("ResourceType", "int8"), F("ResourceName", "string"), F("Name", "string"),
        F("Value", "string", null="0+")]),
    5: M("PartitionChangeRecord", "0-2", "0+", [
        F("PartitionId", "int32", default=-1),
        F("TopicId", "uuid"),
        F("Isr", "[]int32", null="0+", tagged="0+", tag=0),
        F("Leader", "int32", tagged="0+", tag=1, default=-2),
        F("Replicas", "[]int32", null="0+", tagged="0+", tag=2),
        F("RemovingReplicas", "[]int32", null="0+", tagged="0+", tag=3),
        F("AddingReplicas", "[]int32", null="0+", tagged="0+", tag=4),
        F("LeaderRecoveryState", "int8", tagged="0+", tag=5, default=-1),
        F("Directories", "[]uuid", "1+", null="1+", tagged="1+", tag=8),
        F("EligibleLeaderReplicas", "[]int32", "2+", null="2+", tagged="2+", tag=6),
        F("LastKnownElr", "[]int32", "2+", null="2+", tagged="2+", tag=7),
    ]),
    7: M("FenceBrokerRecord", "0", "0+", [F("Id", "int32"), F("Epoch", "int64")]),
    8: M("UnfenceBrokerRecord", "0", "0+", [F("Id", "int32"), F("Epoch", "int64")]),
    9: M("RemoveTopicRecord", "0", "0+", [F("TopicId", "uuid")]),
    10: M("DelegationTokenRecord", "0", "0+", [
        F("Owner", "string"), F("Requester", "string"), F("Renewers", "[]string"),
        F("IssueTimestamp", "int64"), F("MaxTimestamp", "int64"), F("ExpirationTimestamp", "int64"),
        F("TokenId", "string")]),
    11: M("UserScramCredentialRecord", "0", "0+", [
        F("Name", "string"), F("Mechanism", "int8"), F("Salt", "bytes"), F("StoredKey", "bytes"),
        F("ServerKey", "bytes"), F("Iterations", "int32")]),
    12: M("FeatureLevelRecord", "0", "0+", [F("Name", "string"), F("FeatureLevel", "int16")]),
    14: M("ClientQuotaRecord", "0", "0+", [
        F("Entity", "[]", fields=[F("EntityType", "string"), F("EntityName", "string", null="0+")]),
        F("Key", "string"), F("Value", "float64"), F("Remove", "bool")]),
    15: M("ProducerIdsRecord", "0", "0+", [
        F("BrokerId", "int32"), F("BrokerEpoch", "int64", default=-1), F("NextProducerId", "int64")]),
    17: M("BrokerRegistrationChangeRecord", "0-2", "0+", [
        F("BrokerId", "int32"),
        F("BrokerEpoch", "int64"),
        F("Fenced", "int8", tagged="0+", tag=0),
        F("InControlledShutdown", "int8", "1+", tagged="1+", tag=1),
        F("LogDirs", "[]uuid", "2+", tagged="2+", tag=2),
    ]),
    18: M("AccessControlEntryRecord", "0", "0+", [
        F("Id", "uuid"), F("ResourceType", "int8"), F("ResourceName", "string"), F("PatternType", "int8"),
        F("Principal", "string"), F("Host", "string"), F("Operation", "int8"), F("PermissionType", "int8")]),
    19: M("RemoveAccessControlEntryRecord", "0", "0+", [F("Id", "uuid")]),
    20: M("NoOpRecord", "0", "0+", []),
    21: M("ZkMigrationStateRecord", "0", "0+", [F("ZkMigrationState", "int8")]),
    22: M("RemoveUserScramCredentialRecord", "0", "0+", [F("Name", "string"), F("Mechanism", "int8")]),
    23: M("BeginTransactionRecord", "0", "0+", [F("Name", "string", null="0+", tagged="0+", tag=0)]),
    24: M("EndTransactionRecord", "0", "0+", []),
    25: M("AbortTransactionRecord", "0", "0+", [F("Reason", "string", null="0+", tagged="0+", tag=0)]),
    26: M("RemoveDelegationTokenRecord", "0", "0+", [F("TokenId", "string")]),
    27: M("RegisterControllerRecord", "0", "0+", [
        F("ControllerId", "int32"), F("IncarnationId", "uuid"), F("ZkMigrationReady", "bool"),
        F("EndPoints", "[]", fields=_ENDPOINT), F("Features", "[]", fields=_FEATURE)]),
    28: M("ClearElrRecord", "0", "0+", [F("TopicName", "string")]),
}


# --- __remote_log_metadata (storage/src/main/resources/message/Remote*.json): api key -> message --------
# Framed as the KRaft records (uvarint frame version 1, api key, version: RemoteLogMetadataSerde). Version 1
# (newer Kafka) adds tagged fields only: BrokerLeaderEpoch, and the end offset of an update or a partition delete.
_TOPIC_ID_PARTITION = [F("Name", "string"), F("Id", "uuid"), F("Partition", "int32")]
_REMOTE_LOG_SEGMENT_ID = F("RemoteLogSegmentId", "{}", fields=[
    F("TopicIdPartition", "{}", fields=_TOPIC_ID_PARTITION), F("Id", "uuid")])
_SEGMENT_LEADER_EPOCHS = F("SegmentLeaderEpochs", "[]", fields=[F("LeaderEpoch", "int32"), F("Offset", "int64")])
_CUSTOM_METADATA = F("CustomMetadata", "bytes", null="0+")
_TXN_INDEX_EMPTY = F("TxnIndexEmpty", "bool", tagged="0+", tag=0)
REMOTE_LOG_METADATA_RECORDS = {
    0: M("RemoteLogSegmentMetadataRecord", "0-1", "0+", [
        _REMOTE_LOG_SEGMENT_ID, F("StartOffset", "int64"), F("EndOffset", "int64"), F("BrokerId", "int32"),
        F("MaxTimestampMs", "int64"), F("EventTimestampMs", "int64"), _SEGMENT_LEADER_EPOCHS,
        F("SegmentSizeInBytes", "int32"), _CUSTOM_METADATA, F("RemoteLogSegmentState", "int8"), _TXN_INDEX_EMPTY,
        F("BrokerLeaderEpoch", "int32", "1+", tagged="1+", tag=1)]),
    1: M("RemoteLogSegmentMetadataUpdateRecord", "0-1", "0+", [
        _REMOTE_LOG_SEGMENT_ID, F("BrokerId", "int32"), F("EventTimestampMs", "int64"), _CUSTOM_METADATA,
        F("RemoteLogSegmentState", "int8"),
        F("BrokerLeaderEpoch", "int32", "1+", tagged="1+", tag=0, default=-1),
        F("EndOffset", "int64", "1+", tagged="1+", tag=1, default=-1)]),
    2: M("RemotePartitionDeleteMetadataRecord", "0-1", "0+", [
        F("TopicIdPartition", "{}", fields=_TOPIC_ID_PARTITION), F("BrokerId", "int32"),
        F("EventTimestampMs", "int64"), F("RemotePartitionDeleteState", "int8"),
        F("BrokerLeaderEpoch", "int32", "1+", tagged="1+", tag=0),
        F("EndOffset", "int64", "1+", tagged="1+", tag=1)]),
    3: M("RemoteLogSegmentMetadataSnapshotRecord", "0-1", "0+", [
        F("SegmentId", "uuid"), F("StartOffset", "int64"), F("EndOffset", "int64"), F("BrokerId", "int32"),
        F("MaxTimestampMs", "int64"), F("EventTimestampMs", "int64"), _SEGMENT_LEADER_EPOCHS,
        F("SegmentSizeInBytes", "int32"), _CUSTOM_METADATA, F("RemoteLogSegmentState", "int8"), _TXN_INDEX_EMPTY,
        F("BrokerLeaderEpoch", "int32", "1+", tagged="1+", tag=1)]),
}
#: RemoteLogSegmentState ids (storage/api/.../RemoteLogSegmentState.java)
REMOTE_LOG_SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED",
                             3: "DELETE_SEGMENT_FINISHED"}
#: RemotePartitionDeleteState ids (storage/api/.../RemotePartitionDeleteState.java)
REMOTE_PARTITION_DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED",
                                  2: "DELETE_PARTITION_FINISHED"}
