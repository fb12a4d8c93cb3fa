// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "common.h"
#include "json.h"
#include "shared.h"

#define VMLINUX_BTF "/sys/kernel/btf/vmlinux"
#define DEFAULT_TOP 10

static const char *prog_name = "collector";
static const char *usage_line;
static FILE *out_fp;

static void bad_args(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

static void bad_args(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (usage: %s)\n", usage_line);
	exit(2);
}

void unavailable(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "unavailable: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void fatal(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static long parse_long(const char *opt, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		bad_args("%s expects an integer in [%ld, %ld], got '%s'", opt, min, max, s);
	return v;
}

static const struct {
	const char *name;
	enum attach_mode mode;
} attach_names[] = {
	{ "auto", ATTACH_AUTO },
	{ "tracepoint", ATTACH_TRACEPOINT },
	{ "tp_btf", ATTACH_TP_BTF },
	{ "raw_tp", ATTACH_RAW_TP },
};

const char *attach_mode_name(enum attach_mode mode)
{
	size_t i;

	for (i = 0; i < sizeof(attach_names) / sizeof(attach_names[0]); i++)
		if (attach_names[i].mode == mode)
			return attach_names[i].name;
	return "?";
}

void parse_args(int argc, char **argv, const char *prog, unsigned int opts, struct env *env)
{
	enum { O_PID = 1, O_NOW, O_DURATION, O_OUT, O_TOP, O_ATTACH, O_STATS, O_VERBOSE, O_NO_STACKS,
	       O_COUNTERS_ONLY, O_HELP };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, O_PID },
		{ "now", no_argument, NULL, O_NOW },
		{ "duration-s", required_argument, NULL, O_DURATION },
		{ "out", required_argument, NULL, O_OUT },
		{ "top", required_argument, NULL, O_TOP },
		{ "attach", required_argument, NULL, O_ATTACH },
		{ "stats", no_argument, NULL, O_STATS },
		{ "verbose", no_argument, NULL, O_VERBOSE },
		{ "no-stacks", no_argument, NULL, O_NO_STACKS },
		{ "counters-only", no_argument, NULL, O_COUNTERS_ONLY },
		{ "help", no_argument, NULL, O_HELP },
		{},
	};
	static char usage[256];
	char *end;
	size_t i;
	int c;

	prog_name = prog;
	snprintf(usage, sizeof(usage),
		 "%s --pid PID [--pid PID]... [--now] [--duration-s D] [--out FILE]%s%s "
		 "[--attach auto|%stp_btf|raw_tp] [--stats] [--verbose]",
		 prog, opts & OPT_TOP ? " [--top N]" : "",
		 opts & OPT_COUNTERS_ONLY ? " [--counters-only]" : "",
		 opts & OPT_ATTACH_TRACEPOINT ? "tracepoint|" : "");
	usage_line = usage;

	memset(env, 0, sizeof(*env));
	env->top = DEFAULT_TOP;
	opterr = 0;
	/* A leading ':' makes getopt return ':' for a missing value. */
	while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		switch (c) {
		case O_PID:
			if (env->npids == MAX_PIDS)
				bad_args("at most %d --pid options", MAX_PIDS);
			env->pids[env->npids++] =
				parse_long("--pid", optarg, 1, HB_PID_MAX_LIMIT - 1);
			break;
		case O_NOW:
			env->now = true;
			break;
		case O_DURATION:
			errno = 0;
			env->duration_s = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(env->duration_s) ||
			    env->duration_s < 0)
				bad_args("--duration-s expects a number of seconds >= 0, got '%s'",
					 optarg);
			env->has_duration = true;
			break;
		case O_OUT:
			env->out = optarg;
			break;
		case O_TOP:
			if (!(opts & OPT_TOP))
				bad_args("unknown option --top");
			env->top = parse_long("--top", optarg, 1, INT_MAX);
			break;
		case O_ATTACH:
			for (i = 0; i < sizeof(attach_names) / sizeof(attach_names[0]); i++)
				if (!strcmp(optarg, attach_names[i].name))
					break;
			if (i == sizeof(attach_names) / sizeof(attach_names[0]) ||
			    (attach_names[i].mode == ATTACH_TRACEPOINT &&
			     !(opts & OPT_ATTACH_TRACEPOINT)))
				bad_args("unknown --attach mode '%s'", optarg);
			env->attach = attach_names[i].mode;
			break;
		case O_STATS:
			env->stats = true;
			break;
		case O_VERBOSE:
			env->verbose = true;
			break;
		case O_NO_STACKS:
			if (!(opts & OPT_NO_STACKS))
				bad_args("unknown option --no-stacks");
			env->no_stacks = true;
			break;
		case O_COUNTERS_ONLY:
			if (!(opts & OPT_COUNTERS_ONLY))
				bad_args("unknown option --counters-only");
			env->counters_only = true;
			break;
		case O_HELP:
			printf("usage: %s\n", usage_line);
			exit(0);
		case ':':
			bad_args("option '%s' needs a value", argv[optind - 1]);
		default:
			bad_args("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		bad_args("unexpected argument '%s'", argv[optind]);
	if (!env->npids)
		bad_args("--pid is required");
	for (i = 0; i < (size_t)env->npids; i++)
		if (kill(env->pids[i], 0) && errno == ESRCH)
			bad_args("no such process: %d", env->pids[i]);
	out_fp = stdout;
	if (env->out) {
		out_fp = fopen(env->out, "w");
		if (!out_fp)
			bad_args("cannot open --out %s: %s", env->out, strerror(errno));
	}
}

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list args)
{
	(void)level;
	return vfprintf(stderr, fmt, args);
}

