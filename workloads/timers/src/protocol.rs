//! Wire format shared by the client and the server.
//!
//! Every frame is a 10-byte header followed by `len` body bytes:
//!
//! ```text
//! | len: u32 | stream: u32 | opcode: u8 | flags: u8 | body: len bytes |
//! ```
//!
//! All integers are little-endian. The stream id names the request a response belongs to, so
//! many requests can be in flight on one connection and be answered in any order.
//!
//! Bodies by opcode:
//! - `WRITE` (request): key `u64` + the value bytes; answered with an empty `DONE`.
//! - `READ` (request): key `u64` + wanted value length `u32`; answered with `VALUE`.
//! - `STATS` (request): empty; answered with `STATS_RESULT` carrying the counters of the
//!   connection it was sent on ([`ServerStats`]).
//! - `ERROR` (response): a UTF-8 message.
//!
//! [`FrameReader`] turns a byte stream into frames; the `encode_*` functions append frames
//! to a write buffer so callers can batch many frames into one socket write.

use std::fmt;
use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Size of the frame header in bytes.
pub const HEADER_LEN: usize = 10;
/// Largest body accepted; anything longer is a protocol error (and a corrupt stream).
pub const MAX_BODY: u32 = 16 << 20;
/// Largest value a `READ` may ask for or a `WRITE` may carry.
pub const MAX_VALUE: u32 = MAX_BODY - 12;

/// Request: store a value.
pub const OP_WRITE: u8 = 0x01;
/// Request: fetch a value.
pub const OP_READ: u8 = 0x02;
/// Request: report this connection's counters.
pub const OP_STATS: u8 = 0x03;
/// Response to `WRITE`: empty body.
pub const OP_DONE: u8 = 0x81;
/// Response to `READ`: the value.
pub const OP_VALUE: u8 = 0x82;
/// Response to `STATS`: [`ServerStats`].
pub const OP_STATS_RESULT: u8 = 0x83;
/// Response to a request the server could not serve: a message.
pub const OP_ERROR: u8 = 0xFF;

/// Request flag: the request was issued inside the measured window.
pub const FLAG_MEASURED: u8 = 0x01;

/// A decoded frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Body length in bytes.
    pub len: u32,
    /// The request this frame belongs to.
    pub stream: u32,
    /// One of the `OP_*` constants.
    pub opcode: u8,
    /// A set of `FLAG_*` bits.
    pub flags: u8,
}

impl Header {
    /// Appends the encoded header to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.stream.to_le_bytes());
        out.push(self.opcode);
        out.push(self.flags);
    }

    /// Decodes a header from the first [`HEADER_LEN`] bytes of `buf`, or `None` if `buf` is
    /// shorter. Fails if the body length is above [`MAX_BODY`].
    pub fn decode(buf: &[u8]) -> Result<Option<Header>, ProtocolError> {
        let Some(bytes) = buf.get(..HEADER_LEN) else {
            return Ok(None);
        };
        let len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        if len > MAX_BODY {
            return Err(ProtocolError::BodyTooLong(len));
        }
        Ok(Some(Header {
            len,
            stream: u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
            opcode: bytes[8],
            flags: bytes[9],
        }))
    }
}

/// A frame that breaks the format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    /// The header announces a body above [`MAX_BODY`].
    BodyTooLong(u32),
    /// The body does not match what the opcode needs.
    BadBody { opcode: u8, len: u32 },
    /// An opcode the receiver does not know.
    UnknownOpcode(u8),
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::BodyTooLong(len) => {
                write!(
                    f,
                    "frame body of {len} bytes exceeds the limit of {MAX_BODY}"
                )
            }
            ProtocolError::BadBody { opcode, len } => {
                write!(f, "malformed body of {len} bytes for opcode {opcode:#04x}")
            }
            ProtocolError::UnknownOpcode(op) => write!(f, "unknown opcode {op:#04x}"),
        }
    }
}

impl std::error::Error for ProtocolError {}

impl From<ProtocolError> for io::Error {
    fn from(e: ProtocolError) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }
}

