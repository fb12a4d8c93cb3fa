// SPDX-License-Identifier: GPL-2.0
/* gc: stop-the-world pauses (GC and other) and GC cycles of Go processes over
 * a measurement window, from entry-only uprobes on their Go runtime. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common.h"
#include "gc.h"
#include "gc.skel.h"
#include "json.h"

#define SYM_STOP "runtime.stopTheWorldWithSema"
#define SYM_START "runtime.startTheWorldWithSema"
#define SYM_NANOTIME "runtime.nanotime1.abi0"
/* stopTheWorldWithSema takes its stwReason since go1.21; startTheWorldWithSema
 * takes the worldStop (with the runtime's stop time) since go1.22. */
#define MIN_GO_MINOR 21
#define RUNTIME_CLOCK_MINOR 22
/* Reasons kept apart in the output; higher codes are folded into the last. */
#define MAX_REASONS 64

/* runtime/proc.go's stwReasonStrings (Go 1.21..1.26). */
static const char *const reason_names[] = {
	"unknown",
	"GC mark termination",
	"GC sweep termination",
	"write heap dump",
	"goroutine profile",
	"goroutine profile cleanup",
	"all goroutines stack trace",
	"read mem stats",
	"AllThreadsSyscall",
	"GOMAXPROCS",
	"start trace",
	"stop trace",
	"CountPagesInUse (test)",
	"ReadMetricsSlow (test)",
	"ReadMemStatsSlow (test)",
	"PageCachePagesLeaked (test)",
	"ResetDebugLog (test)",
};

/* A target and what was found in its executable. */
struct target {
	pid_t pid;
	char exe[PATH_MAX];
	char comm[HB_TASK_COMM_LEN];
	char go_version[64];
	size_t stop_off, start_off; /* file offsets of the two functions */
	size_t now_off;		    /* of gc_world_now's site, 0: none */
	struct hb_stw_stats reasons[MAX_REASONS];
	bool seen[MAX_REASONS];
};

/* GC pauses, other pauses, all. */
enum { K_GC, K_OTHER, K_ALL, NR_KINDS };

struct sums {
	__u64 cycles;
	struct hb_stw_stats kind[NR_KINDS];
};

static bool is_gc_reason(__u32 reason)
{
	return reason == HB_STW_GC_MARK_TERM || reason == HB_STW_GC_SWEEP_TERM;
}

static Elf_Scn *find_section(Elf *elf, size_t shstrndx, const char *name, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;
	const char *n;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, shdr))
			continue;
		n = elf_strptr(elf, shstrndx, shdr->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/* The Go version in .go.buildinfo (Go 1.18+ layout: a 32-byte header with
 * flag 2, then the version as a uvarint-length-prefixed string). */
static void read_go_version(Elf *elf, size_t shstrndx, struct target *t)
{
	static const char magic[] = "\xff Go buildinf:";
	GElf_Shdr shdr;
	Elf_Data *data;
	Elf_Scn *scn;
	const unsigned char *p;
	size_t len = 0, i = 32;
	int shift = 0;

	scn = find_section(elf, shstrndx, ".go.buildinfo", &shdr);
	if (!scn || shdr.sh_type == SHT_NOBITS || !(data = elf_getdata(scn, NULL)) ||
	    data->d_size < 33)
		return;
	p = data->d_buf;
	if (memcmp(p, magic, sizeof(magic) - 1) || !(p[15] & 2))
		return;
	while (i < data->d_size && shift < 35) {
		len |= (size_t)(p[i] & 0x7f) << shift;
		shift += 7;
		if (!(p[i++] & 0x80))
			break;
	}
	if (!len || len >= sizeof(t->go_version) || i + len > data->d_size)
		return;
	memcpy(t->go_version, p + i, len);
	t->go_version[len] = '\0';
}

/* Symbol value (virtual address) to file offset, through the PT_LOAD
 * segment that holds it, which is what uprobes take. */
static bool vaddr_to_offset(Elf *elf, GElf_Addr addr, size_t *off)
{
	GElf_Phdr phdr;
	size_t i, n;

	if (elf_getphdrnum(elf, &n))
		return false;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, i, &phdr) || phdr.p_type != PT_LOAD)
			continue;
		if (addr >= phdr.p_vaddr && addr < phdr.p_vaddr + phdr.p_filesz) {
			*off = addr - phdr.p_vaddr + phdr.p_offset;
			return true;
		}
	}
	return false;
}

