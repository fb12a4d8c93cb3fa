/* SPDX-License-Identifier: GPL-2.0 */
#ifndef HB_GC_H
#define HB_GC_H

#include "shared.h"

/* Go's runtime.stwReason codes (runtime/proc.go, Go 1.21+; new reasons are
 * only ever appended). The two GC ones are what stwReason.isGC() tests. */
#define HB_STW_GC_MARK_TERM 1
#define HB_STW_GC_SWEEP_TERM 2

/* Per process and stop-the-world reason. */
struct hb_stw_key {
	__u32 tgid;
	__u32 reason;
};

struct hb_stw_stats {
	__u64 stops;	/* stopTheWorldWithSema entries in the window */
	__u64 pauses;	/* pauses that ended in the window */
	__u64 total_ns;
	__u64 max_ns;
	__u64 hist[HB_MAX_SLOTS];
};

/* runtime_clock flags, per target, set by the loader. */
#define HB_RT_WORLDSTOP 1 /* startTheWorldWithSema(now, w worldStop): Go 1.22+ */
#define HB_RT_NOW_PROBE 2 /* the uprobe after its nanotime() call is attached */

enum hb_stw_phase {
	HB_STW_NONE,
	HB_STW_STOPPING,	/* stopTheWorldWithSema entered */
	HB_STW_STARTING,	/* startTheWorldWithSema entered, waiting for its nanotime() */
};

/* The stop-the-world a process is in; one at a time per process, the runtime
 * serializes them with worldsema. */
struct hb_stw_pending {
	__u64 ts;	/* stopTheWorldWithSema entry (bpf_ktime_get_ns) */
	__u64 begin;	/* when the pause began: the runtime's time or ts */
	__u32 reason;
	__u32 phase;	/* enum hb_stw_phase */
	__u32 runtime_begin; /* begin is the runtime's own time */
	__u32 pad;
};

#endif /* HB_GC_H */
