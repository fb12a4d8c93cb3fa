// SPDX-License-Identifier: GPL-2.0
/* Context switches, off-CPU time, run-queue latency and wake-ups of the
 * threads of a set of processes, aggregated in the kernel. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "sched.h"
#include "common.bpf.h"

#define MAX_THREADS 8192
#define MAX_WAKEUP_PAIRS 16384

/* sched_switch passes prev_state since 5.18; before, the state is read from
 * the task (as core_fixes.bpf.h's get_task_state does). Set by the loader. */
const volatile bool has_prev_state_arg = true;
/* --counters-only, set by the loader: no switch is traced, so a wake-up only
 * counts its waker pair (a thread's wake-ups are the sum of its pairs), one
 * map update instead of two; a new thread still records its creation time. */
const volatile bool counters_only = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, __u64);
	__type(value, struct hb_thread_stats);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_WAKEUP_PAIRS);
	__type(key, struct hb_wakeup_key);
	__type(value, struct hb_wakeup_val);
} wakeups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HB_PAIR_SLOTS);
	__type(key, __u32);
	__type(value, struct hb_pair_slot);
} pair_slots SEC(".maps");

/* Switch-outs in the window not preceded by the switch-in that must have come
 * between: a sched_switch the program did not see (a kernel that runs no BPF
 * programs while some tasks are current). The off-CPU interval that switch-in
 * ended is missing from the result. */
__u64 missed_switch_ins;

/* Too large for the BPF stack: the initial value lives in .bss (runqlat's
 * `static struct hist zero`). */
static struct hb_thread_stats zero_stats;

/* One entry per target thread seen since attaching, holding both its counters
 * and its timestamps, so that an event costs one lookup per thread. Counters
 * only the thread's own switches update are written without atomics: a
 * thread is switched on or off one CPU at a time. */
static __always_inline struct hb_thread_stats *hb_thread_stats(__u64 pid_tgid, struct task_struct *task)
{
	struct hb_thread_stats *st;
	long err;

	st = bpf_map_lookup_elem(&threads, &pid_tgid);
	if (st)
		return st;
	err = bpf_map_update_elem(&threads, &pid_tgid, &zero_stats, BPF_NOEXIST);
	if (err && err != -HB_EEXIST) {
		hb_count_lost();
		return NULL;
	}
	st = bpf_map_lookup_elem(&threads, &pid_tgid);
	if (st) {
		st->tgid = pid_tgid >> 32;
		bpf_probe_read_kernel_str(st->comm, sizeof(st->comm), task->comm);
	}
	return st;
}

static __always_inline void switch_out(__u64 pid_tgid, struct task_struct *prev, bool voluntary,
				       __u64 now)
{
	struct hb_thread_stats *st;
	bool missed;

	st = hb_thread_stats(pid_tgid, prev);
	if (!st)
		return;
	missed = st->state == HB_STATE_OFF && st->off_ts;
	st->off_ts = now;
	st->state = HB_STATE_OFF;
	/* Preempted while runnable: back on the run queue right away (runqlat). */
	if (!voluntary)
		st->runq_ts = now;
	if (!hb_enabled)
		return;
	if (voluntary)
		st->voluntary++;
	else
		st->involuntary++;
	if (missed) {
		st->missed_switch_ins++;
		__sync_fetch_and_add(&missed_switch_ins, 1);
	}
}

static __always_inline void switch_in(__u64 pid_tgid, struct task_struct *next, __u64 now)
{
	struct hb_thread_stats *st;
	__u64 off_ts, runq_ts;
	__u64 delta;

	st = hb_thread_stats(pid_tgid, next);
	if (!st)
		return;
	/* off_ts 0 (no switch-out seen): off CPU since before attaching, so
	 * counted from the window start. */
	off_ts = st->off_ts;
	runq_ts = st->runq_ts;
	st->state = HB_STATE_ON;
	if (!hb_enabled)
		return;
	delta = hb_window_delta(off_ts, now);
	st->offcpu_ns += delta;
	st->offcpu_hist[hb_log2_slot(delta)]++;
	/* An enqueue older than the switch-out is stale (a wake-up not seen). */
	if (runq_ts && runq_ts >= off_ts) {
		delta = hb_window_delta(runq_ts, now);
		st->runq_ns += delta;
		st->runq_hist[hb_log2_slot(delta)]++;
	}
}

/* sched_switch runs on the CPU switching, with prev still current. */
static __always_inline int on_switch(bool btf, unsigned long long *ctx, bool preempt,
				     struct task_struct *prev, struct task_struct *next)
{
	__u64 prev_id = bpf_get_current_pid_tgid();
	__u32 next_tid = HB_TASK_FIELD(btf, next, pid);
	__u32 next_tgid = HB_TASK_FIELD(btf, next, tgid);
	bool prev_target = (__u32)prev_id && hb_is_target(prev_id >> 32);
	bool next_target = next_tid && hb_is_target(next_tgid);
	bool voluntary;
	long state;
	__u64 now;

	if (!prev_target && !next_target)
		return 0;
	now = bpf_ktime_get_ns();
	if (prev_target) {
		state = has_prev_state_arg ? (long)ctx[3] : hb_task_state(prev);
		/* __schedule() counts nvcsw only for a task that blocks: not
		 * preempted and not TASK_RUNNING. A task preempted between
		 * setting its state and calling schedule() counts as nivcsw. */
		voluntary = !preempt && state != HB_TASK_RUNNING;
		switch_out(prev_id, prev, voluntary, now);
	}
	if (next_target)
		switch_in((__u64)next_tgid << 32 | next_tid, next, now);
	return 0;
}

