//! The CQL v4 server (`serve --protocol cql`): what the scylla driver needs to connect and
//! to write through a prepared statement, answered as [`crate::server`] answers our own
//! protocol.
//!
//! Per connection a reader task parses request frames and a writer task writes the answers
//! in batches. Request bodies are parsed with `scylla-cql`'s request types (`Startup`,
//! `Query`, `ExecuteV2` through `DeserializableRequest`; PREPARE's and REGISTER's bodies,
//! which have no such impl, with its `types` readers); responses are built with its `types`
//! writers and opcodes. An EXECUTE of [`INSERT`] gets the same decision as a `WRITE` of our
//! protocol ([`ServerConfig::delay`], the same per-connection seed): answered at once, or
//! by its own task after the service time or the slow delay. Prepared ids are the
//! statement's text, so the server keeps no per-statement state. The measured requests and
//! the slow ones among them are counted over all connections (the driver spreads a run's
//! requests over its pool) and read with [`STATS`], with the connections open.
//!
//! As [`crate::server`]'s, a connection's reader waits while its writer's queue or its
//! delayed answers are full, and accepting survives a lack of descriptors. No answer grows
//! past [`MAX_REPLY`] bytes (a statement's text is at most [`MAX_STATEMENT`]): a statement
//! whose answer would is refused with an `Invalid` error naming the limit.

use std::collections::HashMap;
use std::io;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use scylla_cql::frame::protocol_features::ProtocolFeatures;
use scylla_cql::frame::request::execute::ExecuteV2;
use scylla_cql::frame::request::{DeserializableRequest, Query, RequestOpcode, Startup};
use scylla_cql::frame::response::ResponseOpcode;
use scylla_cql::frame::types::{self, RawValue};
use scylla_cql::serialize::row::SerializedValues;
use tokio::io::AsyncReadExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};

use super::{CLUSTER_NAME, DATA_CENTER, HOST_ID, INSERT, PARTITIONER, RACK, STATS};
use crate::server::{accept, write_batched, ServerConfig, MAX_DELAYED, READ_BUFFER, REPLY_QUEUE};

/// CQL v4 frame header: version, flags, stream (i16), opcode, body length (u32).
const HEADER_LEN: usize = 9;
const REQUEST_VERSION: u8 = 0x04;
const RESPONSE_VERSION: u8 = 0x84;
/// Largest body accepted (the protocol's own limit is 256 MiB).
const MAX_BODY: usize = 16 << 20;
/// Largest answer frame the server sends; a statement whose answer would be longer is
/// refused (the driver's topology rows take under 1 KiB).
pub const MAX_REPLY: usize = 64 << 10;
/// Longest statement text the server takes (the driver's statements are under 200 bytes;
/// a prepared id is the text, and goes back in the answer).
pub const MAX_STATEMENT: usize = 4 << 10;
/// Frame flags the server cannot honour (it offers no compression).
const FLAG_COMPRESSION: u8 = 0x01;
const FLAG_CUSTOM_PAYLOAD: u8 = 0x04;
/// Error codes (native protocol v4, section 9).
const ERR_PROTOCOL: i32 = 0x000A;
const ERR_INVALID: i32 = 0x2200;
/// RESULT kinds.
const RESULT_VOID: i32 = 0x0001;
const RESULT_ROWS: i32 = 0x0002;
const RESULT_PREPARED: i32 = 0x0004;
/// Metadata flags.
const META_GLOBAL_TABLE_SPEC: i32 = 0x0001;
const META_NO_METADATA: i32 = 0x0004;

/// Measured requests over all connections, and the connections open.
#[derive(Default)]
struct Counters {
    measured_requests: AtomicU64,
    measured_slow: AtomicU64,
    connections: AtomicU64,
}

/// Counts a connection open while it lives.
struct Open(Arc<Counters>);