/// A request as the server sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// Store `value_len` bytes under `key`.
    Write { key: u64, value_len: u32 },
    /// Fetch `value_len` bytes stored under `key`.
    Read { key: u64, value_len: u32 },
    /// Report the connection's counters.
    Stats,
}

impl Request {
    /// Parses the body of a request frame.
    pub fn decode(header: &Header, body: &[u8]) -> Result<Request, ProtocolError> {
        let bad = || ProtocolError::BadBody {
            opcode: header.opcode,
            len: header.len,
        };
        match header.opcode {
            OP_WRITE => {
                let key = body.get(..8).ok_or_else(bad)?;
                Ok(Request::Write {
                    key: u64::from_le_bytes(key.try_into().map_err(|_| bad())?),
                    value_len: header.len - 8,
                })
            }
            OP_READ => {
                if body.len() != 12 {
                    return Err(bad());
                }
                let value_len = u32::from_le_bytes(body[8..12].try_into().map_err(|_| bad())?);
                if value_len > MAX_VALUE {
                    return Err(bad());
                }
                Ok(Request::Read {
                    key: u64::from_le_bytes(body[..8].try_into().map_err(|_| bad())?),
                    value_len,
                })
            }
            OP_STATS if body.is_empty() => Ok(Request::Stats),
            OP_STATS => Err(bad()),
            other => Err(ProtocolError::UnknownOpcode(other)),
        }
    }
}

/// Appends a `WRITE` request carrying `value` to `out`.
pub fn encode_write(out: &mut Vec<u8>, stream: u32, flags: u8, key: u64, value: &[u8]) {
    Header {
        len: 8 + value.len() as u32,
        stream,
        opcode: OP_WRITE,
        flags,
    }
    .encode(out);
    out.extend_from_slice(&key.to_le_bytes());
    out.extend_from_slice(value);
}

/// Appends a `READ` request for `value_len` bytes to `out`.
pub fn encode_read(out: &mut Vec<u8>, stream: u32, flags: u8, key: u64, value_len: u32) {
    Header {
        len: 12,
        stream,
        opcode: OP_READ,
        flags,
    }
    .encode(out);
    out.extend_from_slice(&key.to_le_bytes());
    out.extend_from_slice(&value_len.to_le_bytes());
}

/// Appends a `STATS` request to `out`.
pub fn encode_stats(out: &mut Vec<u8>, stream: u32) {
    Header {
        len: 0,
        stream,
        opcode: OP_STATS,
        flags: 0,
    }
    .encode(out);
}

/// Appends a response with `opcode` and `body` to `out`.
pub fn encode_response(out: &mut Vec<u8>, stream: u32, opcode: u8, body: &[u8]) {
    Header {
        len: body.len() as u32,
        stream,
        opcode,
        flags: 0,
    }
    .encode(out);
    out.extend_from_slice(body);
}

/// Counters the server keeps per connection, reported by `STATS`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// `WRITE`/`READ` requests received with [`FLAG_MEASURED`].
    pub measured_requests: u64,
    /// Of those, the ones answered only after the slow delay.
    pub measured_slow: u64,
}

impl ServerStats {
    /// Encoded size of a `STATS_RESULT` body.
    pub const ENCODED_LEN: usize = 16;

    /// Encodes the body of a `STATS_RESULT`.
    pub fn to_bytes(&self) -> [u8; Self::ENCODED_LEN] {
        let mut out = [0; Self::ENCODED_LEN];
        out[..8].copy_from_slice(&self.measured_requests.to_le_bytes());
        out[8..].copy_from_slice(&self.measured_slow.to_le_bytes());
        out
    }

    /// Decodes the body of a `STATS_RESULT`.
    pub fn from_bytes(body: &[u8]) -> Result<ServerStats, ProtocolError> {
        let bytes: &[u8; Self::ENCODED_LEN] =
            body.try_into().map_err(|_| ProtocolError::BadBody {
                opcode: OP_STATS_RESULT,
                len: body.len() as u32,
            })?;
        let (requests, slow) = bytes.split_at(8);
        Ok(ServerStats {
            measured_requests: u64::from_le_bytes(requests.try_into().expect("8 bytes")),
            measured_slow: u64::from_le_bytes(slow.try_into().expect("8 bytes")),
        })
    }
}

