// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "demangle.h"

/* libstdc++'s demangler (C linkage; <cxxabi.h> is C++ only). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

static char *xstrndup(const char *s, size_t n)
{
	char *d = strndup(s, n);

	if (!d)
		fatal("out of memory");
	return d;
}

/* Rust legacy mangling escapes characters a C++ identifier cannot hold as
 * $..$ sequences and writes "::" as ".." (what rustc-demangle decodes). */
static void rust_unescape(char *s)
{
	static const struct {
		const char *esc;
		char c;
	} escapes[] = {
		{ "$SP$", '@' }, { "$BP$", '*' }, { "$RF$", '&' }, { "$LT$", '<' },
		{ "$GT$", '>' }, { "$LP$", '(' }, { "$RP$", ')' }, { "$C$", ',' },
	};
	char *in = s, *out = s;
	size_t i, n;

	while (*in) {
		/* A component starting with '$' is mangled with a leading '_'. */
		if (in[0] == '_' && in[1] == '$' &&
		    (out == s || (out - s >= 2 && out[-1] == ':' && out[-2] == ':'))) {
			in++;
			continue;
		}
		if (in[0] == '.' && in[1] == '.') {
			*out++ = ':';
			*out++ = ':';
			in += 2;
			continue;
		}
		if (*in == '$') {
			for (i = 0; i < sizeof(escapes) / sizeof(escapes[0]); i++) {
				n = strlen(escapes[i].esc);
				if (!strncmp(in, escapes[i].esc, n))
					break;
			}
			if (i < sizeof(escapes) / sizeof(escapes[0])) {
				*out++ = escapes[i].c;
				in += n;
				continue;
			}
			/* $uXX$: a character by its hex code. */
			if (in[1] == 'u' && isxdigit((unsigned char)in[2]) &&
			    isxdigit((unsigned char)in[3]) && in[4] == '$') {
				char hex[3] = { in[2], in[3], '\0' };

				*out++ = (char)strtol(hex, NULL, 16);
				in += 5;
				continue;
			}
		}
		*out++ = *in++;
	}
	*out = '\0';
}

