// Package auth holds who may connect and what they may do: the server side
// of the SASL mechanisms PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802,
// RFC 7677), the users file that stores SCRAM credentials, and the ACL file.
// It knows nothing of the Kafka protocol: the broker frames the messages.
//
// # Passwords
//
// No clear password is ever stored. A user's entry is its SCRAM credential
// per mechanism: salt, PBKDF2 iteration count, StoredKey = H(HMAC(salted,
// "Client Key")) and ServerKey = HMAC(salted, "Server Key"). PLAIN logins
// derive the same keys from the offered password and compare StoredKey, so
// one stored credential serves both mechanisms. An unknown user gets a
// stable decoy salt and the same key-derivation cost, and fails exactly as
// a wrong password does, so replies and timing do not reveal who exists.
//
// Our own SCRAM server rather than a library: the server half is about 200
// lines over crypto/hmac and crypto/pbkdf2, it is fuzzed here, and the tests
// log in with two independent clients (franz-go's and librdkafka's).
//
// # Users file, version 1
//
// Text, one record per line, fields separated by single spaces, written by
// `unilog user add|delete` atomically with mode 0600:
//
//	unilog-users 1
//	user NAME MECHANISM ITERATIONS SALT STORED-KEY SERVER-KEY
//	...
//	crc32c XXXXXXXX
//
// NAME is UTF-8 without white space or control characters; MECHANISM is
// SCRAM-SHA-256 or SCRAM-SHA-512; ITERATIONS is 4096 to 1048576; SALT,
// STORED-KEY and SERVER-KEY are standard base64, the keys exactly one hash
// long. The last line is the CRC-32C (Castagnoli), 8 lower-case hex digits,
// of every byte before it; a file failing it, or of another version, is
// refused whole. A broker rereads the file when its modification time,
// size or inode changes and keeps the last good content if a reread fails.
//
// # ACL file, version 1
//
// Written by hand, so it carries no checksum; everything it does not allow
// is denied, and an unparsable file stops the broker from starting. A
// running broker (ACLFile) looks at the file at most every ACLRecheck and
// rereads it when it changed; an edit that does not parse keeps the last
// good rules and is reported, so a typo neither opens nor closes access.
//
//	unilog-acl 1
//	# PRINCIPAL  OPERATION  PATTERN...
//	alice        produce    orders payments-*
//	alice        consume    orders
//	analytics    consume    *
//	analytics    group      analytics-*
//	etl          transaction etl-*
//	ops          admin      *
//	*            consume    public-*
//
// PRINCIPAL is a SASL user name, the subject common name of a verified
// client certificate when the listener has mutual TLS and no SASL,
// ANONYMOUS otherwise, or * for all of them. OPERATION is produce (Produce,
// InitProducerId), consume (Fetch, ListOffsets, and committing or fetching
// a group's offsets of the topic), group (consumer group APIs, on group
// names), transaction (the transaction APIs and a transactional Produce,
// on transactional ids: Kafka's TRANSACTIONAL_ID resource), admin
// (CreateTopics, DeleteTopics, CreatePartitions) or cluster (Kafka's
// CLUSTER_ACTION, what nodes do to each other: WriteTxnMarkers, and a
// Fetch of any topic; pattern "*"). The nodes log in to each other as
// InterBrokerUser, which holds cluster without a rule; on listeners with
// mutual TLS and no SASL the nodes' certificate names need the rule. Patterns are path.Match
// globs over topic, group or transactional id names: "orders" is exact,
// "orders-*" a prefix, "*" everything. Any topic operation also lets the
// principal see the topic in Metadata and DescribeConfigs. "#" starts a
// comment.
package auth