/// Buffers bytes read from a socket and splits them into frames.
pub struct FrameReader {
    buf: Vec<u8>,
    start: usize,
}

/// One frame borrowed from a [`FrameReader`].
#[derive(Debug)]
pub struct Frame<'a> {
    pub header: Header,
    pub body: &'a [u8],
}

impl FrameReader {
    /// A reader whose buffer starts at `capacity` bytes (it grows for larger frames).
    pub fn with_capacity(capacity: usize) -> FrameReader {
        FrameReader {
            buf: Vec::with_capacity(capacity.max(HEADER_LEN)),
            start: 0,
        }
    }

    /// Reads once from `src` into the buffer; returns the number of bytes read (0 at EOF).
    pub async fn fill<R: AsyncRead + Unpin>(&mut self, src: &mut R) -> io::Result<usize> {
        self.make_room();
        src.read_buf(&mut self.buf).await
    }

    /// Appends bytes as if read from a socket.
    pub fn extend(&mut self, bytes: &[u8]) {
        self.make_room();
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete frame, or `None` until more bytes arrive.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, ProtocolError> {
        let pending = &self.buf[self.start..];
        let Some(header) = Header::decode(pending)? else {
            return Ok(None);
        };
        let end = HEADER_LEN + header.len as usize;
        if pending.len() < end {
            return Ok(None);
        }
        let body_start = self.start + HEADER_LEN;
        self.start += end;
        Ok(Some(Frame {
            header,
            body: &self.buf[body_start..body_start + header.len as usize],
        }))
    }

    /// Whether bytes of an incomplete frame are buffered.
    pub fn has_partial_frame(&self) -> bool {
        self.start < self.buf.len()
    }

    /// Drops consumed bytes and makes sure there is spare capacity for the next read,
    /// enough for the whole of a frame whose header is already buffered.
    fn make_room(&mut self) {
        if self.start > 0 {
            self.buf.copy_within(self.start.., 0);
            self.buf.truncate(self.buf.len() - self.start);
            self.start = 0;
        }
        let wanted = match Header::decode(&self.buf) {
            Ok(Some(h)) => HEADER_LEN + h.len as usize,
            _ => HEADER_LEN,
        };
        let spare_target = wanted
            .saturating_sub(self.buf.len())
            .max(self.buf.capacity() / 2);
        if self.buf.capacity() - self.buf.len() < spare_target {
            self.buf.reserve(spare_target);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(reader: &mut FrameReader) -> Vec<(Header, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some(f) = reader.next_frame().unwrap() {
            out.push((f.header, f.body.to_vec()));
        }
        out
    }

    #[test]
    fn header_round_trips() {
        let h = Header {
            len: 0x0102_0304,
            stream: 0xdead_beef,
            opcode: OP_READ,
            flags: FLAG_MEASURED,
        };
        let mut buf = Vec::new();
        h.encode(&mut buf);
        assert_eq!(buf.len(), HEADER_LEN);
        assert_eq!(&buf[..4], &[4, 3, 2, 1]);
        // A length above MAX_BODY is refused rather than trusted.
        assert_eq!(
            Header::decode(&buf),
            Err(ProtocolError::BodyTooLong(0x0102_0304))
        );
        let h = Header { len: 7, ..h };
        buf.clear();
        h.encode(&mut buf);
        assert_eq!(Header::decode(&buf), Ok(Some(h)));
        assert_eq!(Header::decode(&buf[..HEADER_LEN - 1]), Ok(None));
    }

    #[test]
    fn requests_round_trip() {
        let mut buf = Vec::new();
        encode_write(&mut buf, 7, FLAG_MEASURED, 42, &[9; 100]);
        encode_read(&mut buf, 8, 0, 43, 1000);
        encode_stats(&mut buf, 9);
        let mut reader = FrameReader::with_capacity(16);
        reader.extend(&buf);
        let got = frames(&mut reader);
        assert_eq!(got.len(), 3);
        let decoded: Vec<_> = got
            .iter()
            .map(|(h, b)| (h.stream, h.flags, Request::decode(h, b).unwrap()))
            .collect();
        assert_eq!(
            decoded,
            vec![
                (
                    7,
                    FLAG_MEASURED,
                    Request::Write {
                        key: 42,
                        value_len: 100
                    }
                ),
                (
                    8,
                    0,
                    Request::Read {
                        key: 43,
                        value_len: 1000
                    }
                ),
                (9, 0, Request::Stats),
            ]
        );
        assert!(!reader.has_partial_frame());
    }

    #[test]
    fn responses_round_trip() {
        let stats = ServerStats {
            measured_requests: 123_456,
            measured_slow: 78,
        };
        let mut buf = Vec::new();
        encode_response(&mut buf, 1, OP_DONE, &[]);
        encode_response(&mut buf, 2, OP_VALUE, b"hello");
        encode_response(&mut buf, 3, OP_STATS_RESULT, &stats.to_bytes());
        let mut reader = FrameReader::with_capacity(4);
        reader.extend(&buf);
        let got = frames(&mut reader);
        assert_eq!(got[0].0.opcode, OP_DONE);
        assert!(got[0].1.is_empty());
        assert_eq!((got[1].0.stream, got[1].1.as_slice()), (2, &b"hello"[..]));
        assert_eq!(ServerStats::from_bytes(&got[2].1), Ok(stats));
        assert!(ServerStats::from_bytes(&got[1].1).is_err());
    }

    #[test]
    fn frames_split_across_reads_are_reassembled() {
        let mut buf = Vec::new();
        for stream in 0..50u32 {
            encode_write(
                &mut buf,
                stream,
                0,
                u64::from(stream),
                &vec![1; stream as usize],
            );
        }
        // Feed the stream in awkward pieces; every frame must come out whole and in order.
        let mut reader = FrameReader::with_capacity(8);
        let mut seen = Vec::new();
        for chunk in buf.chunks(7) {
            reader.extend(chunk);
            seen.extend(frames(&mut reader));
        }
        assert_eq!(seen.len(), 50);
        for (i, (h, body)) in seen.iter().enumerate() {
            assert_eq!(h.stream, i as u32);
            assert_eq!(body.len(), 8 + i);
        }
        assert!(!reader.has_partial_frame());
        reader.extend(&buf[..HEADER_LEN + 3]);
        assert!(reader.next_frame().unwrap().is_none());
        assert!(reader.has_partial_frame());
    }

    #[test]
    fn malformed_requests_are_rejected() {
        let h = |opcode, len| Header {
            len,
            stream: 1,
            opcode,
            flags: 0,
        };
        assert_eq!(
            Request::decode(&h(OP_WRITE, 3), &[0; 3]),
            Err(ProtocolError::BadBody {
                opcode: OP_WRITE,
                len: 3
            })
        );
        assert!(Request::decode(&h(OP_READ, 8), &[0; 8]).is_err());
        let mut too_big = [0u8; 12];
        too_big[8..].copy_from_slice(&(MAX_VALUE + 1).to_le_bytes());
        assert!(Request::decode(&h(OP_READ, 12), &too_big).is_err());
        assert!(Request::decode(&h(OP_STATS, 1), &[0]).is_err());
        assert_eq!(
            Request::decode(&h(0x42, 0), &[]),
            Err(ProtocolError::UnknownOpcode(0x42))
        );
    }

    #[tokio::test]
    async fn fill_reads_from_an_async_source() {
        let mut buf = Vec::new();
        encode_read(&mut buf, 5, 0, 6, 7);
        let mut src: &[u8] = &buf;
        let mut reader = FrameReader::with_capacity(4);
        while reader.fill(&mut src).await.unwrap() > 0 {}
        let got = frames(&mut reader);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0.stream, 5);
    }
}