impl Open {
    fn new(counters: &Arc<Counters>) -> Open {
        counters.connections.fetch_add(1, Ordering::Relaxed);
        Open(Arc::clone(counters))
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Accepts connections on `listener` until accepting fails.
pub async fn accept_loop(listener: TcpListener, config: Arc<ServerConfig>) -> io::Result<()> {
    let counters = Arc::new(Counters::default());
    let mut conn_no = 0u64;
    loop {
        let socket = accept(&listener, "timers cql server").await?;
        tokio::spawn(serve_connection(
            socket,
            Arc::clone(&config),
            Arc::clone(&counters),
            conn_no,
        ));
        conn_no += 1;
    }
}

/// One answer on its way to the writer: the write's empty result, or a whole frame.
enum Reply {
    Void(i16),
    Frame(Vec<u8>),
}

/// What serving a request gave.
enum Served {
    /// The answer, due at once.
    Now(Reply),
    /// The write's empty result, due after this delay.
    Later(Duration),
}

/// `reply`, or an `Invalid` error in its place if it is longer than [`MAX_REPLY`].
fn limited(reply: Reply, stream: i16) -> Reply {
    match reply {
        Reply::Frame(bytes) if bytes.len() > MAX_REPLY => {
            let mut out = Vec::new();
            let message = format!(
                "the answer of {} bytes would exceed the timers server's limit of {MAX_REPLY} \
                 bytes",
                bytes.len()
            );
            frame(&mut out, stream, ResponseOpcode::Error, |b| {
                write_error(ERR_INVALID, &message, b)
            });
            Reply::Frame(out)
        }
        reply => reply,
    }
}

async fn serve_connection(
    socket: TcpStream,
    config: Arc<ServerConfig>,
    counters: Arc<Counters>,
    conn_no: u64,
) {
    let _open = Open::new(&counters);
    let (rd, wr) = socket.into_split();
    let (replies, rx) = mpsc::channel(REPLY_QUEUE);
    tokio::spawn(write_replies(wr, rx));
    let mut conn = Conn {
        replies,
        delayed: Arc::new(Semaphore::new(MAX_DELAYED)),
        rng: config.rng(conn_no),
        config,
        counters,
    };
    if let Err(e) = conn.read_requests(rd).await {
        // The client hanging up is normal; broken frames are not.
        if e.kind() == io::ErrorKind::InvalidData {
            eprintln!("timers cql server: connection {conn_no}: {e}");
        }
    }
}

/// A statement the server knows.
#[derive(Debug, PartialEq, Eq)]
enum Statement<'a> {
    Insert,
    Stats,
    /// A SELECT of `system.local` (`local`) or `system.peers`, naming these columns.
    Topology {
        local: bool,
        columns: Vec<&'a str>,
    },
}

/// The CQL type of a column the server can return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ColumnType {
    BigInt,
    Blob,
    Boolean,
    Inet,
    Text,
    TextSet,
    Uuid,
}

impl ColumnType {
    fn write_option(self, out: &mut Vec<u8>) {
        let id = match self {
            ColumnType::BigInt => 0x0002,
            ColumnType::Blob => 0x0003,
            ColumnType::Boolean => 0x0004,
            ColumnType::Inet => 0x0010,
            ColumnType::Text => 0x000D,
            ColumnType::Uuid => 0x000C,
            ColumnType::TextSet => {
                types::write_short(0x0022, out);
                0x000D
            }
        };
        types::write_short(id, out);
    }
}

/// The `system.local` / `system.peers` columns a driver may select, and their types.
fn topology_column(name: &str) -> Option<ColumnType> {
    Some(match name {
        "host_id" | "schema_version" => ColumnType::Uuid,
        "peer" | "rpc_address" | "broadcast_address" | "listen_address" | "preferred_ip" => {
            ColumnType::Inet
        }
        "key"
        | "data_center"
        | "rack"
        | "cluster_name"
        | "partitioner"
        | "release_version"
        | "cql_version"
        | "native_protocol_version" => ColumnType::Text,
        "tokens" => ColumnType::TextSet,
        _ => return None,
    })
}

/// The local node's value of a topology column, as a cell's bytes.
fn local_cell(name: &str, out: &mut Vec<u8>) {
    let text = |s: &str, out: &mut Vec<u8>| write_cell(s.as_bytes(), out);
    match name {
        "host_id" | "schema_version" => write_cell(&HOST_ID, out),
        "peer" | "rpc_address" | "broadcast_address" | "listen_address" | "preferred_ip" => {
            write_cell(&Ipv4Addr::LOCALHOST.octets(), out)
        }
        "key" => text("local", out),
        "data_center" => text(DATA_CENTER, out),
        "rack" => text(RACK, out),
        "cluster_name" => text(CLUSTER_NAME, out),
        "partitioner" => text(PARTITIONER, out),
        "release_version" => text("3.0.8", out),
        "cql_version" => text("3.3.1", out),
        "native_protocol_version" => text("4", out),
        "tokens" => {
            let tokens = super::tokens();
            let mut set = Vec::new();
            types::write_int(tokens.len() as i32, &mut set);
            for token in &tokens {
                write_cell(token.as_bytes(), &mut set);
            }
            write_cell(&set, out);
        }
        _ => unreachable!("columns are checked by topology_column"),
    }
}

