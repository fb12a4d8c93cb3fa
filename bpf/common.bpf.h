/* SPDX-License-Identifier: GPL-2.0 */
/* BPF-side parts shared by the collectors: the target set, the measurement
 * window, loss accounting and the log2 histogram slot. */
#ifndef HB_COMMON_BPF_H
#define HB_COMMON_BPF_H

#include "shared.h"

#define HB_TASK_RUNNING 0
#define HB_EEXIST 17

/* Written by the loader through the mmap'ed .bss (and by the fork handler). */
__u64 hb_targets[HB_TARGET_WORDS];
/* The measurement window: counting is on while `hb_enabled`; hb_window_start_ns is
 * the bpf_ktime_get_ns() time the current window opened. */
volatile bool hb_enabled;
volatile __u64 hb_window_start_ns;
/* Map updates that failed (map full): reported so that a truncated result
 * is never mistaken for a complete one. */
__u64 hb_lost_events;

static __always_inline bool hb_is_target(__u32 tgid)
{
	return hb_targets[(tgid >> 6) & (HB_TARGET_WORDS - 1)] & (1ULL << (tgid & 63));
}

static __always_inline void hb_count_lost(void)
{
	__sync_fetch_and_add(&hb_lost_events, 1);
}

/* Intervals are attributed when they end; the part before the window opened
 * is cut off, so an interval straddling SIGUSR1 adds only its in-window part. */
static __always_inline __u64 hb_window_delta(__u64 start, __u64 now)
{
	__u64 opened = hb_window_start_ns;

	if (start < opened)
		start = opened;
	return now > start ? now - start : 0;
}

/* In 64 bits throughout, as libbpf-tools' log2l(): with a 32-bit r the bound
 * below is checked on the subregister, and verifiers before 6.x's (Debian 12's
 * 6.1) do not carry it to the 64-bit index, refusing every histogram update
 * ("math between map_value pointer and register with unbounded min value"). */
static __always_inline __u64 hb_log2_slot(__u64 v)
{
	__u64 r, shift;

	r = (v > 0xFFFFFFFFULL) << 5;
	v >>= r;
	shift = (v > 0xFFFF) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xFF) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xF) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (v >> 1);
	return r < HB_MAX_SLOTS ? r : HB_MAX_SLOTS - 1;
}

/* sched_process_fork runs in the parent: a process forked by a target joins
 * the set (a new thread shares the parent's tgid and is covered already). */
static __always_inline void hb_target_fork(__u32 child_tgid)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (child_tgid != tgid && hb_is_target(tgid))
		__sync_fetch_and_or(&hb_targets[(child_tgid >> 6) & (HB_TARGET_WORDS - 1)],
				    1ULL << (child_tgid & 63));
}

/* sched_process_exit runs in the exiting thread. Once the last thread of a
 * target is gone (signal->live dropped to 0 before the tracepoint), the tgid
 * leaves the set so a reused pid does not make another process a target.
 * Returns whether the thread belonged to a target. */
static __always_inline bool hb_target_exit(__u32 tgid)
{
	struct task_struct *task;

	if (!hb_is_target(tgid))
		return false;
	task = (struct task_struct *)bpf_get_current_task();
	if (BPF_CORE_READ(task, signal, live.counter) == 0)
		__sync_fetch_and_and(&hb_targets[(tgid >> 6) & (HB_TARGET_WORDS - 1)],
				     ~(1ULL << (tgid & 63)));
	return true;
}

struct task_struct___pre_5_14 {
	long state;
} __attribute__((preserve_access_index));

/* core_fixes.bpf.h: task_struct::state was renamed __state in 5.14. */
static __always_inline long hb_task_state(struct task_struct *task)
{
	struct task_struct___pre_5_14 *old = (void *)task;

	if (bpf_core_field_exists(task->__state))
		return BPF_CORE_READ(task, __state);
	return BPF_CORE_READ(old, state);
}

/* tp_btf programs get BTF-typed task pointers they may dereference directly;
 * raw_tp programs get plain integers that need probe reads (the split that
 * libbpf-tools' runqlat/offcputime make between their two variants). `btf` is
 * a compile-time constant in every caller, so only one branch is emitted. */
#define HB_TASK_FIELD(btf, task, field) ((btf) ? (task)->field : BPF_CORE_READ((task), field))

#endif /* HB_COMMON_BPF_H */
