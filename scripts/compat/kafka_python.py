"""kafka-python (Debian's python3-kafka) against a broker: an admin and a
produce/consume round trip, as a user of that library would run it.

    python3 kafka_python.py HOST:PORT

Creates a topic of 3 partitions, checks that Metadata lists it, produces 300
records with acks=all, reads them all back in a consumer group, commits,
checks the committed offsets through the admin client, and deletes the
topic. Prints "ok: ..." and exits 0, or prints the first thing that went wrong
and exits 1.
"""

import sys
import time
import uuid

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

RECORDS = 300
PARTITIONS = 3


def fail(msg):
    print("fail: " + msg)
    sys.exit(1)


def main():
    seeds = sys.argv[1]
    topic = "compat-kafka-python-" + uuid.uuid4().hex[:8]
    group = topic + "-group"
    admin = KafkaAdminClient(bootstrap_servers=seeds, client_id="compat-admin")

    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    deadline = time.time() + 30
    while topic not in admin.list_topics():
        if time.time() > deadline:
            fail("created topic %s not listed by Metadata" % topic)
        time.sleep(0.2)

    producer = KafkaProducer(bootstrap_servers=seeds, acks="all", linger_ms=5)
    futures = [
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i)
        for i in range(RECORDS)
    ]
    for f in futures:
        f.get(timeout=30)
    producer.close()

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=seeds,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=30000,
    )
    seen = {}
    for msg in consumer:
        where = (msg.partition, msg.offset)
        if where in seen:
            fail("offset %d of partition %d seen twice" % (msg.offset, msg.partition))
        seen[where] = msg.value
        if len(seen) == RECORDS:
            break
    if len(seen) != RECORDS:
        fail("consumed %d of %d records" % (len(seen), RECORDS))
    want = {b"v%d" % i for i in range(RECORDS)}
    if set(seen.values()) != want:
        fail("consumed values differ from those produced")
    consumer.commit()
    consumer.close()

    committed = admin.list_consumer_group_offsets(group)
    per_partition = {tp.partition: om.offset for tp, om in committed.items() if tp.topic == topic}
    ends = {}
    for (p, off) in seen:
        ends[p] = max(ends.get(p, -1), off + 1)
    if per_partition != ends:
        fail("committed offsets %s, consumed up to %s" % (per_partition, ends))

    admin.delete_topics([topic])
    admin.close()
    print("ok: %d records over %d partitions, committed %s" % (RECORDS, PARTITIONS, sorted(per_partition.items())))


if __name__ == "__main__":
    main()
