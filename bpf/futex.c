// SPDX-License-Identifier: GPL-2.0
/* futex: futex waits of a set of processes over a measurement window, per
 * operation and per lock (futex address) with the user stacks that waited,
 * symbolized into folded stacks for an off-CPU "lock" flame graph. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common.h"
#include "futex.h"
#include "futex.skel.h"
#include "json.h"
#include "syms.h"

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449 /* the same on every architecture */
#endif

static const char *const op_names[HB_NR_OPS] = {
	[HB_OP_WAIT] = "WAIT",
	[HB_OP_WAIT_BITSET] = "WAIT_BITSET",
	[HB_OP_LOCK_PI] = "LOCK_PI",
	[HB_OP_LOCK_PI2] = "LOCK_PI2",
	[HB_OP_WAIT_REQUEUE_PI] = "WAIT_REQUEUE_PI",
	[HB_OP_WAITV] = "WAITV",
	[HB_OP_WAKE] = "WAKE",
};

static const char *const fail_names[HB_NR_FAILS] = {
	[HB_FAIL_EAGAIN] = "EAGAIN",
	[HB_FAIL_ETIMEDOUT] = "ETIMEDOUT",
	[HB_FAIL_EINTR] = "EINTR",
	[HB_FAIL_OTHER] = "other",
};

struct proc {
	__u32 tgid;
	char comm[HB_TASK_COMM_LEN];
	struct hb_proc_stats ops[HB_NR_OPS];
};

/* One (process, lock, stack) with its folded stack ("comm;root;...;leaf"). */
struct wait {
	struct folded_head h;
	struct hb_wait_key key;
	struct hb_wait_stats st;
};

struct result {
	struct proc *procs;
	size_t nprocs;
	struct wait *waits;
	size_t nwaits;
};

struct ctx {
	struct futex_bpf *skel;
	const struct env *env;
	struct syms *syms;
};

static struct proc *find_proc(struct result *r, __u32 tgid)
{
	size_t i;

	for (i = 0; i < r->nprocs; i++)
		if (r->procs[i].tgid == tgid)
			return &r->procs[i];
	return NULL;
}

static void add_proc_op(const void *key, const void *value, void *arg)
{
	const struct hb_proc_key *k = key;
	const struct hb_proc_stats *ps = value;
	struct result *r = arg;
	struct proc *p;

	if (k->op >= HB_NR_OPS)
		return;
	p = find_proc(r, k->tgid);
	if (!p) {
		r->procs = grow_array(r->procs, r->nprocs, sizeof(*p));
		p = &r->procs[r->nprocs++];
		memset(p, 0, sizeof(*p));
		p->tgid = k->tgid;
	}
	p->ops[k->op] = *ps;
	if (!p->comm[0])
		memcpy(p->comm, ps->comm, sizeof(p->comm));
}

/* Maps of the targets are read when the window closes, while they likely
 * still run, and again at the end if they do. */
static void snapshot_one(const void *key, const void *value, void *arg)
{
	struct ctx *c = arg;

	(void)value;
	syms_snapshot(c->syms, ((const struct hb_proc_key *)key)->tgid);
}

static void snapshot_targets(void *arg)
{
	struct ctx *c = arg;
	int i;

	for (i = 0; i < c->env->npids; i++)
		syms_snapshot(c->syms, c->env->pids[i]);
	for_each_entry(bpf_map__fd(c->skel->maps.procs), sizeof(struct hb_proc_key),
		       sizeof(struct hb_proc_stats), snapshot_one, c);
}

/* "comm;root;...;leaf". */
static char *fold_stack(struct syms *syms, int stacks_fd, const struct hb_wait_key *key,
			const char *comm)
{
	struct strbuf b = {};

	sb_frame(&b, comm[0] ? comm : "?");
	if (!sb_user_stack(&b, syms, stacks_fd, key->stack, key->tgid, true))
		sb_frame(&b, "[missing stack]");
	return b.s;
}

static int cmp_proc(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;

	return x->tgid < y->tgid ? -1 : x->tgid > y->tgid;
}

/* Groups a process' waits on one lock together, then by folded stack. */
static int cmp_wait_lock(const void *a, const void *b)
{
	const struct wait *x = a, *y = b;

	if (x->key.tgid != y->key.tgid)
		return x->key.tgid < y->key.tgid ? -1 : 1;
	if (x->key.uaddr != y->key.uaddr)
		return x->key.uaddr < y->key.uaddr ? -1 : 1;
	return strcmp(x->h.folded, y->h.folded);
}

