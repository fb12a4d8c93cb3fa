//! The CQL native protocol (v4) side of the timers suite: the statements the driver
//! strategies send, and the server that answers them ([`server`], `serve --protocol cql`).
//!
//! The server knows four statements: the prepared write of the load ([`INSERT`]), the
//! query of its counters ([`STATS`]), and the driver's topology queries of `system.local`
//! and `system.peers` (one node, 127.0.0.1, its tokens, `Murmur3Partitioner`). The driver
//! strategies turn schema fetching off, so nothing reads `system_schema`.

pub mod server;

/// The load's write: a `bigint` key (the partition key), the value, and whether the request
/// was issued inside the measured window (the server counts those, as `FLAG_MEASURED` does
/// in our own protocol).
pub const INSERT: &str = "INSERT INTO timers.kv (key, value, measured) VALUES (?, ?, ?)";

/// The server's counters over all its connections: `bigint` measured requests received,
/// measured requests answered late (slow), and the connections open (the one asking
/// included), as one row.
pub const STATS: &str = "SELECT measured_requests, measured_slow, connections FROM timers.stats";

/// The server's one node, as `system.local` describes it.
pub const HOST_ID: [u8; 16] = *b"timers-cql-node1";
pub const DATA_CENTER: &str = "datacenter1";
pub const RACK: &str = "rack1";
pub const CLUSTER_NAME: &str = "timers";
pub const PARTITIONER: &str = "org.apache.cassandra.dht.Murmur3Partitioner";
/// The node's tokens: eight evenly spaced over the Murmur3 ring, so the node owns it all.
pub fn tokens() -> Vec<String> {
    (-4..4i64).map(|k| (k * (1 << 61)).to_string()).collect()
}
