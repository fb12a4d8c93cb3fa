//! A connection's response-handler map: the single point of truth about which requests are
//! live on the connection.
//!
//! Slots are indexed by stream id. A slot is free, holds the live [`Handler`] of a request
//! waiting for its answer, or is an orphan: its request was resolved without an answer (it
//! timed out or was abandoned), so the stream id stays taken until the late answer arrives
//! and frees it. Whoever takes a live handler out of the map (the reader on an answer, a
//! timeout path on expiry, the drain on abandon, the connection on failure) resolves it,
//! exactly once.
//!
//! Request ids carry a per-connection sequence number next to the stream id, so a stream id
//! reused after its orphan was freed can never be mistaken for the earlier request (a timer
//! that fires late for an old request finds a different id in the slot and does nothing).
//!
//! With the `deadline-tracker` strategy the map also owns the connection's
//! [`DeadlineTracker`]: deadlines are inserted and removed under the same lock as handlers.

use std::sync::Arc;
use std::time::Instant;

use crate::completion::{Completion, ErrorKind};
use crate::deadline_tracker::DeadlineTracker;
use crate::protocol::ServerStats;

/// Bits of a [`RequestId`] that hold the stream id.
const STREAM_BITS: u32 = 24;
/// Stream ids per connection.
pub const MAX_STREAMS: usize = 1 << STREAM_BITS;

/// Names one request of a connection: `sequence << 24 | stream`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(u64);

impl RequestId {
    /// The id of the `seq`-th request of a connection, sent on `stream`.
    pub fn new(stream: u32, seq: u64) -> RequestId {
        debug_assert!((stream as usize) < MAX_STREAMS);
        RequestId(seq << STREAM_BITS | u64::from(stream))
    }

    /// The stream id the request is sent on.
    pub fn stream(self) -> u32 {
        (self.0 & (MAX_STREAMS as u64 - 1)) as u32
    }

    /// The raw value (what the deadline tracker and the timer engines carry).
    pub fn raw(self) -> u64 {
        self.0
    }

    /// The id whose raw value is `raw`.
    pub fn from_raw(raw: u64) -> RequestId {
        RequestId(raw)
    }
}

/// A live request's handler.
pub struct Handler {
    pub id: RequestId,
    pub completion: Arc<Completion>,
    /// When the request times out (`None` without a client-side timeout).
    pub deadline: Option<Instant>,
    /// Issued inside the measured window.
    pub measured: bool,
}

enum Slot {
    Free,
    Live(Handler),
    Orphan { measured: bool },
}

/// A response whose stream id is not in use: the server broke the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownStream(pub u32);

/// See the module documentation.
pub struct HandlerMap {
    slots: Vec<Slot>,
    free: Vec<u32>,
    next_seq: u64,
    live: usize,
    orphans: usize,
    late_responses: u64,
    closed: bool,
    tracker: Option<DeadlineTracker>,
    /// The server's counters, as of the last `STATS` answer.
    pub server_stats: ServerStats,
}

impl HandlerMap {
    /// An empty map; `tracker` enforces deadlines for the `deadline-tracker` strategy.
    pub fn new(tracker: Option<DeadlineTracker>) -> HandlerMap {
        HandlerMap {
            slots: Vec::new(),
            free: Vec::new(),
            next_seq: 0,
            live: 0,
            orphans: 0,
            late_responses: 0,
            closed: false,
            tracker,
            server_stats: ServerStats::default(),
        }
    }

    /// Takes a free stream id for a new live request and returns the request's id.
    pub fn insert(
        &mut self,
        completion: Arc<Completion>,
        deadline: Option<Instant>,
        measured: bool,
    ) -> Result<RequestId, ErrorKind> {
        if self.closed {
            return Err(ErrorKind::ConnectionClosed);
        }
        let stream = match self.free.pop() {
            Some(stream) => stream,
            None if self.slots.len() < MAX_STREAMS => {
                self.slots.push(Slot::Free);
                (self.slots.len() - 1) as u32
            }
            None => return Err(ErrorKind::StreamsExhausted),
        };
        let id = RequestId::new(stream, self.next_seq);
        self.next_seq += 1;
        if let (Some(tracker), Some(deadline)) = (self.tracker.as_mut(), deadline) {
            tracker.insert(deadline.into(), id.raw());
        }
        self.slots[stream as usize] = Slot::Live(Handler {
            id,
            completion,
            deadline,
            measured,
        });
        self.live += 1;
        Ok(id)
    }

