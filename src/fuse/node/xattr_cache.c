/* xattr_cache.c - every xattr of an object kept in its node, for the
 * member root's listxattr and getxattr (member/xattr.c). */
#include "node.h"
#include "xattrs.h"

/*
 * The kernel caches no xattrs: `getfattr -d` costs a listxattr and two
 * getxattr requests (size, then value) per name, every time. So the first
 * request for an object reads all of its xattrs at once (xa_all: one
 * pass over its header) into its node, and the others are answered from
 * there until the node changes (xattr_cache_drop). Values the engine left
 * out (errors, large ones, a virtual dataset's shape) and names not in the
 * set are asked of the engine as before. */

/* What a node keeps: values up to XS_VALUE_MAX bytes, sets up to XS_SET_MAX,
 * and all nodes together up to XS_TOTAL_MAX (beyond it, a node keeps none
 * and the engine answers its requests one by one). */
#define XS_VALUE_MAX ((size_t)16 << 10)
#define XS_SET_MAX ((size_t)256 << 10)
#define XS_TOTAL_MAX ((size_t)64 << 20)
/* Objects with more xattrs than this are not kept (xa_all would
 * scan their header once per attribute). */
#define XS_NAMES_MAX 512

static size_t xs_total;         /* bytes of all nodes' sets (atomic) */

void xattr_cache_drop(struct node *n)
{
	if (n->xs) {
		__atomic_sub_fetch(&xs_total, n->xs->bytes, __ATOMIC_RELAXED);
		xa_set_free(n->xs);
		n->xs = NULL;
	}
	n->xs_skip = false;
	n->xs_epoch++;
}

/* From set s: the list (name NULL) or name's value into buf (when it fits
 * size; *len its length): 1, or 0 when the engine must answer (a value
 * the set left out, a name it does not have). */
static int set_answer(const xa_set *s, const char *name, char *buf, size_t size, size_t *len)
{
	const void *p = s->list;

	*len = s->list_len;
	if (name) {
		size_t i;

		for (i = 0; i < s->n && strcmp(s->v[i].name, name) != 0; i++)
			;
		if (i == s->n || !s->v[i].val)
			return 0;
		p = s->v[i].val;
		*len = s->v[i].len;
	}
	if (buf && *len <= size)
		memcpy(buf, p, *len);
	return 1;
}

/* Answer from n's set, reading it first when it has none: 1 answered, 0
 * not (the engine answers: see set_answer; objects of other files than
 * FILE, whose changes the generations do not follow; errors, which the
 * engine reports again). u: what the request reads of n (node_use). */
int xattr_cached(h5fs *fs, struct node *n, const struct use *u, const char *name, char *buf, size_t size,
			  size_t *len)
{
	xa_set *s = NULL;
	unsigned epoch;
	bool kept = false, skip;
	int r, rc;

	for (int pass = 0; pass < 2; pass++) {
		pthread_rwlock_rdlock(&n->lk);
		if (n->xs && n->gen == u->g && n->addr == u->addr) {
			r = set_answer(n->xs, name, buf, size, len);
			pthread_rwlock_unlock(&n->lk);
			return r;
		}
		epoch = n->xs_epoch;
		skip = n->xs_skip;
		pthread_rwlock_unlock(&n->lk);
		if (pass || skip || !u->g || u->f != u->g->f)
			return 0;
		rc = xa_all(&s, u->f, u->addr, fs->cfg.xattr_raw, XS_VALUE_MAX, XS_NAMES_MAX);
		h5_err_clear();
		pthread_rwlock_wrlock(&n->lk);
		if (!n->xs && n->xs_epoch == epoch && n->gen == u->g && n->addr == u->addr) {
			if (rc == 0 && s->bytes <= XS_SET_MAX &&
			    __atomic_add_fetch(&xs_total, s->bytes, __ATOMIC_RELAXED) <= XS_TOTAL_MAX) {
				n->xs = s;
				kept = true;
			} else {
				if (rc == 0 && s->bytes <= XS_SET_MAX)
					__atomic_sub_fetch(&xs_total, s->bytes, __ATOMIC_RELAXED);
				/* the same next time: the engine answers each
				 * request, as without the set */
				n->xs_skip = true;
			}
		}
		pthread_rwlock_unlock(&n->lk);
		if (rc < 0)
			return 0;
		if (!kept) {
			/* changed meanwhile, or over the budget: this request only */
			r = set_answer(s, name, buf, size, len);
			xa_set_free(s);
			return r;
		}
	}
	return 0;
}
