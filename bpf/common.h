/* SPDX-License-Identifier: GPL-2.0 */
/* Loader-side parts shared by the collectors: the command line, errors, kernel
 * feature probes, the target set and the measurement window. */
#ifndef COMMON_H
#define COMMON_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>

#define MAX_PIDS 64

/* How the programs are attached; the loader picks the first the kernel
 * supports unless --attach names one. */
enum attach_mode {
	ATTACH_AUTO,
	ATTACH_TRACEPOINT, /* classic tracepoint (needs tracefs for its id) */
	ATTACH_TP_BTF,
	ATTACH_RAW_TP,
};

struct env {
	pid_t pids[MAX_PIDS];
	int npids;
	bool now;
	bool has_duration;
	double duration_s;
	const char *out;
	int top;
	enum attach_mode attach;
	bool stats;
	bool verbose;
	bool no_stacks;
	bool counters_only;
};

/* Options only some collectors take. */
#define OPT_TOP (1U << 0)
#define OPT_ATTACH_TRACEPOINT (1U << 1)
#define OPT_NO_STACKS (1U << 2)
#define OPT_COUNTERS_ONLY (1U << 3)

/* Parses argv; on bad arguments prints one line and exits 2. */
void parse_args(int argc, char **argv, const char *prog, unsigned int opts, struct env *env);
/* Prints `unavailable: <reason>` on stderr and exits 1. */
void unavailable(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* Prints `<prog>: <message>` on stderr and exits 1. */
void fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* Blocks the control signals (they are taken with sigtimedwait), sends
 * libbpf's messages to stderr only with --verbose and checks for kernel BTF. */
void setup(const struct env *env);
const char *attach_mode_name(enum attach_mode mode);
/* Whether the kernel can load a tp_btf program for tracepoint `tp`. */
bool probe_tp_btf(const char *tp);
/* Whether bpf_get_current_task_btf() and bpf_task_pt_regs() are there (5.15). */
bool probe_user_stacks(void);
/* Number of arguments of tracepoint `tp` per vmlinux BTF, -1 if unknown. */
int tp_nargs(const char *tp);
/* Whether classic tracepoint category:event can be attached (tracefs holds its id). */
bool tracepoint_exists(const char *category, const char *event);

void targets_add(__u64 *bitmap, pid_t pid);

struct window {
	volatile bool *enabled;
	volatile __u64 *start_ns;
	__u64 opened_ns;
	__u64 total_ns;
	/* Optional, called whenever the window opens (once counting is on) and
	 * whenever it closes (SIGUSR2 or the end). */
	void (*on_open)(void *ctx);
	void (*on_close)(void *ctx);
	void *ctx;
};

/* Prints the "attached" event, then runs the window from the signals until
 * SIGINT/SIGTERM or the --duration-s deadline; the window is closed on return.
 * Each SIGUSR1 and SIGUSR2 is acknowledged on stdout once acted on, with
 * {"event":"window_open"} or {"event":"window_closed"} (and "window_ns"). */
void run_window(struct window *w, const struct env *env);

struct bpf_object;
struct json;
/* Runs of the object's programs the kernel skipped because the program was
 * already running on that CPU: events lost like failed map updates. */
__u64 prog_misses(struct bpf_object *obj);
/* With --stats: "prog_stats", each program's run count and run time (kernel
 * BPF statistics, enabled while the collector runs). */
void write_prog_stats(struct json *j, const struct env *env, struct bpf_object *obj);

/* --out FILE (opened in parse_args so a bad path fails early) or stdout. */
FILE *output_file(void);
/* Finishes the JSON output; exits 1 if it could not be written. */
void finish_output(FILE *f);

/* Calls fn for every entry of the BPF map fd (read after detaching). */
typedef void (*map_entry_fn)(const void *key, const void *value, void *ctx);
void for_each_entry(int fd, size_t key_size, size_t value_size, map_entry_fn fn, void *ctx);

/* Reads every entry of the BPF map fd into a new array of records of
 * rec_size bytes, each with the key at key_off and the value at value_off,
 * the rest zeroed; returns it (NULL if empty; the caller frees it) and its
 * length in *n. */
void *read_entries(int fd, size_t key_size, size_t value_size, size_t rec_size, size_t key_off,
		   size_t value_off, size_t *n);

/* Makes room for element n of a growing array (doubling at powers of two). */
void *grow_array(void *array, size_t n, size_t size);
/* qsort() that also takes an empty (NULL) array. */
void sort_array(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* Reads /proc/<tgid>/task/<tid>/comm into buf; false if gone. */
bool read_comm(pid_t tgid, pid_t tid, char *buf, size_t len);

/* The head of a stack collector's record (futex, offwake) once folded: its
 * process and folded line ("comm;root;...;leaf", owned). First in the record,
 * so that cmp_folded_head() sorts any of them. */
struct folded_head {
	char *folded;
	__u32 tgid;
};
/* qsort() order of records that start with a struct folded_head: by process,
 * then line, so that the records of one line are adjacent (to merge). */
int cmp_folded_head(const void *a, const void *b);

/* A growing string for the folded stacks ("comm;root;...;leaf"): s is NULL
 * until the first append, then NUL-terminated; the owner frees s. */
struct strbuf {
	char *s;
	size_t len, cap;
};
/* Appends text as it is. */
void sb_append(struct strbuf *b, const char *s);
/* Appends a frame: ';' before it unless b is empty, and any ';' inside the
 * name written as ':' since ';' separates the frames. */
void sb_frame(struct strbuf *b, const char *name);

#endif /* COMMON_H */
