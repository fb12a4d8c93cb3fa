/* SPDX-License-Identifier: GPL-2.0 */
/* A minimal streaming JSON writer: compact output, commas handled by nesting. */
#ifndef JSON_H
#define JSON_H

#include <stdbool.h>
#include <linux/types.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	bool need_comma[JSON_MAX_DEPTH];
	bool after_key;
};

void json_init(struct json *j, FILE *f);
void json_begin_object(struct json *j);
void json_end_object(struct json *j);
void json_begin_array(struct json *j);
void json_end_array(struct json *j);
void json_key(struct json *j, const char *key);
void json_string(struct json *j, const char *s);
void json_u64(struct json *j, __u64 v);

void json_kv_string(struct json *j, const char *key, const char *s);
void json_kv_u64(struct json *j, const char *key, __u64 v);
void json_kv_bool(struct json *j, const char *key, bool v);
/* A log2 histogram as an array of counts, trailing empty slots left out. */
void json_kv_hist(struct json *j, const char *key, const __u64 *slots, int nslots);

#endif /* JSON_H */
