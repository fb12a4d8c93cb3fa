/* SPDX-License-Identifier: GPL-2.0 */
#ifndef HB_OFFWAKE_H
#define HB_OFFWAKE_H

#include "shared.h"

/* The task state a blocked interval is recorded with: the low bits of
 * prev_state (TASK_INTERRUPTIBLE 1, TASK_UNINTERRUPTIBLE 2, ...), or
 * HB_STATE_PREEMPTED for a task switched out while runnable (no waker then). */
#define HB_STATE_PREEMPTED 0xffffffffU

/* waker_flags: the wake-up came from interrupt context (current was merely
 * the task interrupted); its user stack was not taken. */
#define HB_WAKER_INTERRUPT 1U

/* As offwaketime's key: the blocked thread and its stacks at the switch-out,
 * the thread that woke it (waker_tid 0: none seen) and its stacks at
 * sched_waking. A user stack is its hash in the user stack map, 0 for none
 * (a kernel thread, an interrupt); a kernel stack id < 0 is the negated error
 * of bpf_get_stackid(), or -EFAULT for a stack not taken (without
 * kernel_stacks). */
struct hb_offwake_key {
	__u64 user_stack;
	__u64 waker_user_stack;
	__u32 tgid;
	__u32 tid;
	__u32 waker_tgid;
	__u32 waker_tid;
	__s32 kern_stack_id;
	__s32 waker_kern_stack_id;
	__u32 state;
	__u32 waker_flags;
};

struct hb_offwake_val {
	__u64 blocked_ns; /* in the window */
	__u64 count;
	char comm[HB_TASK_COMM_LEN];
	char waker_comm[HB_TASK_COMM_LEN];
};

#endif /* HB_OFFWAKE_H */
