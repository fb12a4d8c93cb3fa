// SPDX-License-Identifier: GPL-2.0
/* Stop-the-world pauses and GC cycles of Go processes, from entry-only uprobes
 * on the Go runtime (uretprobes corrupt Go stacks): a pause lasts from
 * runtime.stopTheWorldWithSema to runtime.startTheWorldWithSema, split by the
 * runtime's stwReason; a GC cycle is a sweep-termination stop-the-world, which
 * gcStart does exactly once per cycle it starts. Aggregated in the kernel. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "gc.h"
#include "common.bpf.h"

#define MAX_PROCS 1024
#define MAX_PROC_REASONS 4096

/* Go's register ABI (ABIInternal): integer arguments (struct fields each in
 * their own register) in RAX, RBX, RCX, ... on amd64, R0, R1, R2, ... on
 * arm64, not where the C ABI's PT_REGS_PARM* look. */
#if defined(__TARGET_ARCH_x86)
#define GO_ARG1(ctx) ((ctx)->ax)
#define GO_ARG2(ctx) ((ctx)->bx)
#define GO_ARG3(ctx) ((ctx)->cx)
#define STACK_POINTER(ctx) ((ctx)->sp)
#elif defined(__TARGET_ARCH_arm64)
#define GO_ARG1(ctx) ((ctx)->regs[0])
#define GO_ARG2(ctx) ((ctx)->regs[1])
#define GO_ARG3(ctx) ((ctx)->regs[2])
#define STACK_POINTER(ctx) ((ctx)->sp)
#else
#error "Go register ABI arguments not defined for this architecture"
#endif

/* startTheWorldWithSema entries in the window without a stop seen before
 * (the process was stopped already when the probes were attached). */
__u64 unpaired_starts;
/* Pauses in the window timed (in part) from the uprobes' own timestamps
 * because the runtime's were not usable (see gc_start_world). */
__u64 probe_timed;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PROCS);
	__type(key, __u32);
	__type(value, struct hb_stw_pending);
} pending SEC(".maps");

/* RT_* flags per target tgid, set by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PROCS);
	__type(key, __u32);
	__type(value, __u32);
} runtime_clock SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PROC_REASONS);
	__type(key, struct hb_stw_key);
	__type(value, struct hb_stw_stats);
} stats SEC(".maps");

static struct hb_stw_stats zero_stats;

static __always_inline struct hb_stw_stats *hb_stw_stats(__u32 tgid, __u32 reason)
{
	struct hb_stw_key key = { .tgid = tgid, .reason = reason };
	struct hb_stw_stats *st;
	long err;

	st = bpf_map_lookup_elem(&stats, &key);
	if (st)
		return st;
	err = bpf_map_update_elem(&stats, &key, &zero_stats, BPF_NOEXIST);
	if (err && err != -HB_EEXIST) {
		hb_count_lost();
		return NULL;
	}
	return bpf_map_lookup_elem(&stats, &key);
}

static __always_inline __u32 runtime_flags(__u32 tgid)
{
	__u32 *flags = bpf_map_lookup_elem(&runtime_clock, &tgid);

	return flags ? *flags : 0;
}

/* Counts the pause that began at sp->begin and ended at end (both
 * CLOCK_MONOTONIC); runtime_end: end is the runtime's own time. */
static __always_inline void count_pause(__u32 tgid, struct hb_stw_pending *sp, __u64 end,
					bool runtime_end)
{
	struct hb_stw_stats *st;
	__u64 delta;

	sp->phase = HB_STW_NONE;
	if (!hb_enabled)
		return;
	if (!sp->runtime_begin || !runtime_end)
		__sync_fetch_and_add(&probe_timed, 1);
	st = hb_stw_stats(tgid, sp->reason);
	if (!st)
		return;
	delta = hb_window_delta(sp->begin, end);
	__sync_fetch_and_add(&st->pauses, 1);
	__sync_fetch_and_add(&st->total_ns, delta);
	__sync_fetch_and_add(&st->hist[hb_log2_slot(delta)], 1);
	/* Not atomic: a process' pauses are serialized by the runtime. */
	if (delta > st->max_ns)
		st->max_ns = delta;
}

/* func stopTheWorldWithSema(reason stwReason) worldStop; reason is a uint8. */
SEC("uprobe")
int gc_stop_world(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct hb_stw_pending start = {};
	struct hb_stw_stats *st;

	if (!hb_is_target(tgid))
		return 0;
	start.ts = now;
	start.begin = now;
	start.reason = GO_ARG1(ctx) & 0xff;
	start.phase = HB_STW_STOPPING;
	if (bpf_map_update_elem(&pending, &tgid, &start, BPF_ANY))
		hb_count_lost();
	if (hb_enabled && (st = hb_stw_stats(tgid, start.reason)))
		__sync_fetch_and_add(&st->stops, 1);
	return 0;
}

/* func startTheWorldWithSema(now int64, w worldStop) int64, with worldStop
 * {reason stwReason; startedStopping int64; ...} (Go 1.22/1.23: {reason;
 * start int64}). The pause is timed as the runtime times it (PauseTotalNs,
 * /sched/pauses/total/{gc,other}): from w.startedStopping, its nanotime() once
 * stopTheWorldWithSema holds sched.lock, to `now`: the argument when the
 * caller passes one (mark termination), else the nanotime() this function
 * takes once the Ps are restarted (gc_world_now). nanotime() is
 * CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns(). The runtime's values are
 * used only if consistent (the reason seen at the stop, times between the
 * stop's entry and now); otherwise the uprobes' own timestamps stand in. */
SEC("uprobe")
int gc_start_world(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns(), rt_start, rt_now;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, flags;
	struct hb_stw_pending *sp;

	if (!hb_is_target(tgid))
		return 0;
	sp = bpf_map_lookup_elem(&pending, &tgid);
	if (!sp || sp->phase != HB_STW_STOPPING) {
		if (hb_enabled)
			__sync_fetch_and_add(&unpaired_starts, 1);
		return 0;
	}
	flags = runtime_flags(tgid);
	if (!(flags & HB_RT_WORLDSTOP)) {
		count_pause(tgid, sp, now, false);
		return 0;
	}
	rt_now = GO_ARG1(ctx);
	rt_start = GO_ARG3(ctx);
	if ((GO_ARG2(ctx) & 0xff) == sp->reason && rt_start >= sp->ts && rt_start <= now) {
		sp->begin = rt_start;
		sp->runtime_begin = 1;
	}
	if (rt_now) {
		if (rt_now >= sp->begin && rt_now <= now)
			count_pause(tgid, sp, rt_now, true);
		else
			count_pause(tgid, sp, now, false);
		return 0;
	}
	if (flags & HB_RT_NOW_PROBE)
		sp->phase = HB_STW_STARTING;
	else
		count_pause(tgid, sp, now, false);
	return 0;
}

/* Right after startTheWorldWithSema's `now = nanotime()` (amd64: the return
 * address of its call to the ABI0 runtime.nanotime1, whose result is on the
 * stack at 0(SP)). */
SEC("uprobe")
int gc_world_now(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns(), rt_now = 0;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct hb_stw_pending *sp;

	if (!hb_is_target(tgid))
		return 0;
	sp = bpf_map_lookup_elem(&pending, &tgid);
	if (!sp || sp->phase != HB_STW_STARTING)
		return 0;
	if (!bpf_probe_read_user(&rt_now, sizeof(rt_now), (void *)STACK_POINTER(ctx)) &&
	    rt_now >= sp->begin && rt_now <= now)
		count_pause(tgid, sp, rt_now, true);
	else
		count_pause(tgid, sp, now, false);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
