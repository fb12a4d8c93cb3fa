// SPDX-License-Identifier: GPL-2.0
/* sched: per-thread context switches, off-CPU time, run-queue latency and
 * wake-ups (who woke whom) of a set of processes over a measurement window.
 *
 * --counters-only (the harness's measurement repeats) attaches no program to
 * sched_switch, the costly event: the switches, on-CPU and run-queue time of
 * each thread are the kernel's own counters, read from /proc at each opening
 * and closing of the window; only the wake-ups are traced. */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common.h"
#include "json.h"
#include "sched.h"
#include "sched.skel.h"

struct thread {
	__u32 tgid;
	__u32 tid;
	struct hb_thread_stats st;
	/* --counters-only: from /proc/PID/task/TID/schedstat. */
	__u64 oncpu_ns;
	__u64 timeslices;
};

/* A thread's kernel counters (/proc/PID/task/TID/status and schedstat), and
 * when they were read. */
struct task_counters {
	__u32 tgid;
	__u32 tid;
	__u64 voluntary;
	__u64 involuntary;
	__u64 oncpu_ns;
	__u64 runq_ns;
	__u64 timeslices;
	__u64 read_ns;
};

/* --counters-only: the readings at the window's last opening, and the
 * differences over the windows so far (`read_ns`: the thread's part of them). */
struct counters_state {
	struct sched_bpf *skel;
	struct task_counters *opened;
	size_t nopened;
	struct task_counters *counted;
	size_t ncounted;
};

struct wakeup {
	struct hb_wakeup_key key;
	struct hb_wakeup_val val;
};

struct result {
	struct thread *threads;
	size_t nthreads;
	size_t nsorted; /* --counters-only: the rows from /proc, sorted, come first */
	struct wakeup *wakeups;
	size_t nwakeups;
};

static bool active(const struct hb_thread_stats *st)
{
	int s;

	if (st->voluntary || st->involuntary || st->wakeups)
		return true;
	for (s = 0; s < HB_MAX_SLOTS; s++)
		if (st->offcpu_hist[s])
			return true;
	return false;
}

/* Threads seen only outside the window are left out. */
static void add_thread(const void *key, const void *value, void *ctx)
{
	const struct hb_thread_stats *st = value;
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

static int cmp_pair(const void *a, const void *b)
{
	const struct wakeup *x = a, *y = b;

	if (x->key.waker_tid != y->key.waker_tid)
		return x->key.waker_tid < y->key.waker_tid ? -1 : 1;
	return x->key.wakee_tid < y->key.wakee_tid ? -1 : x->key.wakee_tid > y->key.wakee_tid;
}

/* Adds the per-CPU slots' counts (sched.h, pair_slots) to their pairs. */
static void add_pair_slots(struct result *r, int fd)
{
	int ncpus = libbpf_num_possible_cpus(), cpu;
	struct hb_pair_slot *slots;
	struct wakeup want, *w;
	__u32 slot;

	if (ncpus <= 0 || !(slots = calloc(ncpus, sizeof(*slots))))
		fatal("out of memory");
	sort_array(r->wakeups, r->nwakeups, sizeof(*r->wakeups), cmp_pair);
	for (slot = 0; slot < HB_PAIR_SLOTS; slot++) {
		if (bpf_map_lookup_elem(fd, &slot, slots))
			continue;
		for (cpu = 0; cpu < ncpus; cpu++) {
			if (!slots[cpu].count)
				continue;
			want.key.waker_tid = slots[cpu].waker_tid;
			want.key.wakee_tid = slots[cpu].wakee_tid;
			w = r->nwakeups ? bsearch(&want, r->wakeups, r->nwakeups, sizeof(*w),
						  cmp_pair) : NULL;
			/* The program makes the pair's entry before it claims a slot. */
			if (w)
				w->val.count += slots[cpu].count;
		}
	}
	free(slots);
}

static __u64 monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int cmp_task(const void *a, const void *b)
{
	const struct task_counters *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* False if the thread is gone (or its files unreadable). */
static bool read_task(__u32 tgid, __u32 tid, struct task_counters *c)
{
	char path[64], line[128];
	unsigned long long oncpu, runq, slices, value;
	int found = 0;
	FILE *f;

	memset(c, 0, sizeof(*c));
	c->tgid = tgid;
	c->tid = tid;
	snprintf(path, sizeof(path), "/proc/%u/task/%u/status", tgid, tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "voluntary_ctxt_switches: %llu", &value) == 1) {
			c->voluntary = value;
			found++;
		} else if (sscanf(line, "nonvoluntary_ctxt_switches: %llu", &value) == 1) {
			c->involuntary = value;
			found++;
		}
	}
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%u/task/%u/schedstat", tgid, tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (fscanf(f, "%llu %llu %llu", &oncpu, &runq, &slices) == 3) {
		c->oncpu_ns = oncpu;
		c->runq_ns = runq;
		c->timeslices = slices;
		found++;
	}
	fclose(f);
	c->read_ns = monotonic_ns();
	return found == 3;
}

