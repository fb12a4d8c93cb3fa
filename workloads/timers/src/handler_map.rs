//! A connection's response-handler map: which stream ids are taken, and by which request.
//!
//! Only the connection's router task touches it (see [`router`](crate::router)). Slots are
//! indexed by stream id. A slot is free, holds the live [`Handler`] of a request waiting
//! for its answer, or is an orphan: its request was resolved without an answer (it timed
//! out or was abandoned), so the stream id stays taken until the late answer arrives and
//! frees it. Stream ids are allocated by the router when it takes a request off the
//! connection's queue; callers name their requests by [`RequestId`]s, which the map
//! resolves to streams for orphaning, as the scylla driver's `request_to_stream` does.
//!
//! Taking a live handler out of the map does not by itself decide the request's outcome:
//! the router then resolves its [`Completion`], where the first resolution wins. A request
//! whose caller timed it out before the router allocated its stream stays live until its
//! answer, which then loses to the timeout and counts as late.
//!
//! With the `deadline-tracker` strategy the map also owns the connection's
//! [`DeadlineTracker`]: a live request's deadline is tracked from allocation until its
//! handler leaves the map.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use crate::completion::Completion;
use crate::deadline_tracker::DeadlineTracker;

/// Stream ids a connection hands out at most. The driver's are 15-bit; ours are wider so
/// that a run's concurrency, not the stream space, bounds the requests in flight.
pub const MAX_STREAMS: usize = 1 << 24;

/// Names one request of a connection: callers number their requests from a per-connection
/// counter, as the scylla driver's `request_id_generator` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(u64);

impl RequestId {
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
    /// The stream of each live request.
    streams: HashMap<RequestId, u32>,
    orphans: usize,
    late_responses: u64,
    tracker: Option<DeadlineTracker>,
}

impl HandlerMap {
    /// An empty map; `tracker` enforces deadlines for the `deadline-tracker` strategy.
    pub fn new(tracker: Option<DeadlineTracker>) -> HandlerMap {
        HandlerMap {
            slots: Vec::new(),
            free: Vec::new(),
            streams: HashMap::new(),
            orphans: 0,
            late_responses: 0,
            tracker,
        }
    }

    /// Takes a free stream id for `handler`'s request and returns it; hands the handler
    /// back if every stream id is taken.
    pub fn allocate(&mut self, handler: Handler) -> Result<u32, Handler> {
        let stream = match self.free.pop() {
            Some(stream) => stream,
            None if self.slots.len() < MAX_STREAMS => {
                self.slots.push(Slot::Free);
                (self.slots.len() - 1) as u32
            }
            None => return Err(handler),
        };
        if let (Some(tracker), Some(deadline)) = (self.tracker.as_mut(), handler.deadline) {
            tracker.insert(deadline.into(), handler.id.raw());
        }
        let previous = self.streams.insert(handler.id, stream);
        debug_assert!(previous.is_none(), "{:?} allocated twice", handler.id);
        self.slots[stream as usize] = Slot::Live(handler);
        Ok(stream)
    }

    /// An answer came on `stream`: frees the stream and returns its live handler (the
    /// router resolves it), or `None` for the late answer of an orphan.
    pub fn take_answered(&mut self, stream: u32) -> Result<Option<Handler>, UnknownStream> {
        let slot = self
            .slots
            .get_mut(stream as usize)
            .ok_or(UnknownStream(stream))?;
        match std::mem::replace(slot, Slot::Free) {
            Slot::Live(handler) => {
                self.free.push(stream);
                self.forget(&handler);
                Ok(Some(handler))
            }
            Slot::Orphan { measured } => {
                self.free.push(stream);
                self.orphans -= 1;
                self.count_late_answer(measured);
                Ok(None)
            }
            Slot::Free => Err(UnknownStream(stream)),
        }
    }

    /// Counts an answer that came after its request was resolved without it.
    pub fn count_late_answer(&mut self, measured: bool) {
        self.late_responses += u64::from(measured);
    }

    /// Drops a live handler's stream mapping and deadline.
    fn forget(&mut self, handler: &Handler) {
        self.streams.remove(&handler.id);
        untrack(self.tracker.as_mut(), handler);
    }

    /// Turns the live request `id` into an orphan and returns its handler; `None` if `id`
    /// is not live (answered, resolved another way, or not allocated yet).
    pub fn orphan(&mut self, id: RequestId) -> Option<Handler> {
        let handler = self.orphan_untracked(id)?;
        untrack(self.tracker.as_mut(), &handler);
        Some(handler)
    }