/// `[bytes]`: an int length and the bytes (cells here are far below 2 GiB).
fn write_cell(bytes: &[u8], out: &mut Vec<u8>) {
    types::write_int(bytes.len() as i32, out);
    out.extend_from_slice(bytes);
}

/// Recognises a statement by its text, or says why not.
fn classify(text: &str) -> Result<Statement<'_>, String> {
    if text.len() > MAX_STATEMENT {
        return Err(format!(
            "a statement of {} bytes: the timers server takes at most {MAX_STATEMENT}",
            text.len()
        ));
    }
    if text == INSERT {
        return Ok(Statement::Insert);
    }
    if text == STATS {
        return Ok(Statement::Stats);
    }
    let unknown = || format!("statement not supported by the timers server: {text:.200}");
    let rest = text.strip_prefix("SELECT ").ok_or_else(unknown)?;
    let (columns, from) = rest.split_once(" FROM ").ok_or_else(unknown)?;
    let local = match from.split_whitespace().next() {
        Some("system.local") => true,
        Some("system.peers") => false,
        _ => return Err(unknown()),
    };
    let columns: Vec<&str> = columns.split(',').map(str::trim).collect();
    if let Some(bad) = columns.iter().find(|c| topology_column(c).is_none()) {
        return Err(format!("unknown column '{bad:.100}' in: {text:.200}"));
    }
    Ok(Statement::Topology { local, columns })
}

/// Appends a response frame whose body `body` writes.
fn frame(out: &mut Vec<u8>, stream: i16, opcode: ResponseOpcode, body: impl FnOnce(&mut Vec<u8>)) {
    out.push(RESPONSE_VERSION);
    out.push(0);
    out.extend_from_slice(&stream.to_be_bytes());
    out.push(opcode as u8);
    let len_at = out.len();
    out.extend_from_slice(&[0; 4]);
    body(out);
    let len = u32::try_from(out.len() - len_at - 4).expect("bodies stay below 4 GiB");
    out[len_at..len_at + 4].copy_from_slice(&len.to_be_bytes());
}

/// `[string]` of a text known to be short.
fn write_string(s: &str, out: &mut Vec<u8>) {
    types::write_string(s, out).expect("strings here are below 64 KiB");
}

/// Column specs under one global table spec.
fn write_specs(keyspace: &str, table: &str, columns: &[(&str, ColumnType)], out: &mut Vec<u8>) {
    write_string(keyspace, out);
    write_string(table, out);
    for (name, ty) in columns {
        write_string(name, out);
        ty.write_option(out);
    }
}

/// Result metadata of a statement's rows (none for the write).
fn write_result_metadata(statement: &Statement<'_>, out: &mut Vec<u8>) {
    match statement {
        Statement::Insert => {
            types::write_int(META_NO_METADATA, out);
            types::write_int(0, out);
        }
        Statement::Stats => {
            types::write_int(META_GLOBAL_TABLE_SPEC, out);
            types::write_int(3, out);
            let columns = [
                ("measured_requests", ColumnType::BigInt),
                ("measured_slow", ColumnType::BigInt),
                ("connections", ColumnType::BigInt),
            ];
            write_specs("timers", "stats", &columns, out);
        }
        Statement::Topology { local, columns } => {
            types::write_int(META_GLOBAL_TABLE_SPEC, out);
            types::write_int(columns.len() as i32, out);
            let specs: Vec<(&str, ColumnType)> = columns
                .iter()
                .map(|c| (*c, topology_column(c).expect("checked by classify")))
                .collect();
            let table = if *local { "local" } else { "peers" };
            write_specs("system", table, &specs, out);
        }
    }
}

