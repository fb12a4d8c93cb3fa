//! How a shard meters dispatch with the shared token bucket: seastar's `io_queue::stream`
//! (`src/core/io_queue.cc`: `poll_io_queue`, `reap_pending_capacity`, `grab_capacity`).
//!
//! A shard holds one reservation, `pending {head, cap}`: `cap` tokens grabbed from the
//! bucket's tail that are there once its head reaches `head`. Each poll first replenishes
//! the bucket (when a threshold's worth accumulated since this shard last did), then reaps
//! the part of the reservation the head already covers as ready tokens, and dispatches
//! queued requests while the ready tokens cover the first one's cost. When they do not,
//! and the reservation is fully covered ("our turn has come"), it recycles the ready and
//! reserved tokens (refund, then a bigger grab of up to `per_tick_threshold` more, at most
//! the queued capacity and the bucket's limit); otherwise it waits.
//!
//! With a capped-release bucket that batching deadlocks: a reservation bigger than the
//! requests it pays for holds tokens that no completion will ever release, and once nothing
//! is in flight the head stops below it for good. seastar never ran the two together (the
//! batching came with the pure bucket of #1766); before that its fair_queue reserved
//! exactly the head request's capacity, which is what the meter does in `exact` mode (the
//! capped-release strategy).

use std::sync::Arc;

use token_bucket::{Rovers, SharedTokenBucket};

/// Tokens reaped this poll.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Available {
    pub ready_tokens: u64,
    pub our_turn_has_come: bool,
}

/// What to do with the first queued request (`io_queue::stream::grab_result`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grab {
    /// Dispatch it: its cost was taken from the ready tokens.
    Ok,
    /// Wait for the reservation (the next poll tries again).
    Stop,
    /// A new reservation was made: try again.
    Again,
}

/// One shard's view of the shared bucket.
pub struct BucketMeter<R: Rovers> {
    tb: Arc<SharedTokenBucket<R>>,
    pending_head: u64,
    pending_cap: u64,
    /// When this shard last replenished (`stream::replenish`).
    replenished_ns: u64,
    per_tick_threshold: u64,
    /// Reserve exactly what the head request lacks (the pre-#1766 fair_queue).
    exact: bool,
}

impl<R: Rovers> BucketMeter<R> {
    /// A meter of batched reservations (`exact` false) or of one request's lack at a time.
    pub fn new(tb: Arc<SharedTokenBucket<R>>, per_tick_threshold: u64, exact: bool) -> Self {
        BucketMeter {
            tb,
            pending_head: 0,
            pending_cap: 0,
            replenished_ns: 0,
            per_tick_threshold,
            exact,
        }
    }

    pub fn bucket(&self) -> &SharedTokenBucket<R> {
        &self.tb
    }

    /// `io_throttler::maybe_replenish_capacity`.
    pub fn maybe_replenish(&mut self, now_ns: u64) {
        let extra = self
            .tb
            .accumulated_in(now_ns.saturating_sub(self.replenished_ns));
        if extra >= self.tb.threshold() {
            self.replenished_ns = now_ns;
            self.tb.replenish(now_ns);
        }
    }

    /// `stream::reap_pending_capacity`.
    pub fn reap(&mut self) -> Available {
        let mut available = Available {
            ready_tokens: 0,
            our_turn_has_come: true,
        };
        if self.pending_cap > 0 {
            let deficiency = self.tb.deficiency(self.pending_head);
            available.our_turn_has_come = deficiency <= self.pending_cap;
            if available.our_turn_has_come {
                available.ready_tokens = self.pending_cap - deficiency;
                self.pending_cap = deficiency;
            }
        }
        available
    }

    /// `stream::grab_capacity` for a request of `cap` tokens, with `queued_capacity` tokens
    /// queued in all (this request included).
    pub fn grab(&mut self, cap: u64, available: &mut Available, queued_capacity: u64) -> Grab {
        if cap <= available.ready_tokens {
            available.ready_tokens -= cap;
            Grab::Ok
        } else if self.exact {
            if self.pending_cap > 0 || !available.our_turn_has_come {
                self.pending_cap += available.ready_tokens;
                available.ready_tokens = 0;
                return Grab::Stop;
            }
            // Keep the ready tokens and reserve what the request lacks.
            let need = cap - available.ready_tokens;
            self.pending_head = self.tb.grab(need);
            self.pending_cap = available.ready_tokens + need;
            *available = self.reap();
            Grab::Again
        } else if cap <= available.ready_tokens + self.pending_cap
            || self.pending_cap >= self.per_tick_threshold
        {
            self.pending_cap += available.ready_tokens;
            available.ready_tokens = 0;
            Grab::Stop
        } else if available.our_turn_has_come {
            let recycled = available.ready_tokens + self.pending_cap;
            let grab_amount = (recycled + self.per_tick_threshold)
                .min(queued_capacity)
                .min(self.tb.limit())
                .max(cap.min(self.tb.limit()));
            self.tb.refund(recycled);
            self.pending_head = self.tb.grab(grab_amount);
            self.pending_cap = grab_amount;
            *available = self.reap();
            Grab::Again
        } else {
            // The head has not reached the reservation yet: nothing to cancel, wait.
            Grab::Stop
        }
    }