void setup(const struct env *env)
{
	sigset_t set;

	/* Taken synchronously by run_window(); blocked from the start so that a
	 * signal arriving while loading is acted on after attaching. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* The harness shows our one `unavailable:` line, libbpf's log only on demand. */
	libbpf_set_print(env->verbose ? print_libbpf : NULL);
	if (access(VMLINUX_BTF, R_OK))
		unavailable("no kernel BTF (%s: %s); needs CONFIG_DEBUG_INFO_BTF=y", VMLINUX_BTF,
			    strerror(errno));
	/* Counting is on while the returned fd stays open, closed at exit. */
	if (env->stats && bpf_enable_stats(BPF_STATS_RUN_TIME) < 0)
		unavailable("cannot enable BPF statistics: %s", strerror(errno));
}

static bool prog_info(struct bpf_program *prog, struct bpf_prog_info *info)
{
	__u32 len = sizeof(*info);
	int fd = bpf_program__fd(prog);

	memset(info, 0, sizeof(*info));
	return fd >= 0 && !bpf_obj_get_info_by_fd(fd, info, &len);
}

__u64 prog_misses(struct bpf_object *obj)
{
	struct bpf_program *prog;
	struct bpf_prog_info info;
	__u64 misses = 0;

	bpf_object__for_each_program(prog, obj)
		if (prog_info(prog, &info))
			misses += info.recursion_misses;
	return misses;
}

void write_prog_stats(struct json *j, const struct env *env, struct bpf_object *obj)
{
	struct bpf_program *prog;
	struct bpf_prog_info info;

	if (!env->stats)
		return;
	json_key(j, "prog_stats");
	json_begin_array(j);
	bpf_object__for_each_program(prog, obj) {
		if (!prog_info(prog, &info))
			continue;
		json_begin_object(j);
		json_kv_string(j, "name", bpf_program__name(prog));
		json_kv_u64(j, "runs", info.run_cnt);
		json_kv_u64(j, "run_ns", info.run_time_ns);
		json_end_object(j);
	}
	json_end_array(j);
}

static struct btf *vmlinux;

static void free_vmlinux_btf(void)
{
	btf__free(vmlinux);
}

static struct btf *vmlinux_btf(void)
{
	if (!vmlinux) {
		vmlinux = btf__load_vmlinux_btf();
		if (!vmlinux)
			unavailable("cannot read kernel BTF: %s", strerror(errno));
		atexit(free_vmlinux_btf);
	}
	return vmlinux;
}