/// PREPARED result: the id (the statement's text), the bind markers' metadata, the result
/// metadata.
fn write_prepared(text: &str, statement: &Statement<'_>, out: &mut Vec<u8>) {
    types::write_int(RESULT_PREPARED, out);
    types::write_short_bytes(text.as_bytes(), out).expect("known statements are short");
    if *statement == Statement::Insert {
        types::write_int(META_GLOBAL_TABLE_SPEC, out);
        types::write_int(3, out);
        // One partition key column, bind marker 0.
        types::write_int(1, out);
        types::write_short(0, out);
        let markers = [
            ("key", ColumnType::BigInt),
            ("value", ColumnType::Blob),
            ("measured", ColumnType::Boolean),
        ];
        write_specs("timers", "kv", &markers, out);
    } else {
        types::write_int(0, out);
        types::write_int(0, out);
        types::write_int(0, out);
    }
    write_result_metadata(statement, out);
}

fn write_error(code: i32, message: &str, out: &mut Vec<u8>) {
    types::write_int(code, out);
    let mut end = message.len().min(1000);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    write_string(&message[..end], out);
}

/// One connection's reader state.
struct Conn {
    replies: mpsc::Sender<Reply>,
    /// Room for the answers waiting for their delay.
    delayed: Arc<Semaphore>,
    config: Arc<ServerConfig>,
    counters: Arc<Counters>,
    rng: rand::rngs::SmallRng,
}

