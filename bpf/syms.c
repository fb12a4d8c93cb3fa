// SPDX-License-Identifier: GPL-2.0
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/sysmacros.h>
#include <bpf/bpf.h>

#include "common.h"
#include "demangle.h"
#include "shared.h"
#include "syms.h"

struct sym {
	__u64 addr;
	__u64 size;
	char *name;
	char *pretty; /* demangled on first use */
	int rank;     /* for aliases at one address: global before weak before local */
};

/* A PT_LOAD segment: file offsets [offset, offset + filesz) at vaddr. */
struct seg {
	__u64 offset;
	__u64 vaddr;
	__u64 filesz;
};

struct dso {
	char *path;
	dev_t dev;
	ino_t ino;
	bool loaded;
	struct seg *segs;
	size_t nsegs;
	struct sym *syms;
	size_t nsyms;
};

struct mapping {
	__u64 start;
	__u64 end;
	__u64 pgoff;
	struct dso *dso; /* NULL: anonymous or special ([vdso], ...) */
	char *name;	 /* basename for module+0xoff */
};

struct proc {
	pid_t pid;
	struct mapping *maps;
	size_t nmaps;
	bool perf_map_read;
	struct dso perf_map; /* JIT symbols at absolute addresses */
};

struct syms {
	struct proc *procs;
	size_t nprocs;
	struct dso **dsos;
	size_t ndsos;
};

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size ? size : 1);
	if (!p)
		fatal("out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		fatal("out of memory");
	return d;
}

struct syms *syms_new(void)
{
	struct syms *s = calloc(1, sizeof(*s));

	if (!s)
		fatal("out of memory");
	if (elf_version(EV_CURRENT) == EV_NONE)
		fatal("libelf: %s", elf_errmsg(-1));
	return s;
}

static void dso_clear_syms(struct dso *d)
{
	size_t i;

	for (i = 0; i < d->nsyms; i++) {
		free(d->syms[i].name);
		free(d->syms[i].pretty);
	}
	free(d->syms);
	free(d->segs);
	d->syms = NULL;
	d->nsyms = 0;
	d->segs = NULL;
	d->nsegs = 0;
}

static void proc_clear_maps(struct proc *p)
{
	size_t i;

	for (i = 0; i < p->nmaps; i++)
		free(p->maps[i].name);
	free(p->maps);
	p->maps = NULL;
	p->nmaps = 0;
}

void syms_free(struct syms *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nprocs; i++) {
		proc_clear_maps(&s->procs[i]);
		dso_clear_syms(&s->procs[i].perf_map);
	}
	for (i = 0; i < s->ndsos; i++) {
		dso_clear_syms(s->dsos[i]);
		free(s->dsos[i]->path);
		free(s->dsos[i]);
	}
	free(s->procs);
	free(s->dsos);
	free(s);
}

static struct proc *find_proc(struct syms *s, pid_t pid, bool create)
{
	size_t i;

	for (i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	if (!create)
		return NULL;
	s->procs = xrealloc(s->procs, (s->nprocs + 1) * sizeof(*s->procs));
	memset(&s->procs[s->nprocs], 0, sizeof(*s->procs));
	s->procs[s->nprocs].pid = pid;
	return &s->procs[s->nprocs++];
}

/* One dso per file (device + inode), shared by all processes mapping it. */
static struct dso *find_dso(struct syms *s, const char *path, dev_t dev, ino_t ino)
{
	struct dso *d;
	size_t i;

