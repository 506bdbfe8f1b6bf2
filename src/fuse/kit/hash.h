/* hash.h - the bucket hashes of the daemon's chained and open-addressed
 * tables (inodes, (parent, name) numbers, ids, paths): one mix for all, so
 * every table spreads its keys alike. cap is a power of two. */
#ifndef H5FS_FUSE_HASH_H
#define H5FS_FUSE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* A 64-bit key's bucket: the murmur3 finalizer's first half, enough to
 * spread sequential ids over the low bits. */
static inline size_t hash_u64(uint64_t v, size_t cap)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdULL;
	v ^= v >> 33;
	return (size_t)(v & (cap - 1));
}

/* The bucket of a string of len bytes, seeded (a parent's id, or 0):
 * FNV-1a, mixed; and of a NUL-terminated one. */
static inline size_t hash_name_n(uint64_t seed, const char *s, size_t len, size_t cap)
{
	uint64_t h = 1469598103934665603ULL ^ seed;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ULL;
	return hash_u64(h, cap);
}

static inline size_t hash_name(uint64_t seed, const char *s, size_t cap)
{
	uint64_t h = 1469598103934665603ULL ^ seed;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return hash_u64(h, cap);
}

/* The open-addressed tables of names (behind/lbatch_names.c's pending
 * names, mbatch.c's moves): slots hold an index + 1 (0: empty), probed
 * linearly from the name's bucket, at most half full. Index i of name
 * put in its slot. */
static inline void hash_slot_put(uint32_t *slots, size_t cap, const char *name, size_t i)
{
	size_t b = hash_name(0, name, cap);

	while (slots[b])
		b = (b + 1) & (cap - 1);
	slots[b] = (uint32_t)(i + 1);
}

#endif
