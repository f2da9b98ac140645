// KafkaJS (from the npm registry) against a broker: exactly-once with its
// transactional producer, as a user of that library would run it.
//
//     NODE_PATH=<dir>/node_modules node kafkajs_txn.js HOST:PORT
//
// Creates a topic of 3 partitions; commits a transaction of 90 records that
// also commits a consumer group's offsets (sendOffsets: AddOffsetsToTxn and
// TxnOffsetCommit), aborts one of 30 records that would commit other
// offsets, commits another of 30; then reads the topic in a read_committed
// consumer group (KafkaJS's default) and checks that it saw every committed
// record once and no aborted one, and that the group's offsets are those of
// the committed transaction only. Deletes the topic. Prints "ok: ..." and
// exits 0, or the first thing that went wrong and exits 1.
'use strict';

const crypto = require('crypto');
const { Kafka, Partitioners, logLevel } = require('kafkajs');

const PARTITIONS = 3;

async function main() {
  const seeds = process.argv[2].split(',');
  const kafka = new Kafka({ clientId: 'compat-kafkajs-txn', brokers: seeds, logLevel: logLevel.WARN });
  const topic = 'compat-kafkajs-txn-' + crypto.randomBytes(4).toString('hex');
  const offsetsGroup = topic + '-offsets';

  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }], waitForLeaders: true });

  const producer = kafka.producer({
    transactionalId: topic + '-producer', idempotent: true, maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  const committed = new Set();
  const run = async (name, n, commit, offset) => {
    const txn = await producer.transaction();
    const messages = [];
    for (let i = 0; i < n; i++) messages.push({ key: name + i, value: name + '-' + i });
    await txn.send({ topic, messages });
    await txn.sendOffsets({
      consumerGroupId: offsetsGroup,
      topics: [{ topic, partitions: [{ partition: 0, offset: String(offset) }] }],
    });
    if (commit) {
      await txn.commit();
      for (const m of messages) committed.add(m.value);
    } else {
      await txn.abort();
    }
  };
  await run('first', 90, true, 7);
  await run('aborted', 30, false, 99);
  await run('second', 30, true, 11);
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: topic + '-reader' });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  const seen = new Map();
  let bad = null;
  const done = new Promise((resolve) => {
    consumer.run({
      eachMessage: async ({ message }) => {
        const v = message.value.toString();
        if (!committed.has(v)) bad = 'saw ' + v + ' of an aborted transaction';
        if (seen.has(v)) bad = 'saw ' + v + ' twice';
        seen.set(v, true);
        if (seen.size >= committed.size) resolve();
      },
    });
  });
  const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error('consumed ' + seen.size + ' of ' + committed.size + ' committed records in 60s')), 60000));
  await Promise.race([done, timeout]);
  await consumer.stop();
  await consumer.disconnect();
  if (bad) throw new Error(bad);

  const offsets = await admin.fetchOffsets({ groupId: offsetsGroup, topics: [topic] });
  const p0 = offsets[0].partitions.find((p) => p.partition === 0);
  if (!p0 || p0.offset !== '11') {
    throw new Error('group ' + offsetsGroup + ' has offset ' + (p0 && p0.offset) + ' for partition 0, want 11 (the last committed transaction\'s)');
  }
  await admin.deleteTopics({ topics: [topic] });
  await admin.disconnect();
  console.log('ok: ' + committed.size + ' committed records read once, 30 aborted never; transactional offsets committed');
}

main().then(() => process.exit(0), (err) => {
  console.log('fail: ' + (err && err.message ? err.message : err));
  process.exit(1);
});