    /// An answer came on `stream`: returns its live handler (the caller resolves it), or
    /// `None` for the late answer of an orphan, which frees the stream id.
    pub fn take_answered(&mut self, stream: u32) -> Result<Option<Handler>, UnknownStream> {
        let slot = self
            .slots
            .get_mut(stream as usize)
            .ok_or(UnknownStream(stream))?;
        match std::mem::replace(slot, Slot::Free) {
            Slot::Live(handler) => {
                self.live -= 1;
                self.free.push(stream);
                if let (Some(tracker), Some(deadline)) = (self.tracker.as_mut(), handler.deadline) {
                    tracker.remove(deadline.into(), handler.id.raw());
                }
                Ok(Some(handler))
            }
            Slot::Orphan { measured } => {
                self.orphans -= 1;
                self.free.push(stream);
                if measured {
                    self.late_responses += 1;
                }
                Ok(None)
            }
            Slot::Free => Err(UnknownStream(stream)),
        }
    }

    /// Turns the live request `id` into an orphan and returns its handler; `None` if `id`
    /// is no longer live (it was answered or resolved another way first).
    pub fn orphan(&mut self, id: RequestId) -> Option<Handler> {
        let handler = self.orphan_untracked(id)?;
        if let (Some(tracker), Some(deadline)) = (self.tracker.as_mut(), handler.deadline) {
            tracker.remove(deadline.into(), id.raw());
        }
        Some(handler)
    }

    fn orphan_untracked(&mut self, id: RequestId) -> Option<Handler> {
        let slot = self.slots.get_mut(id.stream() as usize)?;
        let measured = match slot {
            Slot::Live(h) if h.id == id => h.measured,
            _ => return None,
        };
        let Slot::Live(handler) = std::mem::replace(slot, Slot::Orphan { measured }) else {
            unreachable!("the slot was checked to be live")
        };
        self.live -= 1;
        self.orphans += 1;
        Some(handler)
    }

    /// Pops the tracker's deadlines due at `now` and orphans their requests, pushing the
    /// handlers to resolve as timed out onto `expired`. `ids` is scratch space.
    pub fn expire_due(&mut self, now: Instant, ids: &mut Vec<u64>, expired: &mut Vec<Handler>) {
        let Some(tracker) = self.tracker.as_mut() else {
            return;
        };
        ids.clear();
        tracker.pop_expired(now.into(), ids);
        for raw in ids.drain(..) {
            // Popped ids have left the tracker already; a popped id whose request was
            // answered or failed meanwhile is not live any more and is skipped.
            if let Some(handler) = self.orphan_untracked(RequestId::from_raw(raw)) {
                expired.push(handler);
            }
        }
    }

    /// Orphans every live request (the drain gives up on them), pushing their handlers
    /// onto `out`.
    pub fn orphan_all(&mut self, out: &mut Vec<Handler>) {
        for stream in 0..self.slots.len() {
            if let Slot::Live(h) = &self.slots[stream] {
                let id = h.id;
                out.extend(self.orphan(id));
            }
        }
    }

    /// Closes the map for good: every live handler goes to `out` (no answer will come),
    /// orphans are forgotten and new requests fail.
    pub fn close(&mut self, out: &mut Vec<Handler>) {
        self.closed = true;
        for (stream, slot) in self.slots.iter_mut().enumerate() {
            match std::mem::replace(slot, Slot::Free) {
                Slot::Live(handler) => {
                    if let (Some(tracker), Some(deadline)) =
                        (self.tracker.as_mut(), handler.deadline)
                    {
                        tracker.remove(deadline.into(), handler.id.raw());
                    }
                    out.push(handler);
                }
                Slot::Orphan { .. } => {}
                Slot::Free => continue,
            }
            self.free.push(stream as u32);
        }
        self.live = 0;
        self.orphans = 0;
    }