	for (i = 0; i < s->ndsos; i++)
		if (s->dsos[i]->dev == dev && s->dsos[i]->ino == ino &&
		    !strcmp(s->dsos[i]->path, path))
			return s->dsos[i];
	d = calloc(1, sizeof(*d));
	if (!d)
		fatal("out of memory");
	d->path = xstrdup(path);
	d->dev = dev;
	d->ino = ino;
	s->dsos = xrealloc(s->dsos, (s->ndsos + 1) * sizeof(*s->dsos));
	s->dsos[s->ndsos++] = d;
	return d;
}

void syms_snapshot(struct syms *s, pid_t pid)
{
	unsigned long long start, end, pgoff, inode;
	char line[PATH_MAX + 128], perms[8], path[PATH_MAX];
	struct mapping *maps = NULL, *m;
	unsigned int major, minor;
	const char *base;
	size_t nmaps = 0;
	struct proc *p;
	FILE *f;
	int n;

	snprintf(line, sizeof(line), "/proc/%d/maps", pid);
	f = fopen(line, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		path[0] = '\0';
		n = sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095[^\n]", &start, &end, perms,
			   &pgoff, &major, &minor, &inode, path);
		if (n < 7 || !strchr(perms, 'x'))
			continue;
		maps = xrealloc(maps, (nmaps + 1) * sizeof(*maps));
		m = &maps[nmaps++];
		m->start = start;
		m->end = end;
		m->pgoff = pgoff;
		m->dso = NULL;
		base = strrchr(path, '/');
		m->name = xstrdup(base ? base + 1 : path);
		if (path[0] == '/' && inode)
			m->dso = find_dso(s, path, makedev(major, minor), inode);
	}
	fclose(f);
	/* An exited process not yet reaped has no mappings: keep the last ones. */
	if (!nmaps)
		return;
	p = find_proc(s, pid, true);
	proc_clear_maps(p);
	p->maps = maps;
	p->nmaps = nmaps;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->rank - y->rank;
}

/* Sorts by address and drops aliases, keeping the best-ranked name. */
static void sort_syms(struct dso *d)
{
	size_t i, out = 0;

	qsort(d->syms, d->nsyms, sizeof(*d->syms), sym_cmp);
	for (i = 0; i < d->nsyms; i++) {
		if (out && d->syms[out - 1].addr == d->syms[i].addr) {
			free(d->syms[i].name);
			continue;
		}
		d->syms[out++] = d->syms[i];
	}
	d->nsyms = out;
}

static void add_sym(struct dso *d, __u64 addr, __u64 size, const char *name, int rank)
{
	struct sym *sym;

	if (!(d->nsyms & (d->nsyms - 1)))
		d->syms = xrealloc(d->syms, (d->nsyms ? 2 * d->nsyms : 1) * sizeof(*d->syms));
	sym = &d->syms[d->nsyms++];
	sym->addr = addr;
	sym->size = size;
	sym->name = xstrdup(name);
	sym->pretty = NULL;
	sym->rank = rank;
}

static size_t load_symtab(struct dso *d, Elf *elf, Elf_Scn *scn)
{
	size_t i, count, before = d->nsyms;
	GElf_Shdr shdr;
	Elf_Data *data;
	const char *name;
	GElf_Sym sym;
	int type, bind;

	if (!scn || !gelf_getshdr(scn, &shdr) || !shdr.sh_entsize)
		return 0;
	data = elf_getdata(scn, NULL);
	if (!data)
		return 0;
	count = shdr.sh_size / shdr.sh_entsize;
	for (i = 0; i < count; i++) {
		if (!gelf_getsym(data, i, &sym))
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
		    !sym.st_value)
			continue;
		name = elf_strptr(elf, shdr.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		bind = GELF_ST_BIND(sym.st_info);
		add_sym(d, sym.st_value, sym.st_size, name,
			bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2);
	}
	return d->nsyms - before;
}

static void load_elf(struct dso *d, int fd)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	size_t i, phnum;
	GElf_Phdr phdr;
	GElf_Shdr shdr;
	Elf *elf;

	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return;
	if (elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum))
		goto out;
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(elf, i, &phdr) || phdr.p_type != PT_LOAD)
			continue;
		d->segs = xrealloc(d->segs, (d->nsegs + 1) * sizeof(*d->segs));
		d->segs[d->nsegs].offset = phdr.p_offset;
		d->segs[d->nsegs].vaddr = phdr.p_vaddr;
		d->segs[d->nsegs].filesz = phdr.p_filesz;
		d->nsegs++;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr))
			continue;
		if (shdr.sh_type == SHT_SYMTAB)
			symtab = scn;
		else if (shdr.sh_type == SHT_DYNSYM)
			dynsym = scn;
	}
	/* .symtab is a superset of .dynsym unless the file was stripped. */
	if (!load_symtab(d, elf, symtab))
		load_symtab(d, elf, dynsym);
	sort_syms(d);
