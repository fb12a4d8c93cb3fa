//! A connection's response-handler map, as the scylla driver's `ResponseHandlerMap`
//! (scylla 1.9.0, `src/network/connection.rs`): which stream ids are taken, and by which
//! request.
//!
//! Only the connection's router task touches it (see [`router`](crate::router)). Stream ids
//! come from a [`StreamIdSet`], the driver's 15-bit bitmap scanned first-fit; a taken id
//! holds the live [`Handler`] of a request waiting for its answer, or is an orphan: its
//! request was resolved without an answer (it timed out or was abandoned), so the stream id
//! stays taken until the late answer arrives and frees it. The map keeps when each orphan
//! was made, so that the router can break a connection whose old orphans pile up
//! ([`HandlerMap::old_orphans`], the driver's `OrphanageTracker`). Stream ids are allocated
//! by the router when it takes a request off the connection's queue; callers name their
//! requests by [`RequestId`]s, which the map resolves to streams for orphaning, as the
//! driver's `request_to_stream` does.
//!
//! Taking a live handler out of the map does not by itself decide the request's outcome:
//! the router then resolves its [`Reply`], where the first resolution wins. A request
//! whose caller timed it out before the router allocated its stream stays live until its
//! answer, which then loses to the timeout and counts as late.
//!
//! With the `deadline-tracker` strategy the map also owns the connection's
//! [`DeadlineTracker`]: a live request's deadline is tracked from allocation until its
//! handler leaves the map.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use crate::completion::Reply;
use crate::deadline_tracker::DeadlineTracker;

/// Stream ids a connection hands out at most: the driver's 15-bit ids
/// (`MAX_IN_FLIGHT_REQUESTS`), every one of `0..MAX_STREAMS` allocatable. More requests in
/// flight on one connection fail with `StreamsExhausted`, as they fail in the driver.
pub const MAX_STREAMS: usize = 1 << 15;

/// An orphan older than this is old (the driver's `OLD_AGE_ORPHAN_THRESHOLD`).
pub const OLD_ORPHAN_AGE: Duration = Duration::from_secs(1);

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
    /// Where its outcome goes.
    pub reply: Reply,
    /// When the request times out (`None` without a client-side timeout).
    pub deadline: Option<Instant>,
    /// Issued inside the measured window.
    pub measured: bool,
}

/// The driver's `StreamIdSet`: one bit per stream id; [`StreamIdSet::allocate`] scans the
/// words from the first and takes the lowest free id.
struct StreamIdSet {
    used: Box<[u64]>,
}

impl Default for StreamIdSet {
    fn default() -> Self {
        StreamIdSet {
            used: vec![0; MAX_STREAMS / 64].into_boxed_slice(),
        }
    }
}

impl StreamIdSet {
    /// Takes the lowest free stream id, or `None` if all [`MAX_STREAMS`] are taken.
    fn allocate(&mut self) -> Option<u32> {
        for (word, used) in self.used.iter_mut().enumerate() {
            if *used != !0 {
                let bit = used.trailing_ones();
                *used |= 1 << bit;
                return Some(word as u32 * 64 + bit);
            }
        }
        None
    }

    /// Gives `stream` back; it must be below [`MAX_STREAMS`].
    fn free(&mut self, stream: u32) {
        self.used[stream as usize / 64] &= !(1 << (stream % 64));
    }
}

/// A stream id held by a request resolved without its answer.
struct Orphan {
    since: Instant,
    measured: bool,
}

/// A response whose stream id is not in use: the server broke the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownStream(pub u32);

/// See the module documentation.
pub struct HandlerMap {
    stream_set: StreamIdSet,
    handlers: HashMap<u32, Handler>,
    /// The stream of each live request.
    request_to_stream: HashMap<RequestId, u32>,
    orphans: HashMap<u32, Orphan>,
    /// The orphans by when they were made, oldest first.
    by_orphaning_time: BTreeSet<(Instant, u32)>,
    late_responses: u64,
    tracker: Option<DeadlineTracker>,
}

impl HandlerMap {
    /// An empty map; `tracker` enforces deadlines for the `deadline-tracker` strategy.
    pub fn new(tracker: Option<DeadlineTracker>) -> HandlerMap {
        HandlerMap {
            stream_set: StreamIdSet::default(),
            handlers: HashMap::new(),
            request_to_stream: HashMap::new(),
            orphans: HashMap::new(),
            by_orphaning_time: BTreeSet::new(),
            late_responses: 0,
            tracker,
        }
    }

    /// Takes a free stream id for `handler`'s request and returns it; hands the handler
    /// back if every stream id is taken.
    pub fn allocate(&mut self, handler: Handler) -> Result<u32, Handler> {
        let Some(stream) = self.stream_set.allocate() else {
            return Err(handler);
        };
        if let (Some(tracker), Some(deadline)) = (self.tracker.as_mut(), handler.deadline) {
            tracker.insert(deadline.into(), handler.id.raw());
        }
        let previous = self.request_to_stream.insert(handler.id, stream);
        debug_assert!(previous.is_none(), "{:?} allocated twice", handler.id);
        let previous = self.handlers.insert(stream, handler);
        debug_assert!(previous.is_none(), "stream {stream} allocated twice");
        Ok(stream)
    }

    /// An answer came on `stream`: frees the stream and returns its live handler (the
    /// router resolves it), or `None` for the late answer of an orphan.
    pub fn take_answered(&mut self, stream: u32) -> Result<Option<Handler>, UnknownStream> {
        if let Some(orphan) = self.orphans.remove(&stream) {
            self.by_orphaning_time.remove(&(orphan.since, stream));
            self.stream_set.free(stream);
            self.count_late_answer(orphan.measured);
            return Ok(None);
        }
        let handler = self.handlers.remove(&stream).ok_or(UnknownStream(stream))?;
        self.stream_set.free(stream);
        self.request_to_stream.remove(&handler.id);
        untrack(self.tracker.as_mut(), &handler);
        Ok(Some(handler))
    }

