// SPDX-License-Identifier: GPL-2.0
/* Futex waits of a set of processes: per process and operation (count, time,
 * log2 histogram, failures by errno) and, unless --no-stacks, per lock address
 * and user stack (futexctn's key), aggregated in the kernel. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "futex.h"
#include "common.bpf.h"

#define MAX_PROC_OPS 4096
#define MAX_WAITS 16384
#define HB_MAX_USER_STACKS 4096

#include "user_stack.bpf.h"

#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_REQUEUE 3
#define FUTEX_CMP_REQUEUE 4
#define FUTEX_WAKE_OP 5
#define FUTEX_LOCK_PI 6
#define FUTEX_UNLOCK_PI 7
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAKE_BITSET 10
#define FUTEX_WAIT_REQUEUE_PI 11
#define FUTEX_CMP_REQUEUE_PI 12
#define FUTEX_LOCK_PI2 13
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_CLOCK_REALTIME 256
#define FUTEX_CMD_MASK ~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME)

#define EINTR 4
#define EAGAIN 11
#define ETIMEDOUT 110
/* Kernel-internal: a wait interrupted by a signal, restarted after the handler. */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

/* Syscall numbers for the raw sys_enter fallback, set by the loader. */
const volatile long nr_futex = -1;
const volatile long nr_futex_waitv = -1;
/* Cleared by the loader for --no-stacks: the verifier then drops count_wait()
 * and its user stack walk as dead code. */
const volatile bool with_stacks = true;

/* The futex wait a thread is in (ts 0: none), in the thread's task storage
 * (no hash lookup, freed with the task). */
struct hb_wait_start {
	__u64 ts;
	__u64 uaddr;
	__u32 op;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct hb_wait_start);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PROC_OPS);
	__type(key, struct hb_proc_key);
	__type(value, struct hb_proc_stats);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_WAITS);
	__type(key, struct hb_wait_key);
	__type(value, struct hb_wait_stats);
} waits SEC(".maps");

static struct hb_proc_stats zero_proc;

static __always_inline int op_index(int op)
{
	switch (op & FUTEX_CMD_MASK) {
	case FUTEX_WAIT:
		return HB_OP_WAIT;
	case FUTEX_WAIT_BITSET:
		return HB_OP_WAIT_BITSET;
	case FUTEX_LOCK_PI:
		return HB_OP_LOCK_PI;
	case FUTEX_LOCK_PI2:
		return HB_OP_LOCK_PI2;
	case FUTEX_WAIT_REQUEUE_PI:
		return HB_OP_WAIT_REQUEUE_PI;
	case FUTEX_WAKE:
	case FUTEX_WAKE_BITSET:
	case FUTEX_WAKE_OP:
	case FUTEX_UNLOCK_PI:
	case FUTEX_REQUEUE:
	case FUTEX_CMP_REQUEUE:
	case FUTEX_CMP_REQUEUE_PI:
		return HB_OP_WAKE;
	default:
		return -1;
	}
}

static __always_inline int fail_index(long ret)
{
	switch (-ret) {
	case EAGAIN:
		return HB_FAIL_EAGAIN;
	case ETIMEDOUT:
		return HB_FAIL_ETIMEDOUT;
	case EINTR:
	case ERESTARTSYS:
	case ERESTARTNOINTR:
	case ERESTARTNOHAND:
	case ERESTART_RESTARTBLOCK:
		return HB_FAIL_EINTR;
	default:
		return HB_FAIL_OTHER;
	}
}

static __always_inline bool current_is_target(void)
{
	return hb_is_target(bpf_get_current_pid_tgid() >> 32);
}

static __always_inline struct hb_proc_stats *hb_proc_stats(__u32 tgid, __u32 op)
{
	struct hb_proc_key key = { .tgid = tgid, .op = op };
	struct task_struct *task, *leader;
	struct hb_proc_stats *ps;
	long err;

	ps = bpf_map_lookup_elem(&procs, &key);
	if (ps)
		return ps;
	err = bpf_map_update_elem(&procs, &key, &zero_proc, BPF_NOEXIST);
	if (err && err != -HB_EEXIST) {
		hb_count_lost();
		return NULL;
	}
	ps = bpf_map_lookup_elem(&procs, &key);
	if (ps) {
		task = (struct task_struct *)bpf_get_current_task();
		leader = BPF_CORE_READ(task, group_leader);
		bpf_probe_read_kernel_str(ps->comm, sizeof(ps->comm), leader->comm);
	}
	return ps;
}

/* Called for target threads only. */
static __always_inline void on_enter(int idx, __u64 uaddr)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct hb_wait_start *sp;
	struct hb_proc_stats *ps;

	if (idx < 0)
		return;
	if (idx == HB_OP_WAKE) {
		if (hb_enabled && (ps = hb_proc_stats(pid_tgid >> 32, HB_OP_WAKE)))
			__sync_fetch_and_add(&ps->count, 1);
		return;
	}
	sp = bpf_task_storage_get(&starts, bpf_get_current_task_btf(), NULL,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!sp) {
		hb_count_lost();
		return;
	}
	sp->ts = bpf_ktime_get_ns();
	sp->uaddr = uaddr;
	sp->op = idx;
}

