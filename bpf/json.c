// SPDX-License-Identifier: GPL-2.0
#include "json.h"

void json_init(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->need_comma[0] = false;
	j->after_key = false;
}

/* Called before every value: a comma unless it is the first element or the
 * value of a key just written. */
static void json_value_prefix(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	j->need_comma[j->depth] = true;
}

static void json_open(struct json *j, char c)
{
	json_value_prefix(j);
	fputc(c, j->f);
	if (j->depth < JSON_MAX_DEPTH - 1)
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void json_close(struct json *j, char c)
{
	if (j->depth > 0)
		j->depth--;
	fputc(c, j->f);
}

void json_begin_object(struct json *j)
{
	json_open(j, '{');
}

void json_end_object(struct json *j)
{
	json_close(j, '}');
}

void json_begin_array(struct json *j)
{
	json_open(j, '[');
}

void json_end_array(struct json *j)
{
	json_close(j, ']');
}

static void json_write_string(FILE *f, const char *s)
{
	const unsigned char *p;

	fputc('"', f);
	for (p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			/* Control bytes escaped; bytes >= 0x80 are passed through
			 * (names from the kernel and ELF files are UTF-8 or ASCII). */
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

void json_key(struct json *j, const char *key)
{
	json_value_prefix(j);
	json_write_string(j->f, key);
	fputc(':', j->f);
	j->after_key = true;
}

void json_string(struct json *j, const char *s)
{
	json_value_prefix(j);
	json_write_string(j->f, s);
}

void json_u64(struct json *j, __u64 v)
{
	json_value_prefix(j);
	fprintf(j->f, "%llu", (unsigned long long)v);
}


void json_kv_string(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	json_string(j, s);
}

void json_kv_u64(struct json *j, const char *key, __u64 v)
{
	json_key(j, key);
	json_u64(j, v);
}

void json_kv_bool(struct json *j, const char *key, bool v)
{
	json_key(j, key);
	json_value_prefix(j);
	fputs(v ? "true" : "false", j->f);
}


void json_kv_hist(struct json *j, const char *key, const __u64 *slots, int nslots)
{
	int last = nslots - 1, i;

	while (last >= 0 && !slots[last])
		last--;
	json_key(j, key);
	json_begin_array(j);
	for (i = 0; i <= last; i++)
		json_u64(j, slots[i]);
	json_end_array(j);
}