/* Every thread of every target (the given processes and those they forked
 * since, from the BPF side's target set), sorted. */
static struct task_counters *read_targets(const __u64 *targets, size_t *n)
{
	struct task_counters *all = NULL, c;
	char path[64];
	struct dirent *d;
	__u32 tgid;
	DIR *dir;
	int word, bit;

	*n = 0;
	for (word = 0; word < HB_TARGET_WORDS; word++) {
		if (!targets[word])
			continue;
		for (bit = 0; bit < 64; bit++) {
			if (!(targets[word] & (1ULL << bit)))
				continue;
			tgid = word * 64 + bit;
			snprintf(path, sizeof(path), "/proc/%u/task", tgid);
			dir = opendir(path);
			if (!dir)
				continue;
			while ((d = readdir(dir))) {
				if (d->d_name[0] < '0' || d->d_name[0] > '9')
					continue;
				if (!read_task(tgid, strtoul(d->d_name, NULL, 10), &c))
					continue;
				all = grow_array(all, *n, sizeof(c));
				all[(*n)++] = c;
			}
			closedir(dir);
		}
	}
	sort_array(all, *n, sizeof(*all), cmp_task);
	return all;
}

static void counters_open(void *ctx)
{
	struct counters_state *cs = ctx;

	free(cs->opened);
	cs->opened = read_targets(cs->skel->bss->hb_targets, &cs->nopened);
}

/* When a thread not read at the opening started: its sched_wakeup_new time
 * (the BPF side's off_ts of a new thread), else the opening. */
static __u64 thread_start(struct counters_state *cs, __u32 tgid, __u32 tid, __u64 opened_ns)
{
	__u64 key = (__u64)tgid << 32 | tid;
	struct hb_thread_stats st;

	if (bpf_map_lookup_elem(bpf_map__fd(cs->skel->maps.threads), &key, &st) ||
	    st.off_ts < opened_ns)
		return opened_ns;
	return st.off_ts;
}

struct exit_readings {
	struct task_counters *readings;
	size_t n;
	size_t nsorted; /* the /proc readings, sorted, come first */
	__u64 opened_ns;
};

/* A thread gone from /proc that exited since the window opened: its counters
 * as the BPF side read them at its exit. */
static void add_exited(const void *key, const void *value, void *ctx)
{
	const struct hb_thread_stats *st = value;
	const struct hb_exit_counters *x = &st->exited;
	struct exit_readings *e = ctx;
	__u64 pid_tgid = *(const __u64 *)key;
	struct task_counters c = { .tgid = pid_tgid >> 32, .tid = (__u32)pid_tgid };

	if (!x->at_ns || x->at_ns < e->opened_ns)
		return;
	if (bsearch(&c, e->readings, e->nsorted, sizeof(c), cmp_task))
		return;
	c.voluntary = x->voluntary;
	c.involuntary = x->involuntary;
	c.oncpu_ns = x->oncpu_ns;
	c.runq_ns = x->runq_ns;
	c.timeslices = x->timeslices;
	c.read_ns = x->at_ns;
	e->readings = grow_array(e->readings, e->n, sizeof(c));
	e->readings[e->n++] = c;
}

