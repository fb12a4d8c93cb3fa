// SPDX-License-Identifier: GPL-2.0
/* sched: per-thread context switches, off-CPU time, run-queue latency and
 * wake-ups (who woke whom) of a set of processes over a measurement window. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common.h"
#include "json.h"
#include "sched.h"
#include "sched.skel.h"

struct thread {
	__u32 tgid;
	__u32 tid;
	struct thread_stats st;
};

struct wakeup {
	struct wakeup_key key;
	struct wakeup_val val;
};

struct result {
	struct thread *threads;
	size_t nthreads;
	struct wakeup *wakeups;
	size_t nwakeups;
};

static bool active(const struct thread_stats *st)
{
	int s;

	if (st->voluntary || st->involuntary || st->wakeups)
		return true;
	for (s = 0; s < MAX_SLOTS; s++)
		if (st->offcpu_hist[s])
			return true;
	return false;
}

/* Threads seen only outside the window are left out. */
static void add_thread(const void *key, const void *value, void *ctx)
{
	const struct thread_stats *st = value;
	struct result *r = ctx;
	__u64 pid_tgid = *(const __u64 *)key;
	struct thread *t;

	if (!active(st))
		return;
	r->threads = grow_array(r->threads, r->nthreads, sizeof(*t));
	t = &r->threads[r->nthreads++];
	t->tgid = pid_tgid >> 32;
	t->tid = (__u32)pid_tgid;
	t->st = *st;
	/* The kernel keeps the name seen first (and last, at exit): a live
	 * thread that renamed itself since is read back from /proc. */
	read_comm(t->tgid, t->tid, t->st.comm, sizeof(t->st.comm));
}

static void add_wakeup(const void *key, const void *value, void *ctx)
{
	struct result *r = ctx;
	struct wakeup *w;

	r->wakeups = grow_array(r->wakeups, r->nwakeups, sizeof(*w));
	w = &r->wakeups[r->nwakeups++];
	memcpy(&w->key, key, sizeof(w->key));
	memcpy(&w->val, value, sizeof(w->val));
}

