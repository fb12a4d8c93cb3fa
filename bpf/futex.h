/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FUTEX_H
#define FUTEX_H

#include "shared.h"

/* The waiting operations reported, plus OP_WAKE for every call that wakes
 * (WAKE, WAKE_BITSET, WAKE_OP, UNLOCK_PI, REQUEUE, CMP_REQUEUE(_PI)). */
enum futex_op_index {
	OP_WAIT,
	OP_WAIT_BITSET,
	OP_LOCK_PI,
	OP_LOCK_PI2,
	OP_WAIT_REQUEUE_PI,
	OP_WAITV,
	OP_WAKE,
	NR_OPS,
};

enum futex_fail_index {
	FAIL_EAGAIN,	/* the futex word no longer had the expected value */
	FAIL_ETIMEDOUT,
	FAIL_EINTR,	/* including the kernel's -ERESTART* codes */
	FAIL_OTHER,
	NR_FAILS,
};

struct proc_key {
	__u32 tgid;
	__u32 op;
};

/* Per process and operation: successful waits (count, time, histogram) and
 * failed ones by errno; for OP_WAKE only count is used. */
struct proc_stats {
	__u64 count;
	__u64 total_ns;
	__u64 failed[NR_FAILS];
	char comm[TASK_COMM_LEN]; /* of the process (its main thread) */
	__u64 hist[MAX_SLOTS];
};

/* As futexctn: a lock is its futex address, a contention site its user stack. */
struct wait_key {
	__u64 uaddr;
	__u64 stack; /* its hash in user_stacks */
	__u32 tgid;
	__u32 pad;
};

struct wait_stats {
	__u64 waits;
	__u64 wait_ns;
};

#endif /* FUTEX_H */