/* Adds each thread's counts since the opening; a thread started since counts
 * from zero, a thread that exited since up to its exit. */
static void counters_close(void *ctx)
{
	struct counters_state *cs = ctx;
	struct task_counters *closed, *before, *sum, zero;
	__u64 opened_ns = cs->skel->bss->hb_window_start_ns;
	struct exit_readings e = { .opened_ns = opened_ns };
	size_t n, i, nsorted = cs->ncounted;

	e.readings = read_targets(cs->skel->bss->hb_targets, &e.n);
	e.nsorted = e.n;
	for_each_entry(bpf_map__fd(cs->skel->maps.threads), sizeof(__u64),
		       sizeof(struct hb_thread_stats), add_exited, &e);
	sort_array(e.readings, e.n, sizeof(*e.readings), cmp_task);
	closed = e.readings;
	n = e.n;
	for (i = 0; i < n; i++) {
		before = bsearch(&closed[i], cs->opened, cs->nopened, sizeof(zero), cmp_task);
		if (!before) {
			memset(&zero, 0, sizeof(zero));
			zero.read_ns = thread_start(cs, closed[i].tgid, closed[i].tid, opened_ns);
			before = &zero;
		}
		sum = bsearch(&closed[i], cs->counted, nsorted, sizeof(zero), cmp_task);
		if (!sum) {
			cs->counted = grow_array(cs->counted, cs->ncounted, sizeof(zero));
			sum = &cs->counted[cs->ncounted++];
			memset(sum, 0, sizeof(*sum));
			sum->tgid = closed[i].tgid;
			sum->tid = closed[i].tid;
		}
		sum->voluntary += closed[i].voluntary - before->voluntary;
		sum->involuntary += closed[i].involuntary - before->involuntary;
		sum->oncpu_ns += closed[i].oncpu_ns - before->oncpu_ns;
		sum->runq_ns += closed[i].runq_ns - before->runq_ns;
		sum->timeslices += closed[i].timeslices - before->timeslices;
		if (closed[i].read_ns > before->read_ns)
			sum->read_ns += closed[i].read_ns - before->read_ns;
	}
	sort_array(cs->counted, cs->ncounted, sizeof(*cs->counted), cmp_task);
	free(closed);
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

/* The name the BPF side took at a thread's exit. */
static void exited_comm(const struct counters_state *cs, struct thread *t)
{
	__u64 key = (__u64)t->tgid << 32 | t->tid;
	struct hb_thread_stats st;

	if (!bpf_map_lookup_elem(bpf_map__fd(cs->skel->maps.threads), &key, &st))
		memcpy(t->st.comm, st.comm, sizeof(t->st.comm));
}

/* --counters-only: a row per thread read at the window's edges. */
static void add_counted(struct result *r, const struct counters_state *cs)
{
	const struct task_counters *c;
	struct thread *t;
	size_t i;

	for (i = 0; i < cs->ncounted; i++) {
		c = &cs->counted[i];
		r->threads = grow_array(r->threads, r->nthreads, sizeof(*t));
		t = &r->threads[r->nthreads++];
		memset(t, 0, sizeof(*t));
		t->tgid = c->tgid;
		t->tid = c->tid;
		t->st.voluntary = c->voluntary;
		t->st.involuntary = c->involuntary;
		t->st.runq_ns = c->runq_ns;
		/* Off CPU: its part of the window less its time on CPU (which may
		 * lag by up to a tick for a thread on CPU at a reading). */
		t->st.offcpu_ns = c->read_ns > c->oncpu_ns ? c->read_ns - c->oncpu_ns : 0;
		t->oncpu_ns = c->oncpu_ns;
		t->timeslices = c->timeslices;
		if (!read_comm(t->tgid, t->tid, t->st.comm, sizeof(t->st.comm)))
			exited_comm(cs, t);
	}
	r->nsorted = r->nthreads;
}

/* --counters-only: a thread's wake-ups are the sum of its waker pairs (the BPF
 * side counts only those); a thread gone before the window closed gets a row
 * of its wake-ups only. */
static void add_wakeups_received(struct result *r)
{
	const struct wakeup *w;
	struct thread probe, *t;
	size_t i;

	for (i = 0; i < r->nwakeups; i++) {
		w = &r->wakeups[i];
		memset(&probe, 0, sizeof(probe));
		probe.tgid = w->val.wakee_tgid;
		probe.tid = w->key.wakee_tid;
		t = bsearch(&probe, r->threads, r->nsorted, sizeof(probe), cmp_thread);
		if (!t) {
			r->threads = grow_array(r->threads, r->nthreads, sizeof(*t));
			t = &r->threads[r->nthreads++];
			*t = probe;
			memcpy(t->st.comm, w->val.wakee_comm, sizeof(t->st.comm));
			/* Sorted in, so its other pairs find it. */
			sort_array(r->threads, r->nthreads, sizeof(*t), cmp_thread);
			r->nsorted = r->nthreads;
			t = bsearch(&probe, r->threads, r->nsorted, sizeof(probe), cmp_thread);
		}
		t->st.wakeups += w->val.count;
		if (!t->st.comm[0])
			memcpy(t->st.comm, w->val.wakee_comm, sizeof(t->st.comm));
	}
}

/* --counters-only: threads that neither switched nor were woken in the
 * window (asleep throughout) are left out, as the full mode leaves them out. */
static void drop_idle(struct result *r)
{
	size_t i, n = 0;

	for (i = 0; i < r->nthreads; i++)
		if (r->threads[i].st.voluntary || r->threads[i].st.involuntary ||
		    r->threads[i].st.wakeups)
			r->threads[n++] = r->threads[i];
	r->nthreads = n;
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
	__u64 vol = 0, invol = 0, offcpu = 0, runq = 0, wakeups = 0, runq_hist[HB_MAX_SLOTS] = {};
	const struct hb_thread_stats *st;
	size_t i;
	int s;

	json_begin_object(j);
	json_kv_string(j, "probe", "sched");
	json_kv_string(j, "attach", attach_mode_name(mode));
	json_kv_string(j, "mode", env->counters_only ? "counters" : "full");
	json_key(j, "pids");
	json_begin_array(j);
	for (s = 0; s < env->npids; s++)
		json_u64(j, env->pids[s]);
	json_end_array(j);
	json_kv_u64(j, "window_ns", w->total_ns);
	json_kv_u64(j, "lost_events", skel->bss->hb_lost_events + prog_misses(skel->obj));
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
		json_kv_hist(j, "offcpu_hist_log2_ns", st->offcpu_hist, HB_MAX_SLOTS);
		json_kv_u64(j, "runq_ns", st->runq_ns);
		json_kv_hist(j, "runq_hist_log2_ns", st->runq_hist, HB_MAX_SLOTS);
		json_kv_u64(j, "wakeups_received", st->wakeups);
		json_kv_u64(j, "missed_switch_ins", st->missed_switch_ins);
		if (env->counters_only) {
			json_kv_u64(j, "oncpu_ns", r->threads[i].oncpu_ns);
			json_kv_u64(j, "timeslices", r->threads[i].timeslices);
		}
		json_end_object(j);
		vol += st->voluntary;
		invol += st->involuntary;
		offcpu += st->offcpu_ns;
		runq += st->runq_ns;
		wakeups += st->wakeups;
		for (s = 0; s < HB_MAX_SLOTS; s++)
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
	json_kv_u64(j, "runq_ns", runq);
	json_kv_u64(j, "wakeups", wakeups);
	json_kv_hist(j, "runq_hist_log2_ns", runq_hist, HB_MAX_SLOTS);
	json_end_object(j);
	write_prog_stats(j, env, skel->obj);
	json_end_object(j);
}

static void select_programs(struct sched_bpf *skel, bool btf, bool counters_only)
{
	/* Counters only: nothing on sched_switch, where the cost is. */
	bpf_program__set_autoload(skel->progs.sc_switch_btf, btf && !counters_only);
	bpf_program__set_autoload(skel->progs.sc_wakeup_btf, btf);
	bpf_program__set_autoload(skel->progs.sc_wakenew_btf, btf);
	bpf_program__set_autoload(skel->progs.sc_fork_btf, btf);
	bpf_program__set_autoload(skel->progs.sc_exit_btf, btf);
	bpf_program__set_autoload(skel->progs.sc_switch_raw, !btf && !counters_only);
	bpf_program__set_autoload(skel->progs.sc_wakeup_raw, !btf);
	bpf_program__set_autoload(skel->progs.sc_wakenew_raw, !btf);
	bpf_program__set_autoload(skel->progs.sc_fork_raw, !btf);
	bpf_program__set_autoload(skel->progs.sc_exit_raw, !btf);
}

int main(int argc, char **argv)
{
	struct counters_state cs = {};
	struct result r = {};
	struct sched_bpf *skel;
	enum attach_mode mode;
	struct window w = {};
	struct json j;
	struct env env;
	int err, i;

	parse_args(argc, argv, "sched", OPT_COUNTERS_ONLY, &env);
	setup(&env);

	mode = env.attach;
	if (mode == ATTACH_AUTO)
		mode = probe_tp_btf("sched_switch") ? ATTACH_TP_BTF : ATTACH_RAW_TP;

	skel = sched_bpf__open();
	if (!skel)
		unavailable("cannot open the BPF object: %s", strerror(errno));
	select_programs(skel, mode == ATTACH_TP_BTF, env.counters_only);
	skel->rodata->has_prev_state_arg = tp_nargs("sched_switch") >= 4;
	skel->rodata->counters_only = env.counters_only;

	err = sched_bpf__load(skel);
	if (err)
		unavailable("cannot load the BPF programs (%s): %s", attach_mode_name(mode),
			    strerror(-err));
	for (i = 0; i < env.npids; i++)
		targets_add(skel->bss->hb_targets, env.pids[i]);
	err = sched_bpf__attach(skel);
	if (err)
		unavailable("cannot attach the BPF programs (%s): %s", attach_mode_name(mode),
			    strerror(-err));

	w.enabled = &skel->bss->hb_enabled;
	w.start_ns = &skel->bss->hb_window_start_ns;
	if (env.counters_only) {
		cs.skel = skel;
		w.on_open = counters_open;
		w.on_close = counters_close;
		w.ctx = &cs;
	}
	run_window(&w, &env);
	sched_bpf__detach(skel);

	r.wakeups = read_entries(bpf_map__fd(skel->maps.wakeups), sizeof(struct hb_wakeup_key),
				 sizeof(struct hb_wakeup_val), sizeof(struct wakeup),
				 offsetof(struct wakeup, key), offsetof(struct wakeup, val),
				 &r.nwakeups);
	add_pair_slots(&r, bpf_map__fd(skel->maps.pair_slots));
	if (env.counters_only) {
		add_counted(&r, &cs);
		add_wakeups_received(&r);
		drop_idle(&r);
	} else {
		for_each_entry(bpf_map__fd(skel->maps.threads), sizeof(__u64),
			       sizeof(struct hb_thread_stats), add_thread, &r);
	}
	sort_array(r.threads, r.nthreads, sizeof(*r.threads), cmp_thread);
	sort_array(r.wakeups, r.nwakeups, sizeof(*r.wakeups), cmp_wakeup);

	json_init(&j, output_file());
	write_result(&j, &env, skel, &w, mode, &r);
	finish_output(output_file());

	free(r.threads);
	free(r.wakeups);
	free(cs.opened);
	free(cs.counted);
	sched_bpf__destroy(skel);
	return 0;
}
