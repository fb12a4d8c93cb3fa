// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ksyms.h"

struct ksym {
	__u64 addr;
	char *name;
};

struct ksyms {
	struct ksym *syms;
	size_t n;
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

struct ksyms *ksyms_load(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	struct ksyms *k;
	char name[256], type;
	unsigned long long addr;

	if (!f)
		return NULL;
	k = calloc(1, sizeof(*k));
	if (!k)
		fatal("out of memory");
	while (fscanf(f, "%llx %c %255s%*[^\n]\n", &addr, &type, name) == 3) {
		if (!addr || (type != 't' && type != 'T' && type != 'w' && type != 'W'))
			continue;
		k->syms = grow_array(k->syms, k->n, sizeof(*k->syms));
		k->syms[k->n].addr = addr;
		k->syms[k->n].name = strdup(name);
		if (!k->syms[k->n].name)
			fatal("out of memory");
		k->n++;
	}
	fclose(f);
	if (!k->n) {
		ksyms_free(k);
		return NULL;
	}
	sort_array(k->syms, k->n, sizeof(*k->syms), cmp_ksym);
	return k;
}

void ksyms_free(struct ksyms *k)
{
	size_t i;

	if (!k)
		return;
	for (i = 0; i < k->n; i++)
		free(k->syms[i].name);
	free(k->syms);
	free(k);
}

const char *ksyms_name(const struct ksyms *k, __u64 addr)
{
	size_t lo = 0, hi;

	if (!k || !k->n || addr < k->syms[0].addr)
		return NULL;
	hi = k->n;
	/* The last symbol at or below addr. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return k->syms[lo].name;
}