/* futex_waitv(waiters, ...): the lock is named by the first waiter's address
 * (struct futex_waitv { __u64 val; __u64 uaddr; ... }). */
static __always_inline __u64 waitv_uaddr(__u64 waiters)
{
	__u64 uaddr = 0;

	bpf_probe_read_user(&uaddr, sizeof(uaddr), (void *)(waiters + 8));
	return uaddr;
}

static __always_inline void count_wait(__u32 tgid, const struct hb_wait_start *start, __u64 delta)
{
	struct hb_wait_key key = { .uaddr = start->uaddr, .tgid = tgid };
	struct hb_wait_stats *ws;
	long err;

	key.stack = hb_user_stack();
	ws = bpf_map_lookup_elem(&waits, &key);
	if (!ws) {
		struct hb_wait_stats init = { .waits = 1, .wait_ns = delta };

		err = bpf_map_update_elem(&waits, &key, &init, BPF_NOEXIST);
		if (!err)
			return;
		if (err != -HB_EEXIST) {
			hb_count_lost();
			return;
		}
		ws = bpf_map_lookup_elem(&waits, &key);
		if (!ws)
			return;
	}
	__sync_fetch_and_add(&ws->waits, 1);
	__sync_fetch_and_add(&ws->wait_ns, delta);
}

/* Runs for every syscall exit of target threads in the raw fallback: only a
 * thread in a futex wait has a `starts` entry with a start time. */
static __always_inline int on_exit(long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), now, delta;
	struct hb_wait_start *sp, start;
	struct hb_proc_stats *ps;

	if (!hb_is_target(pid_tgid >> 32))
		return 0;
	sp = bpf_task_storage_get(&starts, bpf_get_current_task_btf(), NULL, 0);
	if (!sp || !sp->ts)
		return 0;
	now = bpf_ktime_get_ns();
	start = *sp;
	sp->ts = 0;
	if (!hb_enabled)
		return 0;
	ps = hb_proc_stats(pid_tgid >> 32, start.op);
	if (!ps)
		return 0;
	/* A failed wait did not wait for the lock: counted apart, no time. */
	if (ret < 0) {
		__sync_fetch_and_add(&ps->failed[fail_index(ret)], 1);
		return 0;
	}
	delta = hb_window_delta(start.ts, now);
	__sync_fetch_and_add(&ps->count, 1);
	__sync_fetch_and_add(&ps->total_ns, delta);
	__sync_fetch_and_add(&ps->hist[hb_log2_slot(delta)], 1);
	if (with_stacks)
		count_wait(pid_tgid >> 32, &start, delta);
	return 0;
}

static __always_inline int on_sys_enter(struct pt_regs *regs, long id)
{
	if (id != nr_futex && id != nr_futex_waitv)
		return 0;
	if (!current_is_target())
		return 0;
	if (id == nr_futex)
		on_enter(op_index(PT_REGS_PARM2_CORE_SYSCALL(regs)), PT_REGS_PARM1_CORE_SYSCALL(regs));
	else
		on_enter(HB_OP_WAITV, waitv_uaddr(PT_REGS_PARM1_CORE_SYSCALL(regs)));
	return 0;
}

static __always_inline int on_process_exit(void)
{
	/* A thread's wait start goes with its task storage. */
	hb_target_exit(bpf_get_current_pid_tgid() >> 32);
	return 0;
}

/* Preferred: the syscall tracepoints of futex(2) and futex_waitv(2) only. */
SEC("tracepoint/syscalls/sys_enter_futex")
int fx_enter_tp(struct syscall_trace_enter *ctx)
{
	if (current_is_target())
		on_enter(op_index((int)ctx->args[1]), ctx->args[0]);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_futex")
int fx_exit_tp(struct syscall_trace_exit *ctx)
{
	return on_exit(ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_futex_waitv")
int fx_wv_enter_tp(struct syscall_trace_enter *ctx)
{
	if (current_is_target())
		on_enter(HB_OP_WAITV, waitv_uaddr(ctx->args[0]));
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_futex_waitv")
int fx_wv_exit_tp(struct syscall_trace_exit *ctx)
{
	return on_exit(ctx->ret);
}

/* Fallback without tracefs: every syscall's raw entry/exit, filtered by number. */
SEC("tp_btf/sys_enter")
int BPF_PROG(fx_sysenter_btf, struct pt_regs *regs, long id)
{
	return on_sys_enter(regs, id);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(fx_sysexit_btf, struct pt_regs *regs, long ret)
{
	return on_exit(ret);
}

SEC("raw_tp/sys_enter")
int BPF_PROG(fx_sysenter_raw, struct pt_regs *regs, long id)
{
	return on_sys_enter(regs, id);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(fx_sysexit_raw, struct pt_regs *regs, long ret)
{
	return on_exit(ret);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fx_fork_btf, struct task_struct *parent, struct task_struct *child)
{
	hb_target_fork(child->tgid);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(fx_fork_raw, struct task_struct *parent, struct task_struct *child)
{
	hb_target_fork(BPF_CORE_READ(child, tgid));
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(fx_pexit_btf)
{
	return on_process_exit();
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(fx_pexit_raw)
{
	return on_process_exit();
}

char LICENSE[] SEC("license") = "GPL";