static int cmp_thread(const void *a, const void *b)
{
	const struct thread *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_wakeup(const void *a, const void *b)
{
	const struct wakeup *x = a, *y = b;

	if (x->val.count != y->val.count)
		return x->val.count > y->val.count ? -1 : 1;
	if (x->key.waker_tid != y->key.waker_tid)
		return x->key.waker_tid < y->key.waker_tid ? -1 : 1;
	return x->key.wakee_tid < y->key.wakee_tid ? -1 : x->key.wakee_tid > y->key.wakee_tid;
}

/* The latest name of a target thread (wake-up pairs keep the first one seen). */
static const char *thread_comm(const struct result *r, __u32 tgid, __u32 tid, const char *fallback)
{
	struct thread key = { .tgid = tgid, .tid = tid }, *t;

	t = bsearch(&key, r->threads, r->nthreads, sizeof(key), cmp_thread);
	return t && t->st.comm[0] ? t->st.comm : fallback;
}

static void write_result(struct json *j, const struct env *env, struct sched_bpf *skel,
			 const struct window *w, enum attach_mode mode, const struct result *r)
{
	__u64 vol = 0, invol = 0, offcpu = 0, wakeups = 0, runq_hist[MAX_SLOTS] = {};
	const struct thread_stats *st;
	size_t i;
	int s;

	json_begin_object(j);
	json_kv_string(j, "probe", "sched");
	json_kv_string(j, "attach", attach_mode_name(mode));
	json_key(j, "pids");
	json_begin_array(j);
	for (s = 0; s < env->npids; s++)
		json_u64(j, env->pids[s]);
	json_end_array(j);
	json_kv_u64(j, "window_ns", w->total_ns);
	json_kv_u64(j, "lost_events", skel->bss->lost_events + prog_misses(skel->obj));
	json_kv_u64(j, "missed_switch_ins", skel->bss->missed_switch_ins);

	json_key(j, "threads");
	json_begin_array(j);
	for (i = 0; i < r->nthreads; i++) {
		st = &r->threads[i].st;
		json_begin_object(j);
		json_kv_u64(j, "pid", r->threads[i].tgid);
		json_kv_u64(j, "tid", r->threads[i].tid);
		json_kv_string(j, "comm", st->comm);
		json_kv_u64(j, "voluntary_switches", st->voluntary);
		json_kv_u64(j, "involuntary_switches", st->involuntary);
		json_kv_u64(j, "offcpu_ns", st->offcpu_ns);
		json_kv_hist(j, "offcpu_hist_log2_ns", st->offcpu_hist, MAX_SLOTS);
		json_kv_u64(j, "runq_ns", st->runq_ns);
		json_kv_hist(j, "runq_hist_log2_ns", st->runq_hist, MAX_SLOTS);
		json_kv_u64(j, "wakeups_received", st->wakeups);
		json_kv_u64(j, "missed_switch_ins", st->missed_switch_ins);
		json_end_object(j);
		vol += st->voluntary;
		invol += st->involuntary;
		offcpu += st->offcpu_ns;
		wakeups += st->wakeups;
		for (s = 0; s < MAX_SLOTS; s++)
			runq_hist[s] += st->runq_hist[s];
	}
	json_end_array(j);

	json_key(j, "wakeups");
	json_begin_array(j);
	for (i = 0; i < r->nwakeups; i++) {
		const struct wakeup *wk = &r->wakeups[i];

		json_begin_object(j);
		json_kv_u64(j, "waker_pid", wk->val.waker_tgid);
		json_kv_u64(j, "waker_tid", wk->key.waker_tid);
		json_kv_string(j, "waker_comm", thread_comm(r, wk->val.waker_tgid, wk->key.waker_tid,
							    wk->val.waker_comm));
		json_kv_u64(j, "wakee_pid", wk->val.wakee_tgid);
		json_kv_u64(j, "wakee_tid", wk->key.wakee_tid);
		json_kv_string(j, "wakee_comm", thread_comm(r, wk->val.wakee_tgid, wk->key.wakee_tid,
							    wk->val.wakee_comm));
		json_kv_u64(j, "count", wk->val.count);
		json_end_object(j);
	}
	json_end_array(j);

	json_key(j, "totals");
	json_begin_object(j);
	json_kv_u64(j, "voluntary_switches", vol);
	json_kv_u64(j, "involuntary_switches", invol);
	json_kv_u64(j, "offcpu_ns", offcpu);
	json_kv_u64(j, "wakeups", wakeups);
	json_kv_hist(j, "runq_hist_log2_ns", runq_hist, MAX_SLOTS);
	json_end_object(j);
	write_prog_stats(j, env, skel->obj);
	json_end_object(j);
}

static void select_programs(struct sched_bpf *skel, bool btf)
{
	bpf_program__set_autoload(skel->progs.sc_switch_btf, btf);
	bpf_program__set_autoload(skel->progs.sc_wakeup_btf, btf);
	bpf_program__set_autoload(skel->progs.sc_wakenew_btf, btf);
	bpf_program__set_autoload(skel->progs.sc_fork_btf, btf);
	bpf_program__set_autoload(skel->progs.sc_exit_btf, btf);
	bpf_program__set_autoload(skel->progs.sc_switch_raw, !btf);
	bpf_program__set_autoload(skel->progs.sc_wakeup_raw, !btf);
	bpf_program__set_autoload(skel->progs.sc_wakenew_raw, !btf);
	bpf_program__set_autoload(skel->progs.sc_fork_raw, !btf);
	bpf_program__set_autoload(skel->progs.sc_exit_raw, !btf);
}

int main(int argc, char **argv)
{
	struct result r = {};
	struct sched_bpf *skel;
	enum attach_mode mode;
	struct window w = {};
	struct json j;
	struct env env;
	int err, i;

	parse_args(argc, argv, "sched", 0, &env);
	setup(&env);

	mode = env.attach;
	if (mode == ATTACH_AUTO)
		mode = probe_tp_btf("sched_switch") ? ATTACH_TP_BTF : ATTACH_RAW_TP;

	skel = sched_bpf__open();
	if (!skel)
		unavailable("cannot open the BPF object: %s", strerror(errno));
	select_programs(skel, mode == ATTACH_TP_BTF);
	skel->rodata->has_prev_state_arg = tp_nargs("sched_switch") >= 4;

	err = sched_bpf__load(skel);
	if (err)
		unavailable("cannot load the BPF programs (%s): %s", attach_mode_name(mode),
			    strerror(-err));
	for (i = 0; i < env.npids; i++)
		targets_add(skel->bss->targets, env.pids[i]);
	err = sched_bpf__attach(skel);
	if (err)
		unavailable("cannot attach the BPF programs (%s): %s", attach_mode_name(mode),
			    strerror(-err));

	w.enabled = &skel->bss->enabled;
	w.start_ns = &skel->bss->window_start_ns;
	run_window(&w, &env);
	sched_bpf__detach(skel);

	for_each_entry(bpf_map__fd(skel->maps.threads), sizeof(__u64), sizeof(struct thread_stats),
		       add_thread, &r);
	for_each_entry(bpf_map__fd(skel->maps.wakeups), sizeof(struct wakeup_key),
		       sizeof(struct wakeup_val), add_wakeup, &r);
	sort_array(r.threads, r.nthreads, sizeof(*r.threads), cmp_thread);
	sort_array(r.wakeups, r.nwakeups, sizeof(*r.wakeups), cmp_wakeup);

	json_init(&j, output_file());
	write_result(&j, &env, skel, &w, mode, &r);
	finish_output(output_file());

	free(r.threads);
	free(r.wakeups);
	sched_bpf__destroy(skel);
	return 0;
}