static int tp_typedef_id(const char *tp)
{
	char name[128];

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	return btf__find_by_name_kind(vmlinux_btf(), name, BTF_KIND_TYPEDEF);
}

/* Whether a tp_btf program of these instructions loads on tracepoint tp. */
static bool load_tp_btf(const char *tp, const struct bpf_insn *insns, size_t n)
{
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_RAW_TP);
	int id, fd;

	id = tp_typedef_id(tp);
	if (id <= 0)
		return false;
	opts.attach_btf_id = id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", insns, n, &opts);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* As libbpf-tools' probe_tp_btf(): load an empty tp_btf program. */
bool probe_tp_btf(const char *tp)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	return load_tp_btf(tp, insns, sizeof(insns) / sizeof(insns[0]));
}

/* Whether programs may walk user stacks as user_stack.bpf.h does: a tp_btf
 * program that calls bpf_get_current_task_btf() (Linux 5.11) and passes its
 * task to bpf_task_pt_regs() (5.15) loads. */
bool probe_user_stacks(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_get_current_task_btf },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_1, .src_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_task_pt_regs },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	return load_tp_btf("sched_switch", insns, sizeof(insns) / sizeof(insns[0]));
}

/* btf_trace_<tp> is a typedef of a pointer to the probe's prototype, whose
 * first parameter is the tracepoint's private data. */
int tp_nargs(const char *tp)
{
	const struct btf_type *t;
	int id;

	id = tp_typedef_id(tp);
	if (id <= 0)
		return -1;
	t = btf__type_by_id(vmlinux_btf(), id);
	t = btf__type_by_id(vmlinux_btf(), t->type);
	if (!t || !btf_is_ptr(t))
		return -1;
	t = btf__type_by_id(vmlinux_btf(), t->type);
	if (!t || !btf_is_func_proto(t))
		return -1;
	return btf_vlen(t) - 1;
}

/* libbpf looks the id up under debugfs' tracing directory when that exists,
 * under tracefs otherwise. */
bool tracepoint_exists(const char *category, const char *event)
{
	const char *root = "/sys/kernel/tracing";
	char path[PATH_MAX];

	if (!access("/sys/kernel/debug/tracing", F_OK))
		root = "/sys/kernel/debug/tracing";
	snprintf(path, sizeof(path), "%s/events/%s/%s/id", root, category, event);
	return !access(path, R_OK);
}

void targets_add(__u64 *bitmap, pid_t pid)
{
	__atomic_fetch_or(&bitmap[pid >> 6], 1ULL << (pid & 63), __ATOMIC_SEQ_CST);
}

/* CLOCK_MONOTONIC is the clock of bpf_ktime_get_ns(). */
static __u64 monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void window_open(struct window *w)
{
	if (*w->enabled)
		return;
	w->opened_ns = monotonic_ns();
	*w->start_ns = w->opened_ns;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	*w->enabled = true;
	if (w->on_open)
		w->on_open(w->ctx);
}

static void window_close(struct window *w)
{
	if (!*w->enabled)
		return;
	*w->enabled = false;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	w->total_ns += monotonic_ns() - w->opened_ns;
	if (w->on_close)
		w->on_close(w->ctx);
}

/* One event line on stdout, flushed: {"event":NAME,"window_ns":N}, N the
 * open time summed so far. */
static void print_event(const char *name, const struct window *w)
{
	printf("{\"event\":\"%s\",\"window_ns\":%llu}\n", name,
	       (unsigned long long)w->total_ns);
	fflush(stdout);
}

