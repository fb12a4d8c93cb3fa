// SPDX-License-Identifier: GPL-2.0
/* Off-CPU and off-wake stacks of a set of processes (libbpf-tools'
 * offcputime and bcc's offwaketime): at sched_switch the user stack (and the
 * kernel stack with kernel_stacks) of a target thread going off CPU, with its
 * state; at sched_waking the waker's, keyed by the woken task (the argument,
 * not current); when the thread is switched in again, the blocked ns under
 * both. Every blocking counts, not only futex waits. tp_btf only: no
 * kprobes. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "offwake.h"
#include "common.bpf.h"

#define MAX_THREADS 8192
#define MAX_ENTRIES 16384
#define MAX_STACKS 16384
#define EFAULT 14

/* sched_switch passes prev_state since 5.18 (set by the loader). */
const volatile bool has_prev_state_arg = true;
/* --kernel-stacks: a kernel stack walk (ORC) costs ~2 us a call on the VM
 * this was measured on, a user one (frame pointers) ~0.1 us; cleared, the
 * verifier drops the kernel stack calls and their ids are -EFAULT. */
const volatile bool kernel_stacks = false;

/* preempt_count is per CPU (x86: __preempt_count), and this kernel's
 * kallsyms has no data symbols for a __ksym: it is read at this CPU's rq
 * (current's cfs_rq->rq, the per-CPU `runqueues`) plus the distance between
 * the two variables in the per-CPU section, which the loader takes from the
 * kernel's BTF. 0: not known; only the idle task is then taken for an
 * interrupt. */
const volatile __s64 preempt_count_from_rq = 0;

#define HARDIRQ_MASK 0x000f0000
#define NMI_MASK 0x00f00000
#define SOFTIRQ_OFFSET 0x00000100
#define PREEMPT_MASK 0x000000ff

/* bpf_get_stackid() failures: -EEXIST is a collision in the stack map (its
 * bucket holds another stack), any other error but -EFAULT (no user stack:
 * a kernel thread) a stack not taken. Both are reported. */
__u64 stack_collisions;
__u64 stack_errors;

struct start {
	__u64 ts;
	__s32 user_stack_id;
	__s32 kern_stack_id;
	__u32 state;
};

struct waker {
	__u32 tgid;
	__u32 tid;
	__s32 user_stack_id;
	__s32 kern_stack_id;
	__u32 flags;
	char comm[TASK_COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, __u32);
	__type(value, struct start);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, __u32);
	__type(value, struct waker);
} wakers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_ENTRIES);
	__type(key, struct offwake_key);
	__type(value, struct offwake_val);
} info SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, MAX_STACKS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MAX_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct task_struct___pre_5_14 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline long task_state(struct task_struct *task)
{
	struct task_struct___pre_5_14 *old = (void *)task;

	if (bpf_core_field_exists(task->__state))
		return BPF_CORE_READ(task, __state);
	return BPF_CORE_READ(old, state);
}

static __always_inline int preempt_count(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	unsigned long rq;
	int count;

	if (!preempt_count_from_rq || !bpf_core_field_exists(task->se.cfs_rq))
		return 0;
	rq = (unsigned long)BPF_CORE_READ(task, se.cfs_rq, rq);
	if (!rq || bpf_probe_read_kernel(&count, sizeof(count), (void *)(rq + preempt_count_from_rq)))
		return 0;
	return count;
}

/* Whether current merely was interrupted by the wake-up: a hardware
 * interrupt or NMI (a timer's expiry), a softirq run at an interrupt's exit
 * (preemption was on where it hit: a softirq run by local_bh_enable() holds
 * one preempt count, and that one is the task's own doing, e.g. a loopback
 * send's receive path), or the idle task. An interrupt of code that had
 * preemption off is taken for the task's own softirq. */
static __always_inline bool waker_interrupted(__u32 tid)
{
	int count = preempt_count();

	if (!tid || count & (HARDIRQ_MASK | NMI_MASK))
		return true;
	return (count & SOFTIRQ_OFFSET) && !(count & PREEMPT_MASK);
}

static __always_inline __s32 stack_id(void *ctx, __u64 flags)
{
	long id = bpf_get_stackid(ctx, &stacks, flags);

	if (id >= 0)
		return id;
	if (id == -EEXIST)
		__sync_fetch_and_add(&stack_collisions, 1);
	else if (id != -EFAULT)
		__sync_fetch_and_add(&stack_errors, 1);
	return id;
}

