/* SPDX-License-Identifier: GPL-2.0 */
#ifndef HB_FUTEX_H
#define HB_FUTEX_H

#include "shared.h"

/* The waiting operations reported, plus HB_OP_WAKE for every call that wakes
 * (WAKE, WAKE_BITSET, WAKE_OP, UNLOCK_PI, REQUEUE, CMP_REQUEUE(_PI)). */
enum hb_futex_op_index {
	HB_OP_WAIT,
	HB_OP_WAIT_BITSET,
	HB_OP_LOCK_PI,
	HB_OP_LOCK_PI2,
	HB_OP_WAIT_REQUEUE_PI,
	HB_OP_WAITV,
	HB_OP_WAKE,
	HB_NR_OPS,
};

enum hb_futex_fail_index {
	HB_FAIL_EAGAIN,	/* the futex word no longer had the expected value */
	HB_FAIL_ETIMEDOUT,
	HB_FAIL_EINTR,	/* including the kernel's -ERESTART* codes */
	HB_FAIL_OTHER,
	HB_NR_FAILS,
};

struct hb_proc_key {
	__u32 tgid;
	__u32 op;
};

/* Per process and operation: successful waits (count, time, histogram) and
 * failed ones by errno; for HB_OP_WAKE only count is used. */
struct hb_proc_stats {
	__u64 count;
	__u64 total_ns;
	__u64 failed[HB_NR_FAILS];
	char comm[HB_TASK_COMM_LEN]; /* of the process (its main thread) */
	__u64 hist[HB_MAX_SLOTS];
};

/* As futexctn: a lock is its futex address, a contention site its user stack. */
struct hb_wait_key {
	__u64 uaddr;
	__u64 stack; /* its hash in hb_user_stacks */
	__u32 tgid;
	__u32 pad;
};

struct hb_wait_stats {
	__u64 waits;
	__u64 wait_ns;
};

#endif /* HB_FUTEX_H */