void run_window(struct window *w, const struct env *env)
{
	struct timespec timeout;
	__u64 deadline = 0, now;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);

	if (env->now) {
		window_open(w);
		if (env->has_duration)
			deadline = w->opened_ns + (__u64)(env->duration_s * 1e9);
	}
	printf("{\"event\":\"attached\"}\n");
	fflush(stdout);

	for (;;) {
		if (deadline) {
			now = monotonic_ns();
			if (now >= deadline)
				break;
			timeout.tv_sec = (deadline - now) / 1000000000ULL;
			timeout.tv_nsec = (deadline - now) % 1000000000ULL;
			sig = sigtimedwait(&set, NULL, &timeout);
		} else {
			sig = sigwaitinfo(&set, NULL);
		}
		if (sig < 0) {
			if (errno == EAGAIN)
				break;
			continue;
		}
		if (sig == SIGUSR1) {
			window_open(w);
			if (env->has_duration && !deadline)
				deadline = w->opened_ns + (__u64)(env->duration_s * 1e9);
			/* Acknowledged once counting is on: a driver waits for this
			 * line, not for a guessed delay, before the measured phase. */
			print_event("window_open", w);
		} else if (sig == SIGUSR2) {
			window_close(w);
			/* Once counting is off and on_close() has run. */
			print_event("window_closed", w);
		} else {
			break;
		}
	}
	window_close(w);
}

FILE *output_file(void)
{
	return out_fp;
}

void finish_output(FILE *f)
{
	fputc('\n', f);
	if (fflush(f) || ferror(f))
		fatal("cannot write the result: %s", strerror(errno));
	if (f != stdout && fclose(f))
		fatal("cannot write the result: %s", strerror(errno));
}

bool read_comm(pid_t tgid, pid_t tid, char *buf, size_t len)
{
	char path[64];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", tgid, tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	ok = fgets(buf, len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

void for_each_entry(int fd, size_t key_size, size_t value_size, map_entry_fn fn, void *ctx)
{
	char *key = calloc(2, key_size), *next = key + key_size, *value = malloc(value_size);
	void *prev = NULL;

	if (!key || !value)
		fatal("out of memory");
	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, key_size);
		prev = key;
		if (!bpf_map_lookup_elem(fd, key, value))
			fn(key, value, ctx);
	}
	free(key);
	free(value);
}

struct records {
	char *array;
	size_t n, rec_size, key_off, key_size, value_off, value_size;
};

static void add_record(const void *key, const void *value, void *ctx)
{
	struct records *r = ctx;
	char *rec;

	r->array = grow_array(r->array, r->n, r->rec_size);
	rec = r->array + r->n++ * r->rec_size;
	memset(rec, 0, r->rec_size);
	memcpy(rec + r->key_off, key, r->key_size);
	memcpy(rec + r->value_off, value, r->value_size);
}

void *read_entries(int fd, size_t key_size, size_t value_size, size_t rec_size, size_t key_off,
		   size_t value_off, size_t *n)
{
	struct records r = { .rec_size = rec_size, .key_off = key_off, .key_size = key_size,
			     .value_off = value_off, .value_size = value_size };

	for_each_entry(fd, key_size, value_size, add_record, &r);
	*n = r.n;
	return r.array;
}

void *grow_array(void *array, size_t n, size_t size)
{
	if (n & (n - 1))
		return array;
	array = realloc(array, (n ? 2 * n : 1) * size);
	if (!array)
		fatal("out of memory");
	return array;
}

int cmp_folded_head(const void *a, const void *b)
{
	const struct folded_head *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return strcmp(x->folded, y->folded);
}

void sort_array(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n)
		qsort(base, n, size, cmp);
}

static void sb_put(struct strbuf *b, const char *s, bool frame)
{
	size_t n = strlen(s);

	if (b->len + n + 1 > b->cap) {
		b->cap = 2 * (b->len + n + 1);
		b->s = realloc(b->s, b->cap);
		if (!b->s)
			fatal("out of memory");
	}
	for (; *s; s++)
		b->s[b->len++] = frame && *s == ';' ? ':' : *s;
	b->s[b->len] = '\0';
}

void sb_append(struct strbuf *b, const char *s)
{
	sb_put(b, s, false);
}

void sb_frame(struct strbuf *b, const char *name)
{
	if (b->len)
		sb_put(b, ";", false);
	sb_put(b, name, true);
}