static int cmp_wait_ns_desc(const void *a, const void *b)
{
	const struct wait *x = a, *y = b;

	if (x->st.wait_ns != y->st.wait_ns)
		return x->st.wait_ns > y->st.wait_ns ? -1 : 1;
	return strcmp(x->h.folded, y->h.folded);
}

/* Merges runs of entries equal under cmp (sorted by it) into their first. */
static size_t merge_runs(struct wait *w, size_t n, int (*cmp)(const void *, const void *))
{
	size_t i, out = 0;

	for (i = 0; i < n; i++) {
		if (out && !cmp(&w[out - 1], &w[i])) {
			w[out - 1].st.waits += w[i].st.waits;
			w[out - 1].st.wait_ns += w[i].st.wait_ns;
			continue;
		}
		w[out++] = w[i];
	}
	return out;
}

struct lock {
	size_t first, n; /* its (stack-merged) entries in the lock-sorted array */
	__u64 waits, wait_ns;
};

static int cmp_lock_desc(const void *a, const void *b)
{
	const struct lock *x = a, *y = b;

	if (x->wait_ns != y->wait_ns)
		return x->wait_ns > y->wait_ns ? -1 : 1;
	return x->first < y->first ? -1 : 1;
}

static void write_top(struct json *j, const struct env *env, const struct result *r)
{
	struct wait *w = malloc((r->nwaits ? r->nwaits : 1) * sizeof(*w));
	struct lock *locks = malloc((r->nwaits ? r->nwaits : 1) * sizeof(*locks));
	size_t n, nlocks = 0, i, k;

	if (!w || !locks)
		fatal("out of memory");
	if (r->nwaits)
		memcpy(w, r->waits, r->nwaits * sizeof(*w));
	sort_array(w, r->nwaits, sizeof(*w), cmp_wait_lock);
	n = merge_runs(w, r->nwaits, cmp_wait_lock);
	for (i = 0; i < n; i++) {
		if (!nlocks || w[i].key.tgid != w[locks[nlocks - 1].first].key.tgid ||
		    w[i].key.uaddr != w[locks[nlocks - 1].first].key.uaddr)
			locks[nlocks++] = (struct lock){ .first = i };
		locks[nlocks - 1].n++;
		locks[nlocks - 1].waits += w[i].st.waits;
		locks[nlocks - 1].wait_ns += w[i].st.wait_ns;
	}
	sort_array(locks, nlocks, sizeof(*locks), cmp_lock_desc);

	json_key(j, "top");
	json_begin_array(j);
	for (k = 0; k < nlocks && k < (size_t)env->top; k++) {
		struct wait *s = &w[locks[k].first];
		char uaddr[32];

		sort_array(s, locks[k].n, sizeof(*s), cmp_wait_ns_desc);
		snprintf(uaddr, sizeof(uaddr), "0x%llx", (unsigned long long)s->key.uaddr);
		json_begin_object(j);
		json_kv_u64(j, "pid", s->key.tgid);
		json_kv_string(j, "uaddr", uaddr);
		json_kv_u64(j, "waits", locks[k].waits);
		json_kv_u64(j, "wait_ns", locks[k].wait_ns);
		json_key(j, "stacks");
		json_begin_array(j);
		for (i = 0; i < locks[k].n; i++) {
			json_begin_object(j);
			json_kv_string(j, "folded", s[i].h.folded);
			json_kv_u64(j, "wait_ns", s[i].st.wait_ns);
			json_kv_u64(j, "waits", s[i].st.waits);
			json_end_object(j);
		}
		json_end_array(j);
		json_end_object(j);
	}
	json_end_array(j);
	free(locks);
	free(w);
}

static void write_folded(struct json *j, const struct result *r)
{
	struct wait *w = malloc((r->nwaits ? r->nwaits : 1) * sizeof(*w));
	struct strbuf line = {};
	char weight[32];
	size_t n, i;

	if (!w)
		fatal("out of memory");
	if (r->nwaits)
		memcpy(w, r->waits, r->nwaits * sizeof(*w));
	sort_array(w, r->nwaits, sizeof(*w), cmp_folded_head);
	n = merge_runs(w, r->nwaits, cmp_folded_head);
	sort_array(w, n, sizeof(*w), cmp_wait_ns_desc);

	json_key(j, "folded");
	json_begin_array(j);
	for (i = 0; i < n; i++) {
		line.len = 0;
		sb_append(&line, w[i].h.folded);
		snprintf(weight, sizeof(weight), " %llu", (unsigned long long)w[i].st.wait_ns);
		sb_append(&line, weight);
		json_string(j, line.s);
	}
	json_end_array(j);
	free(line.s);
	free(w);
}

