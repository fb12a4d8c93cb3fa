/* SPDX-License-Identifier: GPL-2.0 */
/* User-space symbolization from /proc/PID/maps and the mapped ELF files'
 * .symtab/.dynsym (the approach of libbpf-tools' trace_helpers.c), plus
 * /tmp/perf-PID.map for JIT code. */
#ifndef SYMS_H
#define SYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

struct syms;

struct syms *syms_new(void);
void syms_free(struct syms *s);
/* (Re)reads the executable mappings of pid if it is still alive; an earlier
 * snapshot is kept when it has exited, so stacks of a dead target still
 * resolve as long as its files exist. */
void syms_snapshot(struct syms *s, pid_t pid);
/* Names code address addr of pid: the (demangled) function, else
 * "module+0xoffset", else "[unknown]". return_addr: addr is a return address
 * (every frame but the innermost), looked up at addr - 1 so that a call as the
 * last instruction of a function is attributed to that function. */
const char *syms_name(struct syms *s, pid_t pid, __u64 addr, bool return_addr, char *buf,
		      size_t len);

struct strbuf;
/* Appends the user stack stored under hash in a collector's user_stacks map
 * (user_stack.bpf.h; fd), named as syms_name() does, root first or leaf
 * first; false, appending nothing, if the map does not hold it. */
bool sb_user_stack(struct strbuf *b, struct syms *s, int fd, __u64 hash, pid_t pid,
		   bool root_first);

#endif /* SYMS_H */