impl Conn {
    /// Sends the empty result of a write to `stream` after `delay`, from a task of its own;
    /// waits while [`MAX_DELAYED`] answers are waiting already.
    async fn answer_later(&self, stream: i16, delay: Duration) {
        let Ok(slot) = Arc::clone(&self.delayed).acquire_owned().await else {
            unreachable!("the semaphore is never closed");
        };
        let replies = self.replies.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            // A failed send means the writer is gone; the reader stops soon after.
            let _ = replies.send(Reply::Void(stream)).await;
            drop(slot);
        });
    }

    async fn read_requests(&mut self, mut rd: OwnedReadHalf) -> io::Result<()> {
        let mut buf: Vec<u8> = Vec::with_capacity(READ_BUFFER);
        let mut start = 0;
        loop {
            if start > 0 && start == buf.len() {
                buf.clear();
                start = 0;
            } else if start > READ_BUFFER / 2 {
                buf.drain(..start);
                start = 0;
            }
            if rd.read_buf(&mut buf).await? == 0 {
                return Ok(());
            }
            while let Some(header) = buf.get(start..start + HEADER_LEN) {
                let len = u32::from_be_bytes([header[5], header[6], header[7], header[8]]);
                let len = len as usize;
                if len > MAX_BODY {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("frame body of {len} bytes (largest accepted: {MAX_BODY})"),
                    ));
                }
                let end = start + HEADER_LEN + len;
                if buf.len() < end {
                    buf.reserve(end - buf.len());
                    break;
                }
                let (version, flags, opcode) = (header[0], header[1], header[4]);
                let stream = i16::from_be_bytes([header[2], header[3]]);
                let body = &buf[start + HEADER_LEN..end];
                let reply = match self.serve(version, flags, stream, opcode, body) {
                    Served::Now(reply) => Some(reply),
                    Served::Later(delay) => {
                        self.answer_later(stream, delay).await;
                        None
                    }
                };
                // The writer is gone (the client stopped reading or hung up): so is this
                // connection.
                if let Some(reply) = reply {
                    if self.replies.send(limited(reply, stream)).await.is_err() {
                        return Ok(());
                    }
                }
                start = end;
            }
        }
    }

    /// Serves one request: its answer, or the delay of the write's empty result.
    fn serve(&mut self, version: u8, flags: u8, stream: i16, opcode: u8, body: &[u8]) -> Served {
        let mut out = Vec::new();
        let error = |code: i32, message: &str| {
            let mut out = Vec::new();
            frame(&mut out, stream, ResponseOpcode::Error, |b| {
                write_error(code, message, b)
            });
            Served::Now(Reply::Frame(out))
        };
        if version != REQUEST_VERSION {
            return error(
                ERR_PROTOCOL,
                "the timers server speaks only native protocol v4",
            );
        }
        if flags & FLAG_COMPRESSION != 0 {
            return error(ERR_PROTOCOL, "compression was not offered");
        }
        let mut body = body;
        if flags & FLAG_CUSTOM_PAYLOAD != 0 && types::read_bytes_map(&mut body).is_err() {
            return error(ERR_PROTOCOL, "malformed custom payload");
        }
        let features = ProtocolFeatures::default();
        match RequestOpcode::try_from(opcode) {
            Ok(RequestOpcode::Options) => {
                let supported = HashMap::from([
                    ("CQL_VERSION".to_string(), vec!["3.3.1".to_string()]),
                    ("COMPRESSION".to_string(), Vec::new()),
                ]);
                frame(&mut out, stream, ResponseOpcode::Supported, |b| {
                    types::write_string_multimap(&supported, b).expect("a short map")
                });
            }
            Ok(RequestOpcode::Startup) => {
                if let Err(e) = Startup::deserialize_with_features(&mut body, &features) {
                    return error(ERR_PROTOCOL, &format!("malformed STARTUP: {e}"));
                }
                frame(&mut out, stream, ResponseOpcode::Ready, |_| {});
            }
            Ok(RequestOpcode::Register) => {
                if let Err(e) = types::read_string_list(&mut body) {
                    return error(ERR_PROTOCOL, &format!("malformed REGISTER: {e}"));
                }
                // Registered, but one node that never changes sends no event.
                frame(&mut out, stream, ResponseOpcode::Ready, |_| {});
            }
            Ok(RequestOpcode::Prepare) => {
                let text = match types::read_long_string(&mut body) {
                    Ok(text) => text,
                    Err(e) => return error(ERR_PROTOCOL, &format!("malformed PREPARE: {e}")),
                };
                match classify(text) {
                    Ok(statement) => frame(&mut out, stream, ResponseOpcode::Result, |b| {
                        write_prepared(text, &statement, b)
                    }),
                    Err(message) => return error(ERR_INVALID, &message),
                }
            }
            Ok(RequestOpcode::Execute) => {
                let execute = match ExecuteV2::deserialize_with_features(&mut body, &features) {
                    Ok(execute) => execute,
                    Err(e) => return error(ERR_PROTOCOL, &format!("malformed EXECUTE: {e}")),
                };
                let Ok(text) = std::str::from_utf8(execute.id.as_ref()) else {
                    return error(ERR_INVALID, "unknown prepared statement id");
                };
                return match classify(text) {
                    Ok(statement) => self.run(stream, &statement, &execute.parameters.values),
                    Err(message) => error(ERR_INVALID, &message),
                };
            }
            Ok(RequestOpcode::Query) => {
                let query = match Query::deserialize_with_features(&mut body, &features) {
                    Ok(query) => query,
                    Err(e) => return error(ERR_PROTOCOL, &format!("malformed QUERY: {e}")),
                };
                return match classify(&query.contents) {
                    Ok(statement) => self.run(stream, &statement, &query.parameters.values),
                    Err(message) => error(ERR_INVALID, &message),
                };
            }
            _ => return error(ERR_PROTOCOL, &format!("opcode {opcode:#04x} not supported")),
        }
        Served::Now(Reply::Frame(out))
    }

    /// Runs a statement; the write's answer may be delayed.
    fn run(&mut self, stream: i16, statement: &Statement<'_>, values: &SerializedValues) -> Served {
        let mut out = Vec::new();
        match statement {
            Statement::Insert => {
                let mut bound = values.iter();
                let measured = match (bound.next(), bound.next(), bound.next(), bound.next()) {
                    (
                        Some(RawValue::Value(key)),
                        Some(RawValue::Value(_)),
                        Some(RawValue::Value(measured)),
                        None,
                    ) if key.len() == 8 && measured.len() == 1 => measured[0] != 0,
                    _ => {
                        frame(&mut out, stream, ResponseOpcode::Error, |b| {
                            write_error(
                                ERR_INVALID,
                                "INSERT takes a bigint key, a blob and a boolean",
                                b,
                            )
                        });
                        return Served::Now(Reply::Frame(out));
                    }
                };
                let (delay, slow) = self.config.delay(&mut self.rng);
                if measured {
                    self.counters
                        .measured_requests
                        .fetch_add(1, Ordering::Relaxed);
                    self.counters
                        .measured_slow
                        .fetch_add(u64::from(slow), Ordering::Relaxed);
                }
                if delay.is_zero() {
                    return Served::Now(Reply::Void(stream));
                }
                return Served::Later(delay);
            }
            Statement::Stats => frame(&mut out, stream, ResponseOpcode::Result, |b| {
                types::write_int(RESULT_ROWS, b);
                write_result_metadata(statement, b);
                types::write_int(1, b);
                for counter in [
                    &self.counters.measured_requests,
                    &self.counters.measured_slow,
                    &self.counters.connections,
                ] {
                    let value = counter.load(Ordering::Relaxed) as i64;
                    write_cell(&value.to_be_bytes(), b);
                }
            }),
            Statement::Topology { local, columns } => {
                frame(&mut out, stream, ResponseOpcode::Result, |b| {
                    types::write_int(RESULT_ROWS, b);
                    write_result_metadata(statement, b);
                    // One node: itself in system.local, nobody in system.peers.
                    types::write_int(i32::from(*local), b);
                    if *local {
                        for column in columns {
                            local_cell(column, b);
                        }
                    }
                })
            }
        }
        Served::Now(Reply::Frame(out))
    }
}