enum { SYM_I_STOP, SYM_I_START, SYM_I_NANOTIME, NR_SYMS };

static const char *const sym_names[NR_SYMS] = {
	[SYM_I_STOP] = SYM_STOP,
	[SYM_I_START] = SYM_START,
	[SYM_I_NANOTIME] = SYM_NANOTIME,
};

struct sym {
	GElf_Addr addr; /* 0: not found */
	GElf_Xword size;
};

/* Looks the runtime functions up in .symtab; returns whether there is a
 * .symtab at all. */
static bool find_symbols(Elf *elf, struct sym *syms)
{
	bool has_symtab = false;
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	Elf_Data *data;
	GElf_Sym sym;
	const char *name;
	size_t i, n;
	int k;

	memset(syms, 0, NR_SYMS * sizeof(*syms));
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_SYMTAB || !shdr.sh_entsize)
			continue;
		has_symtab = true;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		n = shdr.sh_size / shdr.sh_entsize;
		for (i = 0; i < n; i++) {
			if (!gelf_getsym(data, i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_value)
				continue;
			name = elf_strptr(elf, shdr.sh_link, sym.st_name);
			if (!name || strncmp(name, "runtime.", 8))
				continue;
			for (k = 0; k < NR_SYMS; k++) {
				if (!syms[k].addr && !strcmp(name, sym_names[k])) {
					syms[k].addr = sym.st_value;
					syms[k].size = sym.st_size;
				}
			}
		}
	}
	return has_symtab;
}

/* The code bytes of function f, from the section that holds them. */
static const unsigned char *function_bytes(Elf *elf, const struct sym *f)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	Elf_Data *data;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS ||
		    !(shdr.sh_flags & SHF_EXECINSTR))
			continue;
		if (f->addr < shdr.sh_addr || f->addr + f->size > shdr.sh_addr + shdr.sh_size)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || data->d_size != shdr.sh_size)
			return NULL;
		return (const unsigned char *)data->d_buf + (f->addr - shdr.sh_addr);
	}
	return NULL;
}

/* Where startTheWorldWithSema has just taken `now = nanotime()`: on amd64,
 * the instruction after its one `CALL runtime.nanotime1.abi0` (E8 rel32),
 * which is the ABI0-to-ABIInternal transition that re-zeroes X15 (XORPS
 * X15, X15: 45 0F 57 FF). Requiring that sequence, exactly once, rules out
 * bytes that only look like the call; 0 when not found (then the pause ends
 * at the entry of startTheWorldWithSema instead). */
static GElf_Addr find_now_site(Elf *elf, const struct sym *start, const struct sym *nanotime)
{
#if defined(__x86_64__)
	static const unsigned char xorps_x15[] = { 0x45, 0x0f, 0x57, 0xff };
	const unsigned char *code;
	GElf_Addr site = 0;
	size_t i;
	__s32 rel;

	if (!start->size || !nanotime->addr || !(code = function_bytes(elf, start)))
		return 0;
	for (i = 0; i + 5 + sizeof(xorps_x15) <= start->size; i++) {
		if (code[i] != 0xe8)
			continue;
		memcpy(&rel, code + i + 1, sizeof(rel));
		if (start->addr + i + 5 + (GElf_Sxword)rel != nanotime->addr ||
		    memcmp(code + i + 5, xorps_x15, sizeof(xorps_x15)))
			continue;
		if (site)
			return 0; /* ambiguous */
		site = start->addr + i + 5;
	}
	return site;
#else
	(void)elf;
	(void)start;
	(void)nanotime;
	return 0;
#endif
}

/* Finds the runtime functions in the target's executable (read through
 * /proc/PID/exe, which also works when the file was replaced or deleted);
 * exits with `unavailable:` when they cannot be probed. */
