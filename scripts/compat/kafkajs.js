// KafkaJS (from the npm registry) against a broker: an admin and a
// produce/consume round trip, as a user of that library would run it.
//
//     NODE_PATH=<dir>/node_modules node kafkajs.js HOST:PORT
//
// Creates a topic of 3 partitions, checks its metadata, produces 300 records
// with an idempotent acks=all producer, reads them all back in a consumer
// group, checks the group's committed offsets through the admin client, and
// deletes the topic. Prints "ok: ..." and exits 0, or prints the first thing
// that went wrong and exits 1.
'use strict';

const crypto = require('crypto');
const { Kafka, Partitioners, logLevel } = require('kafkajs');

const RECORDS = 300;
const PARTITIONS = 3;

async function main() {
  const seeds = process.argv[2].split(',');
  const kafka = new Kafka({ clientId: 'compat-kafkajs', brokers: seeds, logLevel: logLevel.WARN });
  const topic = 'compat-kafkajs-' + crypto.randomBytes(4).toString('hex');
  const groupId = topic + '-group';

  const admin = kafka.admin();
  await admin.connect();
  if (!(await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }], waitForLeaders: true }))) {
    throw new Error('createTopics answered that ' + topic + ' was not created');
  }
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  if (meta.topics[0].partitions.length !== PARTITIONS) {
    throw new Error('metadata lists ' + meta.topics[0].partitions.length + ' partitions, want ' + PARTITIONS);
  }

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const messages = [];
  for (let i = 0; i < RECORDS; i++) messages.push({ key: 'k' + i, value: 'v' + i });
  for (let i = 0; i < RECORDS; i += 50) {
    await producer.send({ topic, acks: -1, messages: messages.slice(i, i + 50) });
  }
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  const seen = new Map();
  const ends = {};
  let duplicate = null;
  const done = new Promise((resolve) => {
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        const where = partition + '/' + message.offset;
        if (seen.has(where)) duplicate = where;
        seen.set(where, message.value.toString());
        ends[partition] = Math.max(ends[partition] || 0, Number(message.offset) + 1);
        if (seen.size >= RECORDS) resolve();
      },
    });
  });
  const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error('consumed ' + seen.size + ' of ' + RECORDS + ' records in 60s')), 60000));
  await Promise.race([done, timeout]);
  // eachMessage resolves offsets; stopping the consumer commits them.
  await consumer.stop();
  await consumer.disconnect();
  if (duplicate) throw new Error('offset ' + duplicate + ' seen twice');
  const values = new Set(seen.values());
  for (const m of messages) {
    if (!values.has(m.value)) throw new Error('value ' + m.value + ' produced but not consumed');
  }

  const offsets = await admin.fetchOffsets({ groupId, topics: [topic] });
  const committed = {};
  for (const p of offsets[0].partitions) committed[p.partition] = Number(p.offset);
  for (const p of Object.keys(ends)) {
    if (committed[p] !== ends[p]) {
      throw new Error('partition ' + p + ' committed ' + committed[p] + ', consumed up to ' + ends[p]);
    }
  }
  await admin.deleteTopics({ topics: [topic] });
  await admin.disconnect();
  console.log('ok: ' + RECORDS + ' records over ' + PARTITIONS + ' partitions, committed ' + JSON.stringify(committed));
}

main().then(() => process.exit(0), (err) => {
  console.log('fail: ' + (err && err.message ? err.message : err));
  process.exit(1);
});