/* prev is current: its stacks are taken here, while it goes off CPU. */
static __always_inline void switch_out(unsigned long long *ctx, bool preempt,
				       struct task_struct *prev, __u32 tid)
{
	struct start s = {};
	long state;

	state = has_prev_state_arg ? (long)ctx[3] : task_state(prev);
	s.state = preempt || state == TASK_RUNNING ? STATE_PREEMPTED : (__u32)state & 0xff;
	s.ts = bpf_ktime_get_ns();
	/* Also before the window: a wait that began then ends in it. */
	s.user_stack_id = stack_id(ctx, BPF_F_USER_STACK);
	s.kern_stack_id = kernel_stacks ? stack_id(ctx, 0) : -EFAULT;
	if (bpf_map_update_elem(&starts, &tid, &s, BPF_ANY))
		count_lost();
	/* A waker seen before this switch-out woke an earlier wait. */
	bpf_map_delete_elem(&wakers, &tid);
}

static __always_inline void switch_in(struct task_struct *next, __u32 tgid, __u32 tid)
{
	struct offwake_key key = {};
	struct offwake_val *val;
	struct start *s;
	struct waker *w;
	__u64 delta;
	long err;

	s = bpf_map_lookup_elem(&starts, &tid);
	if (!s || !s->ts)
		return;
	delta = window_delta(s->ts, bpf_ktime_get_ns());
	key.tgid = tgid;
	key.tid = tid;
	key.user_stack_id = s->user_stack_id;
	key.kern_stack_id = s->kern_stack_id;
	key.state = s->state;
	s->ts = 0;
	key.waker_user_stack_id = key.waker_kern_stack_id = -EFAULT;
	w = bpf_map_lookup_elem(&wakers, &tid);
	if (w) {
		if (key.state != STATE_PREEMPTED) {
			key.waker_tgid = w->tgid;
			key.waker_tid = w->tid;
			key.waker_user_stack_id = w->user_stack_id;
			key.waker_kern_stack_id = w->kern_stack_id;
			key.waker_flags = w->flags;
		}
	}
	if (!enabled || !delta)
		goto out;
	val = bpf_map_lookup_elem(&info, &key);
	if (!val) {
		struct offwake_val init = { .blocked_ns = delta, .count = 1 };

		bpf_probe_read_kernel_str(init.comm, sizeof(init.comm), next->comm);
		if (w)
			__builtin_memcpy(init.waker_comm, w->comm, sizeof(init.waker_comm));
		err = bpf_map_update_elem(&info, &key, &init, BPF_NOEXIST);
		if (!err)
			goto out;
		if (err != -EEXIST) {
			count_lost();
			goto out;
		}
		val = bpf_map_lookup_elem(&info, &key);
		if (!val)
			goto out;
	}
	__sync_fetch_and_add(&val->blocked_ns, delta);
	__sync_fetch_and_add(&val->count, 1);
out:
	if (w)
		bpf_map_delete_elem(&wakers, &tid);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ow_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 prev_tid = prev->pid, next_tid = next->pid;

	if (prev_tid && is_target(prev->tgid))
		switch_out(ctx, preempt, prev, prev_tid);
	if (next_tid && is_target(next->tgid))
		switch_in(next, next->tgid, next_tid);
	return 0;
}

/* The woken task is the argument p; current is the waker (in interrupt
 * context whichever task was interrupted: flagged, and its kernel stack shows
 * the interrupt, e.g. hrtimer_wakeup). */
SEC("tp_btf/sched_waking")
int BPF_PROG(ow_waking, struct task_struct *p)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct waker w = {};
	__u32 tid = p->pid;

	if (!tid || !is_target(p->tgid))
		return 0;
	w.tgid = id >> 32;
	w.tid = id;
	/* An interrupted task's user stack woke no one: not taken. */
	if (waker_interrupted(w.tid)) {
		w.flags = WAKER_INTERRUPT;
		w.user_stack_id = -EFAULT;
	} else {
		w.user_stack_id = stack_id(ctx, BPF_F_USER_STACK);
	}
	w.kern_stack_id = kernel_stacks ? stack_id(ctx, 0) : -EFAULT;
	bpf_get_current_comm(w.comm, sizeof(w.comm));
	if (bpf_map_update_elem(&wakers, &tid, &w, BPF_ANY))
		count_lost();
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(ow_fork, struct task_struct *parent, struct task_struct *child)
{
	target_fork(child->tgid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(ow_exit)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = pid_tgid;

	if (target_exit(pid_tgid >> 32)) {
		bpf_map_delete_elem(&starts, &tid);
		bpf_map_delete_elem(&wakers, &tid);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
