/* SPDX-License-Identifier: GPL-2.0 */
/* User stacks walked by the programs themselves (offwake, futex): current's
 * frame pointers read in pieces, each distinct stack stored once in
 * hb_user_stacks under a 64-bit hash of its frames. */
#ifndef HB_USER_STACK_BPF_H
#define HB_USER_STACK_BPF_H

#include "shared.h"

#ifndef HB_MAX_USER_STACKS
#define HB_MAX_USER_STACKS 16384
#endif

/* Stacks not stored (hb_user_stacks is full); the collector may count its own
 * stack failures here too. */
__u64 hb_stack_errors;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HB_MAX_USER_STACKS);
	__type(key, __u64);
	__type(value, struct hb_user_stack);
} hb_user_stacks SEC(".maps");

#define HB_STACK_CHUNK 512
#define HB_KNOWN_STACKS 64

/* Per CPU, where a user stack is walked (too large for the BPF stack): the
 * stack, the piece of user memory its frames are read from, and the hashes of
 * the last stacks stored from this CPU (hb_user_stacks only grows, so a hash
 * found here needs no lookup there). */
struct hb_walk {
	struct hb_user_stack st;
	__u64 known[HB_KNOWN_STACKS];
	__u8 chunk[HB_STACK_CHUNK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hb_walk);
} hb_walks SEC(".maps");

struct hb_frame {
	__u64 next;
	__u64 ret;
};

/* current's user stack, walked by its frame pointers as perf's
 * perf_callchain_user() does (the user ip, then the return address of every
 * frame), stored in hb_user_stacks under a 64-bit hash of its frames: returns
 * that hash, or 0 for a task without a user stack (a kernel thread).
 * Walked here rather than by bpf_get_stackid(BPF_F_USER_STACK), whose two
 * user-memory reads per frame were most of the programs' cost (bpf/README.md,
 * Cost): frames lie close together, so one read of up to HB_STACK_CHUNK bytes takes
 * several of them. The hash also gives every distinct stack its own entry,
 * where the stack map's 16384 buckets dropped a stack whose bucket was taken,
 * and the walk stops at a null frame pointer instead of faulting on it. */
static __always_inline __u64 hb_user_stack(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fp, hash, base = 0, end = 0, off, len;
	struct hb_frame *frame;
	struct pt_regs *regs;
	struct hb_walk *w;
	__u32 zero = 0, i;
	long err;

	if (!task->mm)
		return 0;
	w = bpf_map_lookup_elem(&hb_walks, &zero);
	if (!w)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	w->st.ips[0] = PT_REGS_IP(regs);
	fp = PT_REGS_FP(regs);
	hash = 0xcbf29ce484222325ULL ^ w->st.ips[0];
	for (i = 1; i < HB_MAX_STACK_DEPTH; i++) {
		if (!fp)
			break;
		/* Frames are near each other: one read takes several, up to the
		 * end of fp's page (a read that a frame's own read would not
		 * fault on). */
		if (fp < base || fp + sizeof(*frame) > end) {
			len = ((fp | 4095) + 1) - fp;
			if (len > HB_STACK_CHUNK)
				len = HB_STACK_CHUNK;
			if (len < sizeof(*frame))
				len = sizeof(*frame);
			if (bpf_probe_read_user(w->chunk, len, (void *)fp))
				break;
			base = fp;
			end = fp + len;
		}
		off = fp - base;
		if (off > HB_STACK_CHUNK - sizeof(*frame))
			break;
		frame = (struct hb_frame *)(w->chunk + off);
		if (!frame->ret)
			break;
		w->st.ips[i] = frame->ret;
		hash = (hash ^ frame->ret) * 0x100000001b3ULL;
		/* Frames are at rising addresses toward the root: anything else is
		 * not a frame pointer (glibc's code keeps none). */
		if (frame->next <= fp) {
			i++;
			break;
		}
		fp = frame->next;
	}
	w->st.nr = i;
	hash = (hash ^ i) * 0x100000001b3ULL;
	hash |= 1; /* 0 is no stack */
	if (w->known[hash % HB_KNOWN_STACKS] == hash)
		return hash;
	if (!bpf_map_lookup_elem(&hb_user_stacks, &hash)) {
		err = bpf_map_update_elem(&hb_user_stacks, &hash, &w->st, BPF_NOEXIST);
		if (err && err != -HB_EEXIST) { /* the map is full */
			__sync_fetch_and_add(&hb_stack_errors, 1);
			return hash;
		}
	}
	w->known[hash % HB_KNOWN_STACKS] = hash;
	return hash;
}

#endif /* HB_USER_STACK_BPF_H */