static void write_result(struct json *j, const struct env *env, struct futex_bpf *skel,
			 const struct window *win, enum attach_mode mode, const struct result *r)
{
	__u64 waits = 0, wait_ns = 0, failed = 0, wakes = 0;
	const struct hb_proc_stats *ps;
	size_t i;
	int op, f;

	json_begin_object(j);
	json_kv_string(j, "probe", "futex");
	json_kv_string(j, "attach", attach_mode_name(mode));
	json_key(j, "pids");
	json_begin_array(j);
	for (f = 0; f < env->npids; f++)
		json_u64(j, env->pids[f]);
	json_end_array(j);
	json_kv_u64(j, "window_ns", win->total_ns);
	json_kv_u64(j, "lost_events", skel->bss->hb_lost_events + prog_misses(skel->obj));
	json_kv_bool(j, "stacks", !env->no_stacks);
	json_kv_u64(j, "lost_stacks", skel->bss->hb_stack_errors);

	json_key(j, "processes");
	json_begin_array(j);
	for (i = 0; i < r->nprocs; i++) {
		json_begin_object(j);
		json_kv_u64(j, "pid", r->procs[i].tgid);
		json_kv_string(j, "comm", r->procs[i].comm);
		json_key(j, "ops");
		json_begin_object(j);
		for (op = 0; op < HB_NR_OPS; op++) {
			if (op == HB_OP_WAKE)
				continue;
			ps = &r->procs[i].ops[op];
			json_key(j, op_names[op]);
			json_begin_object(j);
			json_kv_u64(j, "count", ps->count);
			json_kv_u64(j, "total_ns", ps->total_ns);
			json_kv_hist(j, "hist_log2_ns", ps->hist, HB_MAX_SLOTS);
			json_key(j, "failed");
			json_begin_object(j);
			for (f = 0; f < HB_NR_FAILS; f++) {
				json_kv_u64(j, fail_names[f], ps->failed[f]);
				failed += ps->failed[f];
			}
			json_end_object(j);
			json_end_object(j);
			waits += ps->count;
			wait_ns += ps->total_ns;
		}
		json_end_object(j);
		json_kv_u64(j, "wake_calls", r->procs[i].ops[HB_OP_WAKE].count);
		json_end_object(j);
		wakes += r->procs[i].ops[HB_OP_WAKE].count;
	}
	json_end_array(j);

	/* With --no-stacks there are no waits: "top" and "folded" stay empty. */
	write_top(j, env, r);
	write_folded(j, r);

	json_key(j, "totals");
	json_begin_object(j);
	json_kv_u64(j, "waits", waits);
	json_kv_u64(j, "wait_ns", wait_ns);
	json_kv_u64(j, "failed_waits", failed);
	json_kv_u64(j, "wake_calls", wakes);
	json_end_object(j);
	write_prog_stats(j, env, skel->obj);
	json_end_object(j);
}

static void select_programs(struct futex_bpf *skel, enum attach_mode sys_mode, bool btf)
{
	bool tp = sys_mode == ATTACH_TRACEPOINT;

	bpf_program__set_autoload(skel->progs.fx_enter_tp, tp);
	bpf_program__set_autoload(skel->progs.fx_exit_tp, tp);
	/* futex_waitv(2) exists since 5.16. */
	tp = tp && tracepoint_exists("syscalls", "sys_enter_futex_waitv");
	bpf_program__set_autoload(skel->progs.fx_wv_enter_tp, tp);
	bpf_program__set_autoload(skel->progs.fx_wv_exit_tp, tp);
	bpf_program__set_autoload(skel->progs.fx_sysenter_btf, sys_mode == ATTACH_TP_BTF);
	bpf_program__set_autoload(skel->progs.fx_sysexit_btf, sys_mode == ATTACH_TP_BTF);
	bpf_program__set_autoload(skel->progs.fx_sysenter_raw, sys_mode == ATTACH_RAW_TP);
	bpf_program__set_autoload(skel->progs.fx_sysexit_raw, sys_mode == ATTACH_RAW_TP);
	bpf_program__set_autoload(skel->progs.fx_fork_btf, btf);
	bpf_program__set_autoload(skel->progs.fx_pexit_btf, btf);
	bpf_program__set_autoload(skel->progs.fx_fork_raw, !btf);
	bpf_program__set_autoload(skel->progs.fx_pexit_raw, !btf);
}