out:
	elf_end(elf);
}

/* The exact file the process mapped (even if deleted or replaced since) while
 * it lives, then its path in the process' mount namespace, then ours. */
static int open_mapped(const struct dso *d, pid_t pid, const struct mapping *m)
{
	char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/%d/root%s", pid, d->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	return open(d->path, O_RDONLY | O_CLOEXEC);
}

static void load_perf_map(struct proc *p)
{
	unsigned long long start, size;
	char path[64], line[4096], name[4096];
	FILE *f;

	p->perf_map_read = true;
	snprintf(path, sizeof(path), "/proc/%d/root/tmp/perf-%d.map", p->pid, p->pid);
	f = fopen(path, "r");
	if (!f) {
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", p->pid);
		f = fopen(path, "r");
	}
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %llx %4095[^\n]", &start, &size, name) == 3)
			add_sym(&p->perf_map, start, size, name, 0);
	fclose(f);
	sort_syms(&p->perf_map);
}

static struct sym *find_sym(struct dso *d, __u64 addr)
{
	size_t lo = 0, hi = d->nsyms;
	struct sym *sym;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	sym = &d->syms[lo - 1];
	/* Size 0: hand-written assembly without .size; take the nearest. */
	if (sym->size && addr >= sym->addr + sym->size)
		return NULL;
	return sym;
}

static const char *sym_name(struct sym *sym)
{
	if (!sym->pretty)
		sym->pretty = demangle(sym->name);
	return sym->pretty;
}

const char *syms_name(struct syms *s, pid_t pid, __u64 addr, bool return_addr, char *buf,
		      size_t len)
{
	struct proc *p = find_proc(s, pid, false);
	__u64 lookup = return_addr ? addr - 1 : addr, off;
	struct mapping *m = NULL;
	struct sym *sym;
	size_t i;

	if (!p)
		return "[unknown]";
	for (i = 0; i < p->nmaps; i++) {
		if (lookup >= p->maps[i].start && lookup < p->maps[i].end) {
			m = &p->maps[i];
			break;
		}
	}
	if (!m || !m->dso) {
		/* Anonymous executable memory: JIT code, named in perf-PID.map. */
		if (!p->perf_map_read)
			load_perf_map(p);
		sym = find_sym(&p->perf_map, lookup);
		if (sym)
			return sym_name(sym);
		if (!m)
			return "[unknown]";
		snprintf(buf, len, "%s+0x%llx", m->name[0] ? m->name : "[anon]",
			 (unsigned long long)(addr - m->start));
		return buf;
	}
	if (!m->dso->loaded) {
		int fd = open_mapped(m->dso, pid, m);

		m->dso->loaded = true;
		if (fd >= 0) {
			load_elf(m->dso, fd);
			close(fd);
		}
	}
	off = lookup - m->start + m->pgoff;
	for (i = 0; i < m->dso->nsegs; i++) {
		const struct seg *sg = &m->dso->segs[i];

		if (off >= sg->offset && off < sg->offset + sg->filesz) {
			sym = find_sym(m->dso, off - sg->offset + sg->vaddr);
			if (sym)
				return sym_name(sym);
			break;
		}
	}
	snprintf(buf, len, "%s+0x%llx", m->name, (unsigned long long)(addr - m->start + m->pgoff));
	return buf;
}

bool sb_user_stack(struct strbuf *b, struct syms *s, int fd, __u64 hash, pid_t pid,
		   bool root_first)
{
	struct hb_user_stack st;
	char buf[256];
	__u32 k, i;

	if (!hash || bpf_map_lookup_elem(fd, &hash, &st) || st.nr > HB_MAX_STACK_DEPTH)
		return false;
	for (k = 0; k < st.nr; k++) {
		i = root_first ? st.nr - 1 - k : k;
		sb_frame(b, syms_name(s, pid, st.ips[i], i > 0, buf, sizeof(buf)));
	}
	return true;
}