    fn orphan_untracked(&mut self, id: RequestId) -> Option<Handler> {
        let stream = self.streams.remove(&id)?;
        let slot = &mut self.slots[stream as usize];
        let measured = match slot {
            Slot::Live(handler) => handler.measured,
            _ => unreachable!("{id:?} maps to stream {stream}, which is not live"),
        };
        let Slot::Live(handler) = std::mem::replace(slot, Slot::Orphan { measured }) else {
            unreachable!("the slot was checked to be live")
        };
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
            // answered or abandoned meanwhile is not live any more and is skipped.
            expired.extend(self.orphan_untracked(RequestId::from_raw(raw)));
        }
    }

    /// Orphans every live request (the drain gives up on them), pushing their handlers
    /// onto `out`.
    pub fn orphan_all(&mut self, out: &mut Vec<Handler>) {
        let ids: Vec<RequestId> = self.streams.keys().copied().collect();
        for id in ids {
            out.extend(self.orphan(id));
        }
    }

    /// Empties the map for good (the connection is closing): every live handler goes to
    /// `out`, orphans are forgotten.
    pub fn close(&mut self, out: &mut Vec<Handler>) {
        for slot in self.slots.drain(..) {
            if let Slot::Live(handler) = slot {
                untrack(self.tracker.as_mut(), &handler);
                out.push(handler);
            }
        }
        self.free.clear();
        self.streams.clear();
        self.orphans = 0;
    }

    /// Live requests.
    pub fn live(&self) -> usize {
        self.streams.len()
    }

    /// Stream ids held by requests resolved without an answer.
    pub fn orphans(&self) -> usize {
        self.orphans
    }

    /// Late answers to requests of the measured window.
    pub fn late_responses(&self) -> u64 {
        self.late_responses
    }

    /// The deadline tracker's counters, if the map has a tracker.
    pub fn tracker_counters(&self) -> Option<[(&'static str, u64); 3]> {
        self.tracker.as_ref().map(DeadlineTracker::counters)
    }
}

/// Stops tracking `handler`'s deadline, if it has one.
fn untrack(tracker: Option<&mut DeadlineTracker>, handler: &Handler) {
    if let (Some(tracker), Some(deadline)) = (tracker, handler.deadline) {
        tracker.remove(deadline.into(), handler.id.raw());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> HandlerMap {
        HandlerMap::new(None)
    }

    fn handler(raw: u64, measured: bool) -> Handler {
        Handler {
            id: RequestId::from_raw(raw),
            completion: Arc::new(Completion::new()),
            deadline: None,
            measured,
        }
    }

    fn allocate(m: &mut HandlerMap, raw: u64, measured: bool) -> u32 {
        m.allocate(handler(raw, measured))
            .unwrap_or_else(|_| panic!("no stream for request {raw}"))
    }

    #[test]
    fn an_answer_frees_the_stream() {
        let mut m = map();
        let a = allocate(&mut m, 1, true);
        let b = allocate(&mut m, 2, true);
        assert_ne!(a, b);
        assert_eq!(m.live(), 2);
        let h = m.take_answered(a).unwrap().unwrap();
        assert_eq!(h.id, RequestId::from_raw(1));
        assert_eq!(m.live(), 1);
        // The freed stream is reused by the next request.
        assert_eq!(allocate(&mut m, 3, false), a);
        // The answered request is no longer live.
        assert!(m.orphan(RequestId::from_raw(1)).is_none());
        assert!(matches!(m.take_answered(999), Err(UnknownStream(999))));
    }

    #[test]
    fn an_orphan_keeps_its_stream_until_the_late_answer() {
        let mut m = map();
        let a = allocate(&mut m, 1, true);
        let h = m.orphan(RequestId::from_raw(1)).unwrap();
        assert_eq!(h.id, RequestId::from_raw(1));
        assert!(m.orphan(RequestId::from_raw(1)).is_none(), "orphaned twice");
        assert_eq!((m.live(), m.orphans()), (0, 1));
        let b = allocate(&mut m, 2, true);
        assert_ne!(b, a, "an orphan's stream was reused");
        assert!(m.take_answered(a).unwrap().is_none());
        assert_eq!((m.live(), m.orphans(), m.late_responses()), (1, 0, 1));
        // Only measured orphans count as late responses.
        let c = allocate(&mut m, 3, false);
        m.orphan(RequestId::from_raw(3)).unwrap();
        m.take_answered(c).unwrap();
        assert_eq!(m.late_responses(), 1);
        assert_eq!(m.take_answered(c).err(), Some(UnknownStream(c)));
    }

    #[test]
    fn orphaning_a_request_not_allocated_yet_does_nothing() {
        let mut m = map();
        assert!(m.orphan(RequestId::from_raw(5)).is_none());
        let s = allocate(&mut m, 5, true);
        assert_eq!((m.live(), m.orphans()), (1, 0));
        assert!(m.take_answered(s).unwrap().is_some());
    }

    #[test]
    fn close_hands_over_live_requests_and_forgets_orphans() {
        let mut m = map();
        allocate(&mut m, 1, true);
        allocate(&mut m, 2, true);
        m.orphan(RequestId::from_raw(2)).unwrap();
        let mut out = Vec::new();
        m.close(&mut out);
        let ids: Vec<_> = out.iter().map(|h| h.id).collect();
        assert_eq!(ids, vec![RequestId::from_raw(1)]);
        assert_eq!((m.live(), m.orphans()), (0, 0));
    }

    #[test]
    fn orphan_all_takes_every_live_handler_once() {
        let mut m = map();
        let streams: Vec<u32> = (0..5).map(|raw| allocate(&mut m, raw, true)).collect();
        m.take_answered(streams[1]).unwrap();
        let mut out = Vec::new();
        m.orphan_all(&mut out);
        let mut got: Vec<u64> = out.iter().map(|h| h.id.raw()).collect();
        got.sort();
        assert_eq!(got, vec![0, 2, 3, 4]);
        assert_eq!((m.live(), m.orphans()), (0, 4));
        out.clear();
        m.orphan_all(&mut out);
        assert!(out.is_empty());
    }
}
