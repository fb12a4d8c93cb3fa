// SPDX-License-Identifier: GPL-2.0
/* offwake: off-CPU time of a set of processes over a measurement window by
 * blocked stack (user, kernel with --kernel-stacks, and the task state) and by
 * the stack of the thread that woke it (bcc's offwaketime), as folded stacks
 * for an off-wake flame graph: "comm;[state];blocked root..leaf;--;waker
 * leaf..root;waker comm", weighted by blocked ns. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "common.h"
#include "json.h"
#include "ksyms.h"
#include "offwake.h"
#include "offwake.skel.h"
#include "syms.h"

#define EFAULT_ID (-14)
#define EEXIST_ID (-17)

struct entry {
	struct folded_head h;
	struct hb_offwake_key key;
	struct hb_offwake_val val;
};

struct result {
	struct entry *entries;
	size_t n;
};

struct ctx {
	struct offwake_bpf *skel;
	const struct env *env;
	struct syms *syms;
	pid_t *seen;
	size_t nseen;
};

/* Whether the stacks include the kernel's (--kernel-stacks). */
static bool kernel_stacks;

/* Takes --kernel-stacks out of argv (offwake's own option; the rest are the
 * collectors' common ones). */
static int take_kernel_stacks(int argc, char **argv)
{
	int i, n = 1;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--kernel-stacks"))
			kernel_stacks = true;
		else
			argv[n++] = argv[i];
	}
	for (; i < argc; i++)
		argv[n++] = argv[i];
	argv[n] = NULL;
	return n;
}

static void snapshot_once(struct ctx *c, pid_t pid)
{
	size_t i;

	if (pid <= 0)
		return;
	for (i = 0; i < c->nseen; i++)
		if (c->seen[i] == pid)
			return;
	c->seen = grow_array(c->seen, c->nseen, sizeof(*c->seen));
	c->seen[c->nseen++] = pid;
	syms_snapshot(c->syms, pid);
}

static void snapshot_one(const void *key, const void *value, void *arg)
{
	const struct hb_offwake_key *k = key;

	(void)value;
	snapshot_once(arg, k->tgid);
	snapshot_once(arg, k->waker_tgid);
}

/* Offset of the per-CPU variable `name` in the kernel BTF's per-CPU section,
 * or -1. */
static long long percpu_offset(const struct btf *btf, const char *name)
{
	const struct btf_var_secinfo *var;
	const struct btf_type *t;
	__u32 id, n = btf__type_cnt(btf);
	int i;

	for (id = 1; id < n; id++) {
		t = btf__type_by_id(btf, id);
		if (!btf_is_datasec(t) || strcmp(btf__name_by_offset(btf, t->name_off), ".data..percpu"))
			continue;
		var = btf_var_secinfos(t);
		for (i = 0; i < btf_vlen(t); i++, var++)
			if (!strcmp(btf__name_by_offset(btf, btf__type_by_id(btf, var->type)->name_off),
				    name))
				return var->offset;
	}
	return -1;
}

/* Where this CPU's preempt_count is from its rq (offwake.bpf.c); 0 when the
 * kernel's BTF does not tell. */
static long long preempt_count_from_rq(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	long long rq, count;

	if (!btf)
		return 0;
	rq = percpu_offset(btf, "runqueues");
	count = percpu_offset(btf, "__preempt_count");
	btf__free(btf);
	return rq < 0 || count < 0 ? 0 : count - rq;
}

/* The targets' and the wakers' mappings, read when the window closes (while
 * they likely still run) and again at the end; the targets' also once
 * attached, since a workload may exit before the window's close is acted on
 * (a snapshot of an exited process keeps the last one). */
static void snapshot_all(void *arg)
{
	struct ctx *c = arg;
	int i;

	c->nseen = 0;
	for (i = 0; i < c->env->npids; i++)
		snapshot_once(c, c->env->pids[i]);
	for_each_entry(bpf_map__fd(c->skel->maps.info), sizeof(struct hb_offwake_key),
		       sizeof(struct hb_offwake_val), snapshot_one, c);
}

