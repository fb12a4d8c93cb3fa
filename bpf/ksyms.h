/* SPDX-License-Identifier: GPL-2.0 */
/* Kernel symbolization from /proc/kallsyms (libbpf-tools' ksyms). */
#ifndef KSYMS_H
#define KSYMS_H

#include <linux/types.h>

struct ksyms;

/* NULL if /proc/kallsyms cannot be read or shows no addresses (kptr_restrict). */
struct ksyms *ksyms_load(void);
void ksyms_free(struct ksyms *k);
/* The function containing addr, or NULL. */
const char *ksyms_name(const struct ksyms *k, __u64 addr);

#endif /* KSYMS_H */