async fn write_replies(wr: OwnedWriteHalf, rx: mpsc::Receiver<Reply>) {
    write_batched(wr, rx, |reply: Reply, out: &mut Vec<u8>| match reply {
        Reply::Void(stream) => frame(out, stream, ResponseOpcode::Result, |b| {
            types::write_int(RESULT_VOID, b)
        }),
        Reply::Frame(bytes) => out.extend_from_slice(&bytes),
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tokens_split_the_murmur3_ring_evenly() {
        let tokens: Vec<i64> = super::super::tokens()
            .iter()
            .map(|t| t.parse().unwrap())
            .collect();
        assert_eq!(tokens.len(), 8);
        assert_eq!(tokens[0], i64::MIN);
        assert!(
            tokens.windows(2).all(|w| w[1] - w[0] == 1 << 61),
            "{tokens:?}"
        );
    }

    #[test]
    fn answers_stay_within_the_stated_limit() {
        let columns = vec!["tokens"; 500].join(", ");
        let text = format!("SELECT {columns} FROM system.local");
        assert!(text.len() <= MAX_STATEMENT);
        let statement = classify(&text).unwrap();
        let mut out = Vec::new();
        frame(&mut out, 3, ResponseOpcode::Result, |b| {
            write_result_metadata(&statement, b)
        });
        let Reply::Frame(bytes) = limited(Reply::Frame(vec![0; MAX_REPLY + 1]), 3) else {
            panic!("a frame in, a frame out");
        };
        assert_eq!(bytes[4], ResponseOpcode::Error as u8);
        assert!(bytes.len() < 1024);
        let Reply::Frame(kept) = limited(Reply::Frame(out.clone()), 3) else {
            panic!("a frame in, a frame out");
        };
        assert_eq!(kept, out, "under the limit, unchanged");
        let long = format!(
            "SELECT host_id FROM system.local WHERE key='{}'",
            "x".repeat(5000)
        );
        let e = classify(&long).unwrap_err();
        assert!(e.ends_with("the timers server takes at most 4096"), "{e}");
    }

    #[test]
    fn statements_are_recognised_by_their_text() {
        assert_eq!(classify(INSERT), Ok(Statement::Insert));
        assert_eq!(classify(STATS), Ok(Statement::Stats));
        // The scylla driver 1.9.0's topology queries (src/cluster/metadata/fetching.rs).
        let local = "SELECT host_id, rpc_address, data_center, rack, tokens, cluster_name \
                     FROM system.local WHERE key='local'";
        assert_eq!(
            classify(local),
            Ok(Statement::Topology {
                local: true,
                columns: vec![
                    "host_id",
                    "rpc_address",
                    "data_center",
                    "rack",
                    "tokens",
                    "cluster_name"
                ],
            })
        );
        let peers = "SELECT host_id, rpc_address, data_center, rack, tokens FROM system.peers";
        assert!(matches!(
            classify(peers),
            Ok(Statement::Topology { local: false, .. })
        ));
        let e = classify("SELECT gossip FROM system.local").unwrap_err();
        assert!(e.starts_with("unknown column 'gossip'"), "{e}");
        let e = classify("SELECT keyspace_name FROM system_schema.keyspaces").unwrap_err();
        assert!(e.starts_with("statement not supported"), "{e}");
        assert!(classify("INSERT INTO timers.kv (key) VALUES (?)").is_err());
    }
}