static void inspect_target(struct target *t)
{
	struct sym syms[NR_SYMS];
	GElf_Addr stop, start, now_site;
	char path[64];
	GElf_Shdr shdr;
	bool has_symtab, is_go;
	size_t shstrndx;
	ssize_t n;
	Elf *elf;
	int fd, minor;

	snprintf(path, sizeof(path), "/proc/%d/exe", t->pid);
	n = readlink(path, t->exe, sizeof(t->exe) - 1);
	if (n < 0) {
		if (errno == ENOENT)
			unavailable("not a Go binary: pid %d has no executable (a kernel thread?)",
				    t->pid);
		unavailable("cannot read the executable of pid %d: %s", t->pid, strerror(errno));
	}
	t->exe[n] = '\0';
	if (!read_comm(t->pid, t->pid, t->comm, sizeof(t->comm)))
		t->comm[0] = '\0';

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		unavailable("cannot open the executable of pid %d (%s): %s", t->pid, t->exe,
			    strerror(errno));
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx))
		unavailable("not a Go binary: %s is not an ELF file", t->exe);

	has_symtab = find_symbols(elf, syms);
	stop = syms[SYM_I_STOP].addr;
	start = syms[SYM_I_START].addr;
	is_go = (stop && start) || find_section(elf, shstrndx, ".go.buildinfo", &shdr) ||
		find_section(elf, shstrndx, ".gopclntab", &shdr) ||
		find_section(elf, shstrndx, ".note.go.buildid", &shdr);
	if (!is_go)
		unavailable("not a Go binary: %s has no Go runtime (no %s, no "
			    ".go.buildinfo section)",
			    t->exe, SYM_STOP);
	if (!has_symtab)
		unavailable("no symbols: %s is a stripped Go binary (no .symtab; "
			    "built with -ldflags=-s?)",
			    t->exe);
	if (!stop || !start)
		unavailable("no symbols: %s has no %s in .symtab", t->exe,
			    stop ? SYM_START : SYM_STOP);
	read_go_version(elf, shstrndx, t);
	if (sscanf(t->go_version, "go1.%d", &minor) == 1 && minor < MIN_GO_MINOR)
		unavailable("%s is built with %s; needs go1.%d+ (stwReason argument)",
			    t->exe, t->go_version, MIN_GO_MINOR);
	if (!vaddr_to_offset(elf, stop, &t->stop_off) ||
	    !vaddr_to_offset(elf, start, &t->start_off))
		unavailable("no symbols: %s: the runtime functions are outside its "
			    "loadable segments",
			    t->exe);
	now_site = find_now_site(elf, &syms[SYM_I_START], &syms[SYM_I_NANOTIME]);
	if (now_site && !vaddr_to_offset(elf, now_site, &t->now_off))
		t->now_off = 0;
	elf_end(elf);
	close(fd);
}

static struct bpf_link *attach(struct bpf_program *prog, const struct target *t, size_t off,
			       const char *sym)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = false);
	struct bpf_link *link;
	char path[64];

	/* Per pid: the kernel puts the breakpoints only into that process
	 * (all its threads); the programs' target test is a second filter. */
	snprintf(path, sizeof(path), "/proc/%d/exe", t->pid);
	link = bpf_program__attach_uprobe_opts(prog, t->pid, path, off, &opts);
	if (!link)
		unavailable("cannot attach a uprobe to %s in %s (pid %d): %s", sym, t->exe, t->pid,
			    strerror(errno));
	return link;
}

static struct target *targets;
static int ntargets;

static void add_stats(const void *key, const void *value, void *arg)
{
	const struct hb_stw_key *k = key;
	__u32 reason = k->reason < MAX_REASONS ? k->reason : MAX_REASONS - 1;
	const struct hb_stw_stats *v = value;
	struct hb_stw_stats *st;
	int i, s;

	(void)arg;
	for (i = 0; i < ntargets; i++)
		if (targets[i].pid == (pid_t)k->tgid)
			break;
	if (i == ntargets)
		return;
	st = &targets[i].reasons[reason];
	targets[i].seen[reason] = true;
	st->stops += v->stops;
	st->pauses += v->pauses;
	st->total_ns += v->total_ns;
	if (v->max_ns > st->max_ns)
		st->max_ns = v->max_ns;
	for (s = 0; s < HB_MAX_SLOTS; s++)
		st->hist[s] += v->hist[s];
}