    /// Whether a poll that dispatched `dispatched` tokens must stop: the pre-#1766
    /// fair_queue (`exact` mode) dispatches while `dispatched < per_tick_grab_threshold`
    /// (`fair_queue::dispatch_requests`, fair_queue.cc@d7de45b9a ~364), so one poll cannot
    /// spend the whole limit. The batched meter bounds its reservations instead.
    pub fn tick_full(&self, dispatched: u64) -> bool {
        self.exact && dispatched >= self.per_tick_threshold
    }

    /// Nanoseconds until the reservation is covered (`stream::next_pending_aio`), if any.
    pub fn wait_ns(&self) -> Option<u64> {
        (self.pending_cap > 0).then(|| {
            let over = self.tb.deficiency(self.pending_head);
            (self.tb.duration_for(over) * 1e9) as u64
        })
    }

    /// Tokens reserved and not yet spent.
    pub fn pending_cap(&self) -> u64 {
        self.pending_cap
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use token_bucket::PureRovers;

    const DAY_NS: u64 = 86_400_000_000_000;

    fn meter(rate: u64, limit: u64, per_tick: u64) -> BucketMeter<PureRovers> {
        let tb = Arc::new(SharedTokenBucket::<PureRovers>::new(rate, limit, 1, 0));
        BucketMeter::new(tb, per_tick, false)
    }

    /// Dispatches up to `queued` requests of `cost` at `now`; returns how many went.
    fn poll(m: &mut BucketMeter<PureRovers>, now: u64, cost: u64, queued: &mut u64) -> u64 {
        m.maybe_replenish(now);
        let mut a = m.reap();
        let mut sent = 0;
        while *queued > 0 {
            match m.grab(cost, &mut a, *queued * cost) {
                Grab::Ok => {
                    *queued -= 1;
                    sent += 1;
                }
                Grab::Stop => break,
                Grab::Again => {}
            }
        }
        sent
    }

    #[test]
    fn a_full_bucket_dispatches_its_limit_then_the_rate() {
        // 1000 tokens/s, limit 10, a request costs 1.
        let mut m = meter(1_000, 10, 10);
        let mut queued = 100;
        assert_eq!(poll(&mut m, DAY_NS, 1, &mut queued), 10);
        assert_eq!(poll(&mut m, DAY_NS, 1, &mut queued), 0);
        // 5 ms later 5 tokens accumulated.
        let sent = poll(&mut m, DAY_NS + 5_000_000, 1, &mut queued);
        assert_eq!(sent, 5);
        assert!(m.wait_ns().is_some());
    }

    /// A capped bucket whose limit is not a multiple of the request's cost (2.5 requests):
    /// batched reservations would strand tokens no completion releases and stop for good;
    /// the exact meter keeps going, at most the limit's whole requests in flight.
    #[test]
    fn capped_release_never_strands_its_tokens() {
        use token_bucket::CappedRovers;
        let tb = Arc::new(SharedTokenBucket::<CappedRovers>::new(
            2_500_000, 2_500, 1_000, 0,
        ));
        let mut m = BucketMeter::new(tb.clone(), 2_500, true);
        let (mut queued, mut in_flight, mut sent) = (4u64, 0u64, 0u64);
        let mut t = DAY_NS;
        for _ in 0..200 {
            for _ in 0..in_flight {
                tb.release(1_000);
            }
            queued += in_flight;
            in_flight = 0;
            m.maybe_replenish(t);
            let mut a = m.reap();
            while queued > 0 {
                match m.grab(1_000, &mut a, queued * 1_000) {
                    Grab::Ok => {
                        queued -= 1;
                        in_flight += 1;
                        sent += 1;
                    }
                    Grab::Stop => break,
                    Grab::Again => {}
                }
            }
            assert!(
                in_flight <= 2,
                "{in_flight} in flight on 2.5 requests of tokens"
            );
            t += 400_000;
        }
        // 80 ms at 2500 requests/s: the rate binds, it never stops.
        assert!(sent >= 190, "{sent}");
    }

    /// In fixed point (1000 units a request, as the io suite meters) the rate holds; with
    /// one unit a request, `accumulated_in`'s rounding would hand out a token per half.
    #[test]
    fn over_a_second_the_rate_holds() {
        let mut m = meter(1_000_000, 10_000, 5_000);
        let mut queued = 1_000_000;
        let mut sent = 0;
        let mut t = DAY_NS;
        while t < DAY_NS + 1_000_000_000 {
            sent += poll(&mut m, t, 1_000, &mut queued);
            t += 137_000;
        }
        // limit (10 requests) + rate x 1 s.
        assert!((995..=1_010).contains(&sent), "{sent}");
    }
}