int main(int argc, char **argv)
{
	enum attach_mode sys_mode;
	struct futex_bpf *skel;
	struct result r = {};
	struct window w = {};
	struct ctx c = {};
	struct json j;
	struct env env;
	size_t i;
	bool btf;
	int err;

	parse_args(argc, argv, "futex", OPT_TOP | OPT_ATTACH_TRACEPOINT | OPT_NO_STACKS, &env);
	setup(&env);

	/* The syscall tracepoints fire for futex calls only; without tracefs
	 * (their ids live there) the raw sys_enter/sys_exit hooks stand in. */
	btf = probe_tp_btf("sched_process_fork");
	sys_mode = env.attach;
	if (sys_mode == ATTACH_AUTO) {
		if (tracepoint_exists("syscalls", "sys_enter_futex"))
			sys_mode = ATTACH_TRACEPOINT;
		else
			sys_mode = probe_tp_btf("sys_enter") ? ATTACH_TP_BTF : ATTACH_RAW_TP;
	} else if (sys_mode == ATTACH_TP_BTF) {
		btf = true;
	} else if (sys_mode == ATTACH_RAW_TP) {
		btf = false;
	}

	if (!env.no_stacks && !probe_user_stacks())
		unavailable("the kernel lacks bpf_task_pt_regs() or bpf_get_current_task_btf() "
			    "(Linux 5.15), which its user stacks need: --no-stacks runs without them");
	skel = futex_bpf__open();
	if (!skel)
		unavailable("cannot open the BPF object: %s", strerror(errno));
	select_programs(skel, sys_mode, btf);
	skel->rodata->nr_futex = SYS_futex;
	skel->rodata->nr_futex_waitv = SYS_futex_waitv;
	if (env.no_stacks) {
		/* Counters only: the per-lock and stack maps are never written, so
		 * they are created as small as the kernel allows. */
		skel->rodata->with_stacks = false;
		bpf_map__set_max_entries(skel->maps.waits, 1);
		bpf_map__set_max_entries(skel->maps.hb_user_stacks, 1);
	}

	err = futex_bpf__load(skel);
	if (err)
		unavailable("cannot load the BPF programs (%s): %s", attach_mode_name(sys_mode),
			    strerror(-err));
	for (i = 0; i < (size_t)env.npids; i++)
		targets_add(skel->bss->hb_targets, env.pids[i]);
	err = futex_bpf__attach(skel);
	if (err)
		unavailable("cannot attach the BPF programs (%s): %s", attach_mode_name(sys_mode),
			    strerror(-err));

	c.skel = skel;
	c.env = &env;
	c.syms = syms_new();
	w.enabled = &skel->bss->hb_enabled;
	w.start_ns = &skel->bss->hb_window_start_ns;
	/* The targets' symbols are read only for stacks to symbolize. */
	if (!env.no_stacks) {
		snapshot_targets(&c);
		w.on_close = snapshot_targets;
		w.ctx = &c;
	}
	run_window(&w, &env);
	futex_bpf__detach(skel);

	for_each_entry(bpf_map__fd(skel->maps.procs), sizeof(struct hb_proc_key),
		       sizeof(struct hb_proc_stats), add_proc_op, &r);
	r.waits = read_entries(bpf_map__fd(skel->maps.waits), sizeof(struct hb_wait_key),
			       sizeof(struct hb_wait_stats), sizeof(struct wait),
			       offsetof(struct wait, key), offsetof(struct wait, st), &r.nwaits);
	sort_array(r.procs, r.nprocs, sizeof(*r.procs), cmp_proc);
	for (i = 0; i < r.nwaits; i++) {
		struct proc *p = find_proc(&r, r.waits[i].key.tgid);

		r.waits[i].h.tgid = r.waits[i].key.tgid;
		r.waits[i].h.folded = fold_stack(c.syms, bpf_map__fd(skel->maps.hb_user_stacks),
					       &r.waits[i].key, p ? p->comm : "");
	}

	json_init(&j, output_file());
	write_result(&j, &env, skel, &w, sys_mode, &r);
	finish_output(output_file());

	for (i = 0; i < r.nwaits; i++)
		free(r.waits[i].h.folded);
	free(r.waits);
	free(r.procs);
	syms_free(c.syms);
	futex_bpf__destroy(skel);
	return 0;
}