static const char *lost_frame(__s32 id)
{
	if (id == EFAULT_ID)
		return "[no kernel stack]";
	if (id == EEXIST_ID)
		return "[stack lost: map collision]";
	return "[stack lost]";
}

/* Appends a kernel stack: root first (the blocked side) or leaf first (the
 * waker). */
static void add_kernel_stack(struct strbuf *b, int fd, __s32 id, bool root_first,
			     const struct ksyms *ksyms)
{
	__u64 ips[HB_MAX_STACK_DEPTH] = {};
	char buf[256];
	const char *name;
	int n = 0, first = 0, i, k;

	if (id < 0 || bpf_map_lookup_elem(fd, &id, ips)) {
		sb_frame(b, lost_frame(id));
		return;
	}
	while (n < HB_MAX_STACK_DEPTH && ips[n])
		n++;
	/* The innermost frames are our own program and the tracepoint's call
	 * into it: left out. */
	while (first < n && (name = ksyms_name(ksyms, ips[first])) &&
	       (!strncmp(name, "bpf_prog_", 9) || !strncmp(name, "bpf_trace_run", 13) ||
		!strncmp(name, "__bpf_trace_", 12) || !strncmp(name, "__traceiter_", 12)))
		first++;
	for (k = 0; k < n - first; k++) {
		i = root_first ? n - 1 - k : first + k;
		name = ksyms_name(ksyms, ips[i]);
		snprintf(buf, sizeof(buf), "%s_[k]", name ? name : "[unknown]");
		sb_frame(b, buf);
	}
}

/* A user stack by its hash (0: none, no frame at all). */
static void add_user_stack(struct strbuf *b, int fd, __u64 hash, bool root_first,
			   struct syms *syms, pid_t tgid)
{
	if (hash && !sb_user_stack(b, syms, fd, hash, tgid, root_first))
		sb_frame(b, "[stack lost]");
}

/* Whether the waker's kernel stack shows it woke from a hardware interrupt (a
 * timer's expiry): current was then merely the task interrupted. A softirq run
 * in process context (a loopback send's receive path, from local_bh_enable) is
 * the task's own doing and keeps its stacks. */
static bool in_interrupt(int fd, __s32 id, const struct ksyms *ksyms)
{
	static const char *const marks[] = { "asm_sysvec_", "asm_common_interrupt" };
	__u64 ips[HB_MAX_STACK_DEPTH] = {};
	const char *name;
	size_t m;
	int i;

	if (id < 0 || bpf_map_lookup_elem(fd, &id, ips))
		return false;
	for (i = 0; i < HB_MAX_STACK_DEPTH && ips[i]; i++) {
		name = ksyms_name(ksyms, ips[i]);
		for (m = 0; name && m < sizeof(marks) / sizeof(marks[0]); m++)
			if (!strncmp(name, marks[m], strlen(marks[m])))
				return true;
	}
	return false;
}

static const char *state_frame(__u32 state, char *buf, size_t len)
{
	switch (state) {
	case HB_STATE_PREEMPTED:
		return "[R preempted]";
	case 1:
		return "[S sleeping]";
	case 2:
		return "[D uninterruptible]";
	case 4:
		return "[T stopped]";
	case 8:
		return "[t traced]";
	default:
		snprintf(buf, len, "[state 0x%x]", state);
		return buf;
	}
}

