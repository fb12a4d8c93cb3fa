/* SPDX-License-Identifier: GPL-2.0 */
/* Definitions shared by the BPF programs and their loaders. */
#ifndef HB_SHARED_H
#define HB_SHARED_H

#define HB_TASK_COMM_LEN 16

/* log2 histograms: slot i counts values in [2^i, 2^(i+1)) ns (slot 0 also 0
 * and 1); the last slot also takes everything above, 2^35 ns is ~34 s. */
#define HB_MAX_SLOTS 36

/* The target set is a bitmap of tgids in .bss, sized for the kernel's PID_MAX_LIMIT on
 * 64-bit kernels (4M), so checking membership on every scheduler event is
 * one load and a bit test instead of a hash lookup. */
#define HB_PID_MAX_LIMIT (4 * 1024 * 1024)
#define HB_TARGET_WORDS (HB_PID_MAX_LIMIT / 64)

/* Max stack depth walked (perf's default kernel.perf_event_max_stack). */
#define HB_MAX_STACK_DEPTH 127

/* A user stack as the programs walk it (user_stack.bpf.h; frame pointers,
 * leaf first: the user ip, then return addresses), keyed in their
 * hb_user_stacks map by a 64-bit hash of its frames. */
struct hb_user_stack {
	__u32 nr;
	__u32 pad;
	__u64 ips[HB_MAX_STACK_DEPTH];
};

#endif /* HB_SHARED_H */