    /// Counts an answer that came after its request was resolved without it.
    pub fn count_late_answer(&mut self, measured: bool) {
        self.late_responses += u64::from(measured);
    }

    /// Turns the live request `id` into an orphan and returns its handler; `None` if `id`
    /// is not live (answered, resolved another way, or not allocated yet).
    pub fn orphan(&mut self, id: RequestId) -> Option<Handler> {
        let handler = self.orphan_untracked(id)?;
        untrack(self.tracker.as_mut(), &handler);
        Some(handler)
    }

    fn orphan_untracked(&mut self, id: RequestId) -> Option<Handler> {
        let stream = self.request_to_stream.remove(&id)?;
        let handler = self
            .handlers
            .remove(&stream)
            .unwrap_or_else(|| unreachable!("{id:?} maps to stream {stream}, which is not live"));
        let since = Instant::now();
        let orphan = Orphan {
            since,
            measured: handler.measured,
        };
        self.orphans.insert(stream, orphan);
        self.by_orphaning_time.insert((since, stream));
        Some(handler)
    }

    /// Orphans made more than [`OLD_ORPHAN_AGE`] before `now` (the driver's
    /// `old_orphans_count`: linear in their number, nothing for a healthy connection).
    pub fn old_orphans(&self, now: Instant) -> usize {
        match now.checked_sub(OLD_ORPHAN_AGE) {
            Some(old) => self.by_orphaning_time.range(..(old, u32::MAX)).count(),
            None => 0,
        }
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
        let ids: Vec<RequestId> = self.request_to_stream.keys().copied().collect();
        for id in ids {
            out.extend(self.orphan(id));
        }
    }

    /// Empties the map for good (the connection is closing): every live handler goes to
    /// `out`, orphans are forgotten.
    pub fn close(&mut self, out: &mut Vec<Handler>) {
        for (_, handler) in self.handlers.drain() {
            untrack(self.tracker.as_mut(), &handler);
            out.push(handler);
        }
        self.stream_set = StreamIdSet::default();
        self.request_to_stream.clear();
        self.orphans.clear();
        self.by_orphaning_time.clear();
    }

    /// Live requests.
    pub fn live(&self) -> usize {
        self.handlers.len()
    }

    /// Stream ids held by requests resolved without an answer.
    pub fn orphans(&self) -> usize {
        self.orphans.len()
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
    use crate::completion::Completion;
    use std::sync::Arc;

    fn map() -> HandlerMap {
        HandlerMap::new(None)
    }

    fn handler(raw: u64, measured: bool) -> Handler {
        Handler {
            id: RequestId::from_raw(raw),
            reply: Reply::Cell(Arc::new(Completion::new())),
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

    /// The driver's first-fit scan: the lowest free id, across the bitmap's words, whatever
    /// the order the ids were freed in (a free list would hand out the last freed first).
    #[test]
    fn stream_ids_are_allocated_first_fit_and_reused() {
        let mut m = map();
        let streams: Vec<u32> = (0..130).map(|raw| allocate(&mut m, raw, true)).collect();
        assert_eq!(streams, (0..130).collect::<Vec<u32>>());
        for stream in [3, 70, 129] {
            assert!(m.take_answered(stream).unwrap().is_some());
        }
        assert_eq!(allocate(&mut m, 200, true), 3);
        // An orphan's id stays taken; its late answer frees it for the next request.
        m.orphan(RequestId::from_raw(5)).unwrap();
        assert_eq!(allocate(&mut m, 201, true), 70);
        assert_eq!(allocate(&mut m, 202, true), 129);
        assert_eq!(allocate(&mut m, 203, true), 130);
        assert!(m.take_answered(5).unwrap().is_none());
        assert_eq!(allocate(&mut m, 204, true), 5);
    }

    /// 2^15 ids, as the driver's: the next request is handed back until one is freed.
    #[test]
    fn a_connection_has_2_pow_15_stream_ids() {
        let mut m = map();
        for raw in 0..MAX_STREAMS as u64 {
            allocate(&mut m, raw, false);
        }
        let Err(back) = m.allocate(handler(1 << 20, false)) else {
            panic!("a stream id beyond 2^15");
        };
        assert_eq!(back.id, RequestId::from_raw(1 << 20));
        assert_eq!(m.live(), MAX_STREAMS);
        assert!(m.take_answered(12_345).unwrap().is_some());
        assert_eq!(allocate(&mut m, 1 << 20, false), 12_345);
        let beyond = MAX_STREAMS as u32;
        assert_eq!(m.take_answered(beyond).err(), Some(UnknownStream(beyond)));
    }

    #[test]
    fn orphans_grow_old_until_their_late_answers() {
        let mut m = map();
        let streams: Vec<u32> = (0..3).map(|raw| allocate(&mut m, raw, true)).collect();
        let before = Instant::now();
        for raw in 0..3 {
            m.orphan(RequestId::from_raw(raw)).unwrap();
        }
        let after = Instant::now();
        assert_eq!(m.old_orphans(after), 0);
        assert_eq!(m.old_orphans(before + OLD_ORPHAN_AGE), 0);
        let later = after + OLD_ORPHAN_AGE + Duration::from_millis(1);
        assert_eq!(m.old_orphans(later), 3);
        m.take_answered(streams[1]).unwrap();
        assert_eq!(m.old_orphans(later), 2);
        let mut out = Vec::new();
        m.close(&mut out);
        assert_eq!(m.old_orphans(later), 0);
    }
}