static char *fold(const struct entry *e, int fd, int user_fd, struct syms *syms,
		  const struct ksyms *ksyms)
{
	const struct hb_offwake_key *k = &e->key;
	struct strbuf b = {};
	char buf[32];

	sb_frame(&b, e->val.comm[0] ? e->val.comm : "?");
	sb_frame(&b, state_frame(k->state, buf, sizeof(buf)));
	add_user_stack(&b, user_fd, k->user_stack, true, syms, k->tgid);
	if (kernel_stacks)
		add_kernel_stack(&b, fd, k->kern_stack_id, true, ksyms);
	sb_frame(&b, "--");
	if (k->state == HB_STATE_PREEMPTED) {
		sb_frame(&b, "[runnable: no wake-up]");
	} else if (!k->waker_tid && !e->val.waker_comm[0]) {
		sb_frame(&b, "[waker not seen]");
	} else {
		const char *comm = e->val.waker_comm[0] ? e->val.waker_comm : "?";
		char irq[HB_TASK_COMM_LEN + 32];

		if (kernel_stacks)
			add_kernel_stack(&b, fd, k->waker_kern_stack_id, false, ksyms);
		/* In an interrupt the user stack is the interrupted task's: left out
		 * (not taken when the program saw the interrupt). */
		if (k->waker_flags & HB_WAKER_INTERRUPT ||
		    in_interrupt(fd, k->waker_kern_stack_id, ksyms)) {
			snprintf(irq, sizeof(irq), "[interrupt] in %s", comm);
			sb_frame(&b, irq);
		} else {
			add_user_stack(&b, user_fd, k->waker_user_stack, false, syms,
				       k->waker_tgid);
			sb_frame(&b, comm);
		}
	}
	return b.s;
}

static int cmp_ns_desc(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->val.blocked_ns != y->val.blocked_ns)
		return x->val.blocked_ns > y->val.blocked_ns ? -1 : 1;
	return strcmp(x->h.folded, y->h.folded);
}

static void write_result(struct json *j, const struct env *env, struct offwake_bpf *skel,
			 const struct window *win, struct result *r)
{
	__u64 blocked = 0, blocks = 0, woken = 0, preempted = 0, unknown = 0;
	size_t i, n = 0;

	/* One line per process and folded stack (threads of a name merge). */
	sort_array(r->entries, r->n, sizeof(*r->entries), cmp_folded_head);
	for (i = 0; i < r->n; i++) {
		struct entry *e = &r->entries[i];

		blocked += e->val.blocked_ns;
		blocks += e->val.count;
		if (e->key.state == HB_STATE_PREEMPTED)
			preempted += e->val.blocked_ns;
		else if (e->key.waker_tid || e->val.waker_comm[0])
			woken += e->val.blocked_ns;
		else
			unknown += e->val.blocked_ns;
		if (n && !cmp_folded_head(&r->entries[n - 1], e)) {
			r->entries[n - 1].val.blocked_ns += e->val.blocked_ns;
			r->entries[n - 1].val.count += e->val.count;
			free(e->h.folded);
			continue;
		}
		r->entries[n++] = *e;
	}
	r->n = n;
	sort_array(r->entries, r->n, sizeof(*r->entries), cmp_ns_desc);

	json_begin_object(j);
	json_kv_string(j, "probe", "offwake");
	json_kv_string(j, "attach", "tp_btf");
	json_key(j, "pids");
	json_begin_array(j);
	for (i = 0; i < (size_t)env->npids; i++)
		json_u64(j, env->pids[i]);
	json_end_array(j);
	json_kv_u64(j, "window_ns", win->total_ns);
	json_kv_u64(j, "lost_events", skel->bss->hb_lost_events + prog_misses(skel->obj));
	json_kv_bool(j, "kernel_stacks", kernel_stacks);
	json_key(j, "lost_stacks");
	json_begin_object(j);
	json_kv_u64(j, "collisions", skel->bss->stack_collisions);
	json_kv_u64(j, "errors", skel->bss->hb_stack_errors);
	json_end_object(j);
	json_key(j, "stacks");
	json_begin_array(j);
	for (i = 0; i < r->n; i++) {
		json_begin_object(j);
		json_kv_u64(j, "pid", r->entries[i].key.tgid);
		json_kv_string(j, "folded", r->entries[i].h.folded);
		json_kv_u64(j, "blocked_ns", r->entries[i].val.blocked_ns);
		json_kv_u64(j, "count", r->entries[i].val.count);
		json_end_object(j);
	}
	json_end_array(j);
	json_key(j, "totals");
	json_begin_object(j);
	json_kv_u64(j, "blocked_ns", blocked);
	json_kv_u64(j, "blocks", blocks);
	json_kv_u64(j, "woken_ns", woken);
	json_kv_u64(j, "preempted_ns", preempted);
	json_kv_u64(j, "waker_unseen_ns", unknown);
	json_kv_u64(j, "lost_stacks", skel->bss->stack_collisions + skel->bss->hb_stack_errors);
	json_end_object(j);
	write_prog_stats(j, env, skel->obj);
	json_end_object(j);
}

