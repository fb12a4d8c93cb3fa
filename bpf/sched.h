/* SPDX-License-Identifier: GPL-2.0 */
#ifndef HB_SCHED_H
#define HB_SCHED_H

#include "shared.h"

enum hb_cpu_state {
	HB_STATE_UNKNOWN, /* first seen waking up: asleep since before attaching */
	HB_STATE_OFF,
	HB_STATE_ON,
};

/* --counters-only: a thread's kernel counters as it exited, its last reading
 * when it is gone before the window's closing reading. */
struct hb_exit_counters {
	__u64 at_ns; /* 0: not exited since attaching */
	__u64 voluntary;
	__u64 involuntary;
	__u64 oncpu_ns;
	__u64 runq_ns;
	__u64 timeslices;
};

/* Per thread, keyed by pid_tgid (tgid << 32 | tid) so a reused tid in another
 * process gets its own entry. */
struct hb_thread_stats {
	__u64 voluntary;
	__u64 involuntary;
	__u64 offcpu_ns;
	__u64 runq_ns;
	__u64 wakeups;
	__u64 missed_switch_ins;
	__u64 offcpu_hist[HB_MAX_SLOTS];
	__u64 runq_hist[HB_MAX_SLOTS];
	struct hb_exit_counters exited;
	char comm[HB_TASK_COMM_LEN];
	__u32 tgid;
	/* Kernel-side bookkeeping, not reported: */
	__u32 state;	/* enum hb_cpu_state */
	__u64 off_ts;	/* last switch-out, 0 if none seen since attaching */
	__u64 runq_ts;	/* last time it became runnable */
};

struct hb_wakeup_key {
	__u32 waker_tid;
	__u32 wakee_tid;
};

struct hb_wakeup_val {
	__u64 count;
	__u32 waker_tgid;
	__u32 wakee_tgid;
	char waker_comm[HB_TASK_COMM_LEN];
	char wakee_comm[HB_TASK_COMM_LEN];
};

/* Per CPU, a direct-mapped cache of wake-up pairs (slot: a hash of the two
 * tids): a pair that holds its slot on this CPU is counted there, with no hash
 * lookup and no atomic; count 0 is an empty slot. The pair's entry in
 * `wakeups` (names, tgids, and the wake-ups counted while another pair held
 * the slot) exists before the slot is claimed; the loader adds the slots up. */
#define HB_PAIR_SLOTS 1024

struct hb_pair_slot {
	__u32 waker_tid;
	__u32 wakee_tid;
	__u64 count;
};

static inline __u32 hb_pair_slot(__u32 waker_tid, __u32 wakee_tid)
{
	return ((waker_tid * 2654435761U) ^ wakee_tid) & (HB_PAIR_SLOTS - 1);
}

#endif /* HB_SCHED_H */