/* The waker is the current task: in interrupt context (timer expiry) that is
 * whichever task was interrupted, often the idle task (pid 0). */
static __always_inline void count_waker(struct task_struct *p, __u32 tgid, __u32 tid)
{
	__u64 waker = bpf_get_current_pid_tgid();
	__u32 slot = hb_pair_slot(waker, tid);
	struct hb_wakeup_key key = {};
	struct hb_wakeup_val *val;
	struct hb_pair_slot *ps;
	bool claim;
	long err;

	ps = bpf_map_lookup_elem(&pair_slots, &slot);
	if (!ps)
		return;
	/* Interrupts are off in try_to_wake_up(): nothing else on this CPU
	 * writes the slot meanwhile. */
	if (ps->count && ps->waker_tid == (__u32)waker && ps->wakee_tid == tid) {
		ps->count++;
		return;
	}
	claim = !ps->count;
	key.waker_tid = waker;
	key.wakee_tid = tid;
	val = bpf_map_lookup_elem(&wakeups, &key);
	if (!val) {
		struct hb_wakeup_val init = {
			.count = !claim,
			.waker_tgid = waker >> 32,
			.wakee_tgid = tgid,
		};

		bpf_get_current_comm(init.waker_comm, sizeof(init.waker_comm));
		bpf_probe_read_kernel_str(init.wakee_comm, sizeof(init.wakee_comm), p->comm);
		err = bpf_map_update_elem(&wakeups, &key, &init, BPF_NOEXIST);
		if (err == -HB_EEXIST)
			val = bpf_map_lookup_elem(&wakeups, &key);
		else if (err) {
			hb_count_lost();
			return;
		}
		if (!err && !claim)
			return;
	}
	if (claim) {
		ps->waker_tid = waker;
		ps->wakee_tid = tid;
		ps->count = 1;
	} else if (val) {
		__sync_fetch_and_add(&val->count, 1);
	}
}

static __always_inline int on_wakeup(bool btf, struct task_struct *p, bool new_task)
{
	__u32 tgid = HB_TASK_FIELD(btf, p, tgid);
	__u32 tid = HB_TASK_FIELD(btf, p, pid);
	struct hb_thread_stats *st;
	__u64 now;

	if (!hb_is_target(tgid))
		return 0;
	if (counters_only && !new_task) {
		if (hb_enabled)
			count_waker(p, tgid, tid);
		return 0;
	}
	st = hb_thread_stats((__u64)tgid << 32 | tid, p);
	if (!st)
		return 0;
	now = bpf_ktime_get_ns();
	st->runq_ts = now;
	/* A new task has been off CPU since it was created, and its first
	 * wake-up is its creation, not a wake-up. */
	if (new_task) {
		st->off_ts = now;
		st->state = HB_STATE_OFF;
		return 0;
	}
	if (hb_enabled) {
		/* Wakers on any CPU: atomic. */
		__sync_fetch_and_add(&st->wakeups, 1);
		count_waker(p, tgid, tid);
	}
	return 0;
}

/* The name a thread had last, for threads gone before the result is written;
 * counters only, also its kernel counters (the loader reads the others' from
 * /proc, where an exited thread is gone: a workload may exit right after its
 * window closes, before the loader's closing reading). */
static __always_inline int on_exit(void)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct task_struct *task;
	struct hb_thread_stats *st;

	if (!hb_target_exit(pid_tgid >> 32))
		return 0;
	if (!counters_only) {
		st = bpf_map_lookup_elem(&threads, &pid_tgid);
		if (st)
			bpf_get_current_comm(st->comm, sizeof(st->comm));
		return 0;
	}
	task = (struct task_struct *)bpf_get_current_task();
	st = hb_thread_stats(pid_tgid, task);
	if (!st)
		return 0;
	bpf_get_current_comm(st->comm, sizeof(st->comm));
	st->exited.voluntary = BPF_CORE_READ(task, nvcsw);
	st->exited.involuntary = BPF_CORE_READ(task, nivcsw);
	st->exited.oncpu_ns = BPF_CORE_READ(task, se.sum_exec_runtime);
	st->exited.runq_ns = BPF_CORE_READ(task, sched_info.run_delay);
	st->exited.timeslices = BPF_CORE_READ(task, sched_info.pcount);
	st->exited.at_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sc_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(true, ctx, preempt, prev, next);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sc_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(false, ctx, preempt, prev, next);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sc_wakeup_btf, struct task_struct *p)
{
	return on_wakeup(true, p, false);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(sc_wakeup_raw, struct task_struct *p)
{
	return on_wakeup(false, p, false);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sc_wakenew_btf, struct task_struct *p)
{
	return on_wakeup(true, p, true);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(sc_wakenew_raw, struct task_struct *p)
{
	return on_wakeup(false, p, true);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(sc_fork_btf, struct task_struct *parent, struct task_struct *child)
{
	hb_target_fork(child->tgid);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(sc_fork_raw, struct task_struct *parent, struct task_struct *child)
{
	hb_target_fork(BPF_CORE_READ(child, tgid));
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sc_exit_btf)
{
	return on_exit();
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(sc_exit_raw)
{
	return on_exit();
}

char LICENSE[] SEC("license") = "GPL";