static void merge(struct hb_stw_stats *into, const struct hb_stw_stats *from)
{
	int s;

	into->stops += from->stops;
	into->pauses += from->pauses;
	into->total_ns += from->total_ns;
	if (from->max_ns > into->max_ns)
		into->max_ns = from->max_ns;
	for (s = 0; s < HB_MAX_SLOTS; s++)
		into->hist[s] += from->hist[s];
}

static void sum_target(const struct target *t, struct sums *s)
{
	int r;

	memset(s, 0, sizeof(*s));
	s->cycles = t->reasons[HB_STW_GC_SWEEP_TERM].stops;
	for (r = 0; r < MAX_REASONS; r++) {
		merge(&s->kind[is_gc_reason(r) ? K_GC : K_OTHER], &t->reasons[r]);
		merge(&s->kind[K_ALL], &t->reasons[r]);
	}
}

static void write_sums(struct json *j, const struct sums *s)
{
	static const char *const prefix[NR_KINDS] = { "gc_stw", "other_stw", "stw" };
	static const int order[NR_KINDS] = { K_ALL, K_GC, K_OTHER };
	char key[64];
	int i, k;

	json_kv_u64(j, "cycles", s->cycles);
	for (i = 0; i < NR_KINDS; i++) {
		k = order[i];
		snprintf(key, sizeof(key), "%s_pauses", prefix[k]);
		json_kv_u64(j, key, s->kind[k].pauses);
		snprintf(key, sizeof(key), "%s_total_ns", prefix[k]);
		json_kv_u64(j, key, s->kind[k].total_ns);
		snprintf(key, sizeof(key), "%s_max_ns", prefix[k]);
		json_kv_u64(j, key, s->kind[k].max_ns);
		snprintf(key, sizeof(key), "%s_hist_log2_ns", prefix[k]);
		json_kv_hist(j, key, s->kind[k].hist, HB_MAX_SLOTS);
	}
}

static void write_result(struct json *j, const struct env *env, struct gc_bpf *skel,
			 const struct window *win)
{
	struct sums sums, totals = {};
	char name[32];
	int i, r, k;

	json_begin_object(j);
	json_kv_string(j, "probe", "gc");
	json_kv_string(j, "attach", "uprobe");
	json_key(j, "pids");
	json_begin_array(j);
	for (i = 0; i < env->npids; i++)
		json_u64(j, env->pids[i]);
	json_end_array(j);
	json_kv_u64(j, "window_ns", win->total_ns);
	json_kv_u64(j, "lost_events", skel->bss->hb_lost_events + prog_misses(skel->obj));
	json_kv_u64(j, "unpaired_starts", skel->bss->unpaired_starts);
	json_kv_u64(j, "probe_timed_pauses", skel->bss->probe_timed);

	json_key(j, "processes");
	json_begin_array(j);
	for (i = 0; i < ntargets; i++) {
		const struct target *t = &targets[i];

		json_begin_object(j);
		json_kv_u64(j, "pid", t->pid);
		json_kv_string(j, "comm", t->comm);
		json_kv_string(j, "exe", t->exe);
		if (t->go_version[0])
			json_kv_string(j, "go_version", t->go_version);
		sum_target(t, &sums);
		write_sums(j, &sums);
		json_key(j, "by_reason");
		json_begin_array(j);
		for (r = 0; r < MAX_REASONS; r++) {
			if (!t->seen[r])
				continue;
			if (r < (int)(sizeof(reason_names) / sizeof(reason_names[0])))
				snprintf(name, sizeof(name), "%s", reason_names[r]);
			else
				snprintf(name, sizeof(name), "reason %d%s", r,
					 r == MAX_REASONS - 1 ? "+" : "");
			json_begin_object(j);
			json_kv_u64(j, "code", r);
			json_kv_string(j, "reason", name);
			json_kv_u64(j, "gc", is_gc_reason(r));
			json_kv_u64(j, "stops", t->reasons[r].stops);
			json_kv_u64(j, "pauses", t->reasons[r].pauses);
			json_kv_u64(j, "total_ns", t->reasons[r].total_ns);
			json_kv_u64(j, "max_ns", t->reasons[r].max_ns);
			json_end_object(j);
		}
		json_end_array(j);
		json_end_object(j);

		totals.cycles += sums.cycles;
		for (k = 0; k < NR_KINDS; k++)
			merge(&totals.kind[k], &sums.kind[k]);
	}
	json_end_array(j);

	json_key(j, "totals");
	json_begin_object(j);
	write_sums(j, &totals);
	json_end_object(j);
	write_prog_stats(j, env, skel->obj);
	json_end_object(j);
}