/* Rust legacy symbols are C++-mangled paths ending in a ::h<16 hex> hash. */
static bool strip_rust_hash(char *s)
{
	size_t n = strlen(s), i;

	if (n < 19 || strncmp(s + n - 19, "::h", 3))
		return false;
	for (i = n - 16; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	s[n - 19] = '\0';
	return true;
}

static char *demangle_itanium(const char *name)
{
	const char *suffix = strstr(name, ".llvm.");
	char *mangled, *out;
	int status;

	mangled = xstrndup(name, suffix ? (size_t)(suffix - name) : strlen(name));
	out = __cxa_demangle(mangled, NULL, NULL, &status);
	free(mangled);
	if (!out || status) {
		free(out);
		return NULL;
	}
	if (strip_rust_hash(out))
		rust_unescape(out);
	return out;
}

/* Rust v0 mangling (RFC 2603), printed as rustc-demangle's alternate form
 * does (no crate hashes); lifetimes print as '_. */
struct v0 {
	const char *s; /* the symbol after "_R" */
	size_t len;
	size_t pos;
	char *out;
	size_t out_len;
	size_t out_cap;
	int quiet; /* > 0: parse without printing (impl paths) */
	int depth;
	bool err;
};

#define V0_MAX_DEPTH 64

static void v0_print_n(struct v0 *v, const char *s, size_t n)
{
	if (v->quiet || v->err)
		return;
	if (v->out_len + n + 1 > v->out_cap) {
		v->out_cap = 2 * (v->out_len + n + 1);
		v->out = realloc(v->out, v->out_cap);
		if (!v->out)
			fatal("out of memory");
	}
	memcpy(v->out + v->out_len, s, n);
	v->out_len += n;
	v->out[v->out_len] = '\0';
}

static void v0_print(struct v0 *v, const char *s)
{
	v0_print_n(v, s, strlen(s));
}

static char v0_peek(const struct v0 *v)
{
	return !v->err && v->pos < v->len ? v->s[v->pos] : '\0';
}

static char v0_next(struct v0 *v)
{
	char c = v0_peek(v);

	if (c)
		v->pos++;
	else
		v->err = true;
	return c;
}

static bool v0_eat(struct v0 *v, char c)
{
	if (v0_peek(v) != c)
		return false;
	v->pos++;
	return true;
}

/* {0-9a-zA-Z} "_": "_" is 0, otherwise the digits' value plus one. */
static unsigned long long v0_base62(struct v0 *v)
{
	unsigned long long x = 0;
	char c;

	if (v0_eat(v, '_'))
		return 0;
	while (!v0_eat(v, '_')) {
		c = v0_next(v);
		if (c >= '0' && c <= '9')
			x = x * 62 + (c - '0');
		else if (c >= 'a' && c <= 'z')
			x = x * 62 + (c - 'a' + 10);
		else if (c >= 'A' && c <= 'Z')
			x = x * 62 + (c - 'A' + 36);
		else
			v->err = true;
		if (v->err)
			return 0;
	}
	return x + 1;
}

static unsigned long long v0_disambiguator(struct v0 *v)
{
	return v0_eat(v, 's') ? v0_base62(v) + 1 : 0;
}

static size_t v0_decimal(struct v0 *v)
{
	size_t x = 0;

	if (!isdigit((unsigned char)v0_peek(v))) {
		v->err = true;
		return 0;
	}
	if (v0_eat(v, '0'))
		return 0;
	while (isdigit((unsigned char)v0_peek(v)))
		x = x * 10 + (v0_next(v) - '0');
	return x;
}

/* ["u"] <decimal> ["_"] <bytes>; punycode ("u") is printed undecoded. */
static void v0_ident(struct v0 *v, const char **ident, size_t *n, bool *punycode)
{
	*punycode = v0_eat(v, 'u');
	*n = v0_decimal(v);
	v0_eat(v, '_');
	if (v->err || *n > v->len - v->pos) {
		v->err = true;
		*n = 0;
		return;
	}
	*ident = v->s + v->pos;
	v->pos += *n;
}

static void v0_print_ident(struct v0 *v, const char *ident, size_t n, bool punycode)
{
	if (punycode)
		v0_print(v, "punycode{");
	v0_print_n(v, ident, n);
	if (punycode)
		v0_print(v, "}");
}

static void v0_path(struct v0 *v, bool in_value);
static void v0_type(struct v0 *v);
static void v0_const(struct v0 *v);

/* B<base62>: the production at that earlier position, parsed again. */
static void v0_backref(struct v0 *v, void (*parse)(struct v0 *, bool), bool arg)
{
	size_t at = v->pos - 1, target = v0_base62(v), saved;

	if (v->err || target >= at || ++v->depth > V0_MAX_DEPTH) {
		v->err = true;
		return;
	}
	saved = v->pos;
	v->pos = target;
	parse(v, arg);
	v->pos = saved;
	v->depth--;
}

static void v0_type_arg(struct v0 *v, bool unused)
{
	(void)unused;
	v0_type(v);
}

static void v0_const_arg(struct v0 *v, bool unused)
{
	(void)unused;
	v0_const(v);
}

static void v0_lifetime(struct v0 *v)
{
	v0_base62(v);
	v0_print(v, "'_");
}

static void v0_generic_args(struct v0 *v)
{
	bool first = true;

	while (!v->err && !v0_eat(v, 'E')) {
		if (!first)
			v0_print(v, ", ");
		first = false;
		if (v0_eat(v, 'L'))
			v0_lifetime(v);
		else if (v0_eat(v, 'K'))
			v0_const(v);
		else
			v0_type(v);
	}
}

static void v0_path(struct v0 *v, bool in_value)
{
	const char *ident = NULL;
	unsigned long long dis;
	bool punycode;
	char ns, buf[32];
	size_t n;

	if (++v->depth > V0_MAX_DEPTH) {
		v->err = true;
		return;
	}
	switch (v0_next(v)) {
	case 'C': /* crate root */
		v0_disambiguator(v);
		v0_ident(v, &ident, &n, &punycode);
		v0_print_ident(v, ident, n, punycode);
		break;
	case 'N': /* nested path */
		ns = v0_next(v);
		v0_path(v, in_value);
		dis = v0_disambiguator(v);
		v0_ident(v, &ident, &n, &punycode);
		if (ns >= 'A' && ns <= 'Z') {
			/* Special namespaces: closures, shims. */
			v0_print(v, ns == 'C' ? "::{closure" : ns == 'S' ? "::{shim" : "::{");
			if (ns != 'C' && ns != 'S')
				v0_print_n(v, &ns, 1);
			if (n) {
				v0_print(v, ":");
				v0_print_ident(v, ident, n, punycode);
			}
			snprintf(buf, sizeof(buf), "#%llu}", dis);
			v0_print(v, buf);
		} else if (n) {
			v0_print(v, "::");
			v0_print_ident(v, ident, n, punycode);
		}
		break;
	case 'M': /* <T> (inherent impl): the impl's own path is not shown */
		v0_disambiguator(v);
		v->quiet++;
		v0_path(v, false);
		v->quiet--;
		v0_print(v, "<");
		v0_type(v);
		v0_print(v, ">");
		break;
	case 'X': /* <T as Trait> (trait impl) */
		v0_disambiguator(v);
		v->quiet++;
		v0_path(v, false);
		v->quiet--;
		/* fall through */
	case 'Y': /* <T as Trait> (trait definition) */
		v0_print(v, "<");
		v0_type(v);
		v0_print(v, " as ");
		v0_path(v, false);
		v0_print(v, ">");
		break;
	case 'I': /* generic arguments */
		v0_path(v, in_value);
		v0_print(v, in_value ? "::<" : "<");
		v0_generic_args(v);
		v0_print(v, ">");
		break;
	case 'B':
		v0_backref(v, v0_path, in_value);
		break;
	default:
		v->err = true;
	}
	v->depth--;
}

static const char *v0_basic_type(char c)
{
	switch (c) {
	case 'a': return "i8";
	case 'b': return "bool";
	case 'c': return "char";
	case 'd': return "f64";
	case 'e': return "str";
	case 'f': return "f32";
	case 'h': return "u8";
	case 'i': return "isize";
	case 'j': return "usize";
	case 'l': return "i32";
	case 'm': return "u32";
	case 'n': return "i128";
	case 'o': return "u128";
	case 'p': return "_";
	case 's': return "i16";
	case 't': return "u16";
	case 'u': return "()";
	case 'v': return "...";
	case 'x': return "i64";
	case 'y': return "u64";
	case 'z': return "!";
	default: return NULL;
	}
}

/* fn-sig = [binder] ["U"] ["K" abi] {type} "E" type */
static void v0_fn_sig(struct v0 *v)
{
	const char *abi;
	bool first = true, punycode;
	size_t n, i;

	if (v0_eat(v, 'G'))
		v0_base62(v);
	if (v0_eat(v, 'U'))
		v0_print(v, "unsafe ");
	if (v0_eat(v, 'K')) {
		v0_print(v, "extern \"");
		if (v0_eat(v, 'C')) {
			v0_print(v, "C");
		} else {
			v0_ident(v, &abi, &n, &punycode);
			for (i = 0; i < n && !v->err; i++)
				v0_print_n(v, abi[i] == '_' ? "-" : &abi[i], 1);
		}
		v0_print(v, "\" ");
	}
	v0_print(v, "fn(");
	while (!v->err && !v0_eat(v, 'E')) {
		if (!first)
			v0_print(v, ", ");
		first = false;
		v0_type(v);
	}
	v0_print(v, ")");
	if (v0_eat(v, 'u'))
		return;
	v0_print(v, " -> ");
	v0_type(v);
}

/* dyn-bounds = [binder] {path {"p" ident type}} "E", then a lifetime */
static void v0_dyn(struct v0 *v)
{
	bool first = true, binding, punycode;
	const char *name;
	size_t n;

	if (v0_eat(v, 'G'))
		v0_base62(v);
	v0_print(v, "dyn ");
	while (!v->err && !v0_eat(v, 'E')) {
		if (!first)
			v0_print(v, " + ");
		first = false;
		v0_path(v, false);
		binding = false;
		while (!v->err && v0_eat(v, 'p')) {
			v0_print(v, binding ? ", " : "<");
			binding = true;
			v0_ident(v, &name, &n, &punycode);
			v0_print_ident(v, name, n, punycode);
			v0_print(v, " = ");
			v0_type(v);
		}
		if (binding)
			v0_print(v, ">");
	}
	if (v0_eat(v, 'L'))
		v0_base62(v);
}

static void v0_type(struct v0 *v)
{
	const char *basic = v0_basic_type(v0_peek(v));
	size_t count = 0;
	char tag;

	if (basic) {
		v->pos++;
		v0_print(v, basic);
		return;
	}
	if (++v->depth > V0_MAX_DEPTH) {
		v->err = true;
		return;
	}
	switch ((tag = v0_peek(v))) {
	case 'A': /* [T; N] */
	case 'S': /* [T] */
		v->pos++;
		v0_print(v, "[");
		v0_type(v);
		if (tag == 'A') {
			v0_print(v, "; ");
			v0_const(v);
		}
		v0_print(v, "]");
		break;
	case 'T': /* (T1, T2, ...) */
		v->pos++;
		v0_print(v, "(");
		while (!v->err && !v0_eat(v, 'E')) {
			if (count++)
				v0_print(v, ", ");
			v0_type(v);
		}
		v0_print(v, count == 1 ? ",)" : ")");
		break;
	case 'R': /* &T, &mut T */
	case 'Q':
		v->pos++;
		v0_print(v, tag == 'R' ? "&" : "&mut ");
		if (v0_eat(v, 'L'))
			v0_base62(v);
		v0_type(v);
		break;
	case 'P': /* *const T, *mut T */
	case 'O':
		v->pos++;
		v0_print(v, tag == 'P' ? "*const " : "*mut ");
		v0_type(v);
		break;
	case 'F':
		v->pos++;
		v0_fn_sig(v);
		break;
	case 'D':
		v->pos++;
		v0_dyn(v);
		break;
	case 'B':
		v->pos++;
		v0_backref(v, v0_type_arg, false);
		break;
	default: /* a named type */
		v0_path(v, false);
	}
	v->depth--;
}

/* A const generic argument: a basic type and its hex value, "p" (a
 * placeholder) or a backref; structured constants are not decoded. */
static void v0_const(struct v0 *v)
{
	unsigned long long value = 0;
	bool negative, overflow = false;
	const char *hex;
	char ty, buf[48];
	size_t n = 0;

	if (v0_eat(v, 'p')) {
		v0_print(v, "_");
		return;
	}
	if (v0_eat(v, 'B')) {
		v0_backref(v, v0_const_arg, false);
		return;
	}
	ty = v0_next(v);
	if (!v0_basic_type(ty) || ty == 'e' || ty == 'p') {
		v->err = true;
		return;
	}
	negative = v0_eat(v, 'n');
	hex = v->s + v->pos;
	while (!v->err && !v0_eat(v, '_')) {
		char c = v0_next(v);

		if (!isxdigit((unsigned char)c)) {
			v->err = true;
			return;
		}
		overflow |= value >> 60;
		value = value * 16 + (isdigit((unsigned char)c) ? c - '0' : (c | 0x20) - 'a' + 10);
		n++;
	}
	if (ty == 'b')
		snprintf(buf, sizeof(buf), "%s", value ? "true" : "false");
	else if (ty == 'c' && value >= 0x20 && value < 0x7f)
		snprintf(buf, sizeof(buf), "'%c'", (char)value);
	else if (overflow)
		snprintf(buf, sizeof(buf), "%s0x%.*s", negative ? "-" : "", (int)(n < 32 ? n : 32), hex);
	else
		snprintf(buf, sizeof(buf), "%s%llu", negative ? "-" : "", value);
	v0_print(v, buf);
}

static char *demangle_v0(const char *name)
{
	struct v0 v = { .s = name + 2, .len = strlen(name + 2) };

	/* An optional encoding version, then the path; what follows (the
	 * instantiating crate, a vendor suffix) is not shown. */
	if (isdigit((unsigned char)v0_peek(&v)))
		v0_decimal(&v);
	v0_path(&v, true);
	if (v.err || !v.out) {
		free(v.out);
		return NULL;
	}
	return v.out;
}

char *demangle(const char *name)
{
	char *out = NULL;

	if (!strncmp(name, "_R", 2))
		out = demangle_v0(name);
	else if (!strncmp(name, "_Z", 2))
		out = demangle_itanium(name);
	return out ? out : xstrndup(name, strlen(name));
}
