/* SPDX-License-Identifier: GPL-2.0 */
#ifndef DEMANGLE_H
#define DEMANGLE_H

/* The readable name of a symbol, as a malloc'ed string: C++ (Itanium ABI,
 * through libstdc++'s __cxa_demangle), Rust legacy (the same, then the
 * ::h<hash> dropped and $..$ escapes decoded) and Rust v0 (_R...); any
 * other name, or one that does not parse, is returned as is. LLVM's
 * ".llvm.<n>" suffix of local symbols is dropped. */
char *demangle(const char *name);

#endif /* DEMANGLE_H */
