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
#include "user_stack.bpf.h"

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

/* Kernel stacks not taken: bpf_get_stackid() -EEXIST is a collision in the
 * stack map (its bucket holds another stack), any other error counts in
 * hb_stack_errors (user_stack.bpf.h) with the user stacks not stored. */
__u64 stack_collisions;

struct hb_waker {
	__u64 user_stack;
	__u32 tgid;
	__u32 tid; /* 0: no waker recorded since the switch-out */
	__s32 kern_stack_id;
	__u32 flags;
	char comm[HB_TASK_COMM_LEN];
};

/* Per thread, in the task's own storage (no hash, no bucket lock, freed with
 * the task): the blocking in progress since its switch-out and the waker
 * seen since. */
struct hb_thread {
	__u64 ts; /* switch-out time, 0 once switched in */
	__u64 user_stack;
	__s32 kern_stack_id;
	__u32 state;
	struct hb_waker waker;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct hb_thread);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_ENTRIES);
	__type(key, struct hb_offwake_key);
	__type(value, struct hb_offwake_val);
} info SEC(".maps");

/* Kernel stacks (kernel_stacks; the loader shrinks it to one entry otherwise). */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, MAX_STACKS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, HB_MAX_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

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

static __always_inline __s32 kernel_stack_id(void *ctx)
{
	long id = bpf_get_stackid(ctx, &stacks, 0);

	if (id >= 0)
		return id;
	if (id == -HB_EEXIST)
		__sync_fetch_and_add(&stack_collisions, 1);
	else
		__sync_fetch_and_add(&hb_stack_errors, 1);
	return id;
}

/* prev is current: its stacks are taken here, while it goes off CPU. */
static __always_inline void switch_out(unsigned long long *ctx, bool preempt,
				       struct task_struct *prev)
{
	struct hb_thread *t;
	long state;

	t = bpf_task_storage_get(&threads, prev, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		hb_count_lost();
		return;
	}
	state = has_prev_state_arg ? (long)ctx[3] : hb_task_state(prev);
	t->state = preempt || state == HB_TASK_RUNNING ? HB_STATE_PREEMPTED : (__u32)state & 0xff;
	/* Also before the window: a wait that began then ends in it. */
	t->user_stack = hb_user_stack();
	t->kern_stack_id = kernel_stacks ? kernel_stack_id(ctx) : -EFAULT;
	/* A waker seen before this switch-out woke an earlier wait. */
	t->waker.tid = 0;
	t->ts = bpf_ktime_get_ns();
}

static __always_inline void switch_in(struct task_struct *next, __u32 tgid, __u32 tid)
{
	struct hb_offwake_key key = {};
	struct hb_offwake_val *val;
	struct hb_thread *t;
	struct hb_waker *w;
	__u64 delta;
	long err;

	t = bpf_task_storage_get(&threads, next, NULL, 0);
	if (!t || !t->ts)
		return;
	delta = hb_window_delta(t->ts, bpf_ktime_get_ns());
	t->ts = 0;
	if (!hb_enabled || !delta)
		return;
	key.tgid = tgid;
	key.tid = tid;
	key.user_stack = t->user_stack;
	key.kern_stack_id = t->kern_stack_id;
	key.state = t->state;
	key.waker_kern_stack_id = -EFAULT;
	w = t->waker.tid && key.state != HB_STATE_PREEMPTED ? &t->waker : NULL;
	if (w) {
		key.waker_tgid = w->tgid;
		key.waker_tid = w->tid;
		key.waker_user_stack = w->user_stack;
		key.waker_kern_stack_id = w->kern_stack_id;
		key.waker_flags = w->flags;
	}
	val = bpf_map_lookup_elem(&info, &key);
	if (!val) {
		struct hb_offwake_val init = { .blocked_ns = delta, .count = 1 };

		bpf_probe_read_kernel_str(init.comm, sizeof(init.comm), next->comm);
		if (w)
			__builtin_memcpy(init.waker_comm, w->comm, sizeof(init.waker_comm));
		err = bpf_map_update_elem(&info, &key, &init, BPF_NOEXIST);
		if (!err)
			return;
		if (err != -HB_EEXIST) {
			hb_count_lost();
			return;
		}
		val = bpf_map_lookup_elem(&info, &key);
		if (!val)
			return;
	}
	__sync_fetch_and_add(&val->blocked_ns, delta);
	__sync_fetch_and_add(&val->count, 1);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ow_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 prev_tid = prev->pid, next_tid = next->pid;

	if (prev_tid && hb_is_target(prev->tgid))
		switch_out(ctx, preempt, prev);
	if (next_tid && hb_is_target(next->tgid))
		switch_in(next, next->tgid, next_tid);
	return 0;
}

/* The woken task is the argument p; current is the waker (in interrupt
 * context whichever task was interrupted: flagged, and its kernel stack shows
 * the interrupt, e.g. hrtimer_wakeup). */
SEC("tp_btf/sched_waking")
int BPF_PROG(ow_waking, struct task_struct *p)
{
	__u64 id;
	struct hb_thread *t;
	struct hb_waker *w;

	if (!p->pid || !hb_is_target(p->tgid))
		return 0;
	/* Not created here: a thread never switched out has no blocking to
	 * attribute a wake-up to. */
	t = bpf_task_storage_get(&threads, p, NULL, 0);
	if (!t || !t->ts)
		return 0;
	w = &t->waker;
	id = bpf_get_current_pid_tgid();
	w->tgid = id >> 32;
	/* An interrupted task's user stack woke no one: not taken. */
	if (waker_interrupted((__u32)id)) {
		w->flags = HB_WAKER_INTERRUPT;
		w->user_stack = 0;
	} else {
		w->flags = 0;
		w->user_stack = hb_user_stack();
	}
	w->kern_stack_id = kernel_stacks ? kernel_stack_id(ctx) : -EFAULT;
	bpf_get_current_comm(w->comm, sizeof(w->comm));
	w->tid = id;
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(ow_fork, struct task_struct *parent, struct task_struct *child)
{
	hb_target_fork(child->tgid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(ow_exit)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	/* The thread's storage goes with its task_struct. */
	hb_target_exit(pid_tgid >> 32);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