    /// Live requests.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Stream ids held by requests resolved without an answer.
    pub fn orphans(&self) -> usize {
        self.orphans
    }

    /// Late answers to orphaned requests of the measured window.
    pub fn late_responses(&self) -> u64 {
        self.late_responses
    }

    /// The deadline tracker's counters (empty without a tracker).
    pub fn tracker_counters(&self) -> Vec<(&'static str, u64)> {
        self.tracker
            .as_ref()
            .map_or_else(Vec::new, |t| t.counters())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> HandlerMap {
        HandlerMap::new(None)
    }

    fn cell() -> Arc<Completion> {
        Arc::new(Completion::new())
    }

    #[test]
    fn request_ids_pack_stream_and_sequence() {
        let id = RequestId::new(MAX_STREAMS as u32 - 1, 12345);
        assert_eq!(id.stream(), MAX_STREAMS as u32 - 1);
        assert_eq!(RequestId::from_raw(id.raw()), id);
        assert_ne!(RequestId::new(5, 1), RequestId::new(5, 2));
    }

    #[test]
    fn an_answer_frees_the_stream() {
        let mut m = map();
        let a = m.insert(cell(), None, true).unwrap();
        let b = m.insert(cell(), None, true).unwrap();
        assert_ne!(a.stream(), b.stream());
        assert_eq!(m.live(), 2);
        let h = m.take_answered(a.stream()).unwrap().unwrap();
        assert_eq!(h.id, a);
        assert_eq!(m.live(), 1);
        // The freed stream is reused, under a new request id.
        let c = m.insert(cell(), None, false).unwrap();
        assert_eq!(c.stream(), a.stream());
        assert_ne!(c, a);
        // The old id no longer names a live request.
        assert!(m.orphan(a).is_none());
        assert!(matches!(m.take_answered(999), Err(UnknownStream(999))));
    }

    #[test]
    fn an_orphan_keeps_its_stream_until_the_late_answer() {
        let mut m = map();
        let a = m.insert(cell(), None, true).unwrap();
        let h = m.orphan(a).unwrap();
        assert_eq!(h.id, a);
        assert!(m.orphan(a).is_none(), "orphaned twice");
        assert_eq!((m.live(), m.orphans()), (0, 1));
        let b = m.insert(cell(), None, true).unwrap();
        assert_ne!(b.stream(), a.stream(), "an orphan's stream was reused");
        assert!(m.take_answered(a.stream()).unwrap().is_none());
        assert_eq!((m.live(), m.orphans(), m.late_responses()), (1, 0, 1));
        // Only measured orphans count as late responses.
        let c = m.insert(cell(), None, false).unwrap();
        m.orphan(c).unwrap();
        m.take_answered(c.stream()).unwrap();
        assert_eq!(m.late_responses(), 1);
        assert_eq!(
            m.take_answered(c.stream()).err(),
            Some(UnknownStream(c.stream()))
        );
    }

    #[test]
    fn close_fails_live_requests_and_refuses_new_ones() {
        let mut m = map();
        let a = m.insert(cell(), None, true).unwrap();
        let b = m.insert(cell(), None, true).unwrap();
        m.orphan(b).unwrap();
        let mut out = Vec::new();
        m.close(&mut out);
        assert_eq!(out.iter().map(|h| h.id).collect::<Vec<_>>(), vec![a]);
        assert_eq!((m.live(), m.orphans()), (0, 0));
        assert_eq!(
            m.insert(cell(), None, true).unwrap_err(),
            ErrorKind::ConnectionClosed
        );
    }

    #[test]
    fn orphan_all_takes_every_live_handler_once() {
        let mut m = map();
        let ids: Vec<_> = (0..5)
            .map(|_| m.insert(cell(), None, true).unwrap())
            .collect();
        m.take_answered(ids[1].stream()).unwrap();
        let mut out = Vec::new();
        m.orphan_all(&mut out);
        let mut got: Vec<_> = out.iter().map(|h| h.id).collect();
        got.sort();
        assert_eq!(got, vec![ids[0], ids[2], ids[3], ids[4]]);
        assert_eq!((m.live(), m.orphans()), (0, 4));
        out.clear();
        m.orphan_all(&mut out);
        assert!(out.is_empty());
    }
}