int main(int argc, char **argv)
{
	struct offwake_bpf *skel;
	struct ksyms *ksyms;
	struct result r = {};
	struct window w = {};
	struct ctx c = {};
	struct json j;
	struct env env;
	size_t i;
	int err, fd, user_fd;

	argc = take_kernel_stacks(argc, argv);
	parse_args(argc, argv, "offwake", 0, &env);
	setup(&env);
	if (env.attach == ATTACH_RAW_TP)
		unavailable("offwake attaches with tp_btf only");
	if (!probe_tp_btf("sched_switch") || !probe_tp_btf("sched_waking"))
		unavailable("the kernel cannot attach tp_btf programs to sched_switch/sched_waking");
	if (!probe_user_stacks())
		unavailable("the kernel lacks bpf_task_pt_regs() or bpf_get_current_task_btf() "
			    "(Linux 5.15), which its user stacks need");

	skel = offwake_bpf__open();
	if (!skel)
		unavailable("cannot open the BPF object: %s", strerror(errno));
	skel->rodata->has_prev_state_arg = tp_nargs("sched_switch") >= 4;
	skel->rodata->kernel_stacks = kernel_stacks;
	/* 16 MiB preallocated for kernel stacks: only when they are taken. */
	if (!kernel_stacks)
		bpf_map__set_max_entries(skel->maps.stacks, 1);
	skel->rodata->preempt_count_from_rq = preempt_count_from_rq();
	err = offwake_bpf__load(skel);
	if (err)
		unavailable("cannot load the BPF programs: %s", strerror(-err));
	for (i = 0; i < (size_t)env.npids; i++)
		targets_add(skel->bss->hb_targets, env.pids[i]);
	err = offwake_bpf__attach(skel);
	if (err)
		unavailable("cannot attach the BPF programs: %s", strerror(-err));

	c.skel = skel;
	c.env = &env;
	c.syms = syms_new();
	snapshot_all(&c);
	w.enabled = &skel->bss->hb_enabled;
	w.start_ns = &skel->bss->hb_window_start_ns;
	w.on_close = snapshot_all;
	w.ctx = &c;
	run_window(&w, &env);
	offwake_bpf__detach(skel);
	snapshot_all(&c);

	ksyms = ksyms_load();
	fd = bpf_map__fd(skel->maps.stacks);
	user_fd = bpf_map__fd(skel->maps.hb_user_stacks);
	r.entries = read_entries(bpf_map__fd(skel->maps.info), sizeof(struct hb_offwake_key),
				 sizeof(struct hb_offwake_val), sizeof(struct entry),
				 offsetof(struct entry, key), offsetof(struct entry, val), &r.n);
	for (i = 0; i < r.n; i++) {
		r.entries[i].h.tgid = r.entries[i].key.tgid;
		r.entries[i].h.folded = fold(&r.entries[i], fd, user_fd, c.syms, ksyms);
	}

	json_init(&j, output_file());
	write_result(&j, &env, skel, &w, &r);
	finish_output(output_file());

	for (i = 0; i < r.n; i++)
		free(r.entries[i].h.folded);
	free(r.entries);
	free(c.seen);
	ksyms_free(ksyms);
	syms_free(c.syms);
	offwake_bpf__destroy(skel);
	return 0;
}