/* A comm changed after attaching (prctl) shows as it is at the end. */
static void refresh_comms(void *arg)
{
	char comm[HB_TASK_COMM_LEN];
	int i;

	(void)arg;
	for (i = 0; i < ntargets; i++)
		if (read_comm(targets[i].pid, targets[i].pid, comm, sizeof(comm)))
			memcpy(targets[i].comm, comm, sizeof(comm));
}

int main(int argc, char **argv)
{
	struct bpf_link **links;
	struct gc_bpf *skel;
	struct window w = {};
	struct json j;
	struct env env;
	int i, err, clock_fd;

	parse_args(argc, argv, "gc", 0, &env);
	if (env.attach != ATTACH_AUTO) {
		fprintf(stderr, "gc: --attach takes only 'auto' (gc attaches uprobes)\n");
		exit(2);
	}
	setup(&env);
	if (elf_version(EV_CURRENT) == EV_NONE)
		fatal("libelf: %s", elf_errmsg(-1));

	targets = calloc(env.npids, sizeof(*targets));
	links = calloc(3 * env.npids, sizeof(*links));
	if (!targets || !links)
		fatal("out of memory");
	for (i = 0; i < env.npids; i++) {
		int k;

		for (k = 0; k < ntargets && targets[k].pid != env.pids[i]; k++)
			;
		if (k < ntargets)
			continue; /* given twice */
		targets[ntargets].pid = env.pids[i];
		inspect_target(&targets[ntargets++]);
	}

	skel = gc_bpf__open();
	if (!skel)
		unavailable("cannot open the BPF object: %s", strerror(errno));
	err = gc_bpf__load(skel);
	if (err)
		unavailable("cannot load the BPF programs: %s", strerror(-err));
	clock_fd = bpf_map__fd(skel->maps.runtime_clock);
	for (i = 0; i < ntargets; i++) {
		struct target *t = &targets[i];
		__u32 tgid = t->pid, flags = 0;
		int minor;

		links[3 * i] = attach(skel->progs.gc_stop_world, t, t->stop_off, SYM_STOP);
		links[3 * i + 1] = attach(skel->progs.gc_start_world, t, t->start_off, SYM_START);
		/* An unknown version (a devel build) is taken as recent. */
		if (sscanf(t->go_version, "go1.%d", &minor) != 1 || minor >= RUNTIME_CLOCK_MINOR)
			flags |= HB_RT_WORLDSTOP;
		if ((flags & HB_RT_WORLDSTOP) && t->now_off) {
			links[3 * i + 2] = attach(skel->progs.gc_world_now, t, t->now_off,
						  SYM_START " (its nanotime call)");
			flags |= HB_RT_NOW_PROBE;
		}
		if (flags && bpf_map_update_elem(clock_fd, &tgid, &flags, BPF_ANY))
			fatal("cannot set up the target map: %s", strerror(errno));
		/* Last: a target is counted once all its probes are in place. */
		targets_add(skel->bss->hb_targets, t->pid);
	}

	w.enabled = &skel->bss->hb_enabled;
	w.start_ns = &skel->bss->hb_window_start_ns;
	w.on_close = refresh_comms;
	run_window(&w, &env);
	for (i = 0; i < 3 * ntargets; i++)
		bpf_link__destroy(links[i]);

	for_each_entry(bpf_map__fd(skel->maps.stats), sizeof(struct hb_stw_key),
		       sizeof(struct hb_stw_stats), add_stats, NULL);
	json_init(&j, output_file());
	write_result(&j, &env, skel, &w);
	finish_output(output_file());

	free(links);
	free(targets);
	gc_bpf__destroy(skel);
	return 0;
}
