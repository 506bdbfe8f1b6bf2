/* tail.c - rows written through the mount and not committed yet, shown to
 * readers through the page cache (memmap of a dataset that grows).
 *
 * Why. A dataset that can grow is read through the kernel's page cache
 * (numpy.memmap needs it: a direct_io descriptor cannot be mapped with
 * Debian's libfuse). An append must then reach the cache before the
 * kernel's size of the file grows: a read(2) takes a cached page, then
 * the size, and copies the page up to that size - a page holding the old
 * end, filled with zeros after it, copied after the size grew shows zeros
 * inside the file (tests/stress/append_race.py under TSan found it, even
 * with the page dropped as each append was accepted: the reader held it
 * already). A local file system writes into the page before it moves the
 * size; so does FUSE for a descriptor that writes through the page cache
 * (fuse_perform_write: the bytes copied into the pages, the WRITE sent,
 * then the size). Neither a switch between the two while mounted nor
 * every writer through the cache kept append_race.py from reading zeros
 * under ASan (CI, 2026-11-25). So today no descriptor of a dataset that
 * grows uses the page cache (wqueue.c wfile_reader_cached): its writers'
 * accepted bytes are only counted below (the hole), and a mapping of it
 * fails with ENODEV. The kept-bytes path stays for page-cached writers.
 *
 * What is kept here. The bytes of a page-cached writer's accepted writes,
 * in order, until committed: the kernel reads from us a page it holds
 * only in part (a write that did not fill it), and those bytes must be in
 * the answer. The node's size is then the accepted end, as the kernel's
 * is. A writer bypassing the cache keeps nothing (copying every byte
 * would cost `cat >>` about a fifth: 256 MiB in 0.17-0.19 s against
 * 0.14-0.15 s): its accepted bytes are only counted (the hole), and the
 * node shows the committed end until they are committed, as before.
 *
 * Rows are whole: one descriptor at a time may hold a partial row
 * (write.c refuses another's append meanwhile), so the order the bytes
 * were accepted in is the order of the rows in FILE.
 *
 * All under n->lk (write to change, read to answer). Memory: what was
 * accepted since the last commit, at most the appender's commit size
 * (64 MiB, doc/APPEND.md) plus the writes answered early. */
#include "member.h"

struct ntail {
	/* [base, base + hole + len): accepted, not committed; base is the
	 * committed end. hole: bytes of writers bypassing the cache, not
	 * kept; buf[0..len): a page-cached writer's (never both at once) */
	uint64_t base, hole;
	char *buf;
	size_t len, cap;
};

static uint64_t waiting(const struct ntail *t)
{
	return t ? t->hole + t->len : 0;
}

static void buf_free(struct ntail *t)
{
	free(t->buf);
	t->buf = NULL;
	t->len = t->cap = 0;
}

/* The size shown: the accepted end when every accepted byte is kept,
 * else the committed one (under n->lk, write) */
static void size_set(struct node *n)
{
	const struct ntail *t = n->tail;

	if (waiting(t))
		n->st.st_size = (off_t)(t->base + (t->hole ? 0 : t->len));
}

static int reserve(struct ntail *t, size_t more)
{
	size_t cap = t->cap ? t->cap : 65536;
	char *nb;

	if (t->cap - t->len >= more)
		return 0;
	while (cap - t->len < more)
		cap *= 2;
	nb = realloc(t->buf, cap);
	if (!nb)
		return ENOMEM;
	t->buf = nb;
	t->cap = cap;
	return 0;
}

int tail_accept(struct node *n, const char *buf, size_t len, bool keep)
{
	struct ntail *t;
	int e = 0;

	pthread_rwlock_wrlock(&n->lk);
	if (!n->tail)
		n->tail = calloc(1, sizeof(*n->tail));
	t = n->tail;
	if (!t) {
		e = ENOMEM;
		goto out;
	}
	if (!waiting(t))
		t->base = (uint64_t)n->st.st_size;
	if (!keep) {
		t->hole += len;
	} else if ((e = reserve(t, len)) == 0) {
		memcpy(t->buf + t->len, buf, len);
		t->len += len;
	}
	size_set(n);
out:
	pthread_rwlock_unlock(&n->lk);
	return e;
}

void tail_committed(struct node *n, uint64_t committed)
{
	struct ntail *t = n->tail;
	uint64_t drop;

	n->st.st_size = (off_t)committed;
	if (!waiting(t))
		return;
	drop = committed > t->base ? committed - t->base : 0;
	if (drop >= waiting(t)) {
		t->hole = 0;
		buf_free(t);    /* a commit after a burst: its memory back */
	} else if (drop <= t->hole) {
		t->hole -= drop;
	} else {
		drop -= t->hole;
		t->hole = 0;
		memmove(t->buf, t->buf + drop, t->len - (size_t)drop);
		t->len -= (size_t)drop;
	}
	t->base = committed;
	size_set(n);
}

uint64_t tail_base(const struct node *n)
{
	const struct ntail *t = n->tail;

	return waiting(t) ? t->base : (uint64_t)n->st.st_size;
}

uint64_t tail_drop(struct node *n, uint64_t len)
{
	struct ntail *t;
	uint64_t was;

	pthread_rwlock_wrlock(&n->lk);
	t = n->tail;
	was = (uint64_t)n->st.st_size;
	if (waiting(t)) {
		uint64_t b = len < t->len ? len : t->len;

		t->len -= (size_t)b;
		len -= b;
		t->hole -= len < t->hole ? len : t->hole;
		n->st.st_size = (off_t)t->base;
		size_set(n);
	}
	pthread_rwlock_unlock(&n->lk);
	return was;
}

bool tail_covers(const struct node *n, uint64_t off, size_t len)
{
	const struct ntail *t = n->tail;

	return t && t->len && !t->hole && off + len > t->base;
}

int tail_read(h5_read_plan *out, struct node *n, uint64_t off, size_t len)
{
	const struct ntail *t = n->tail;
	size_t head = off < t->base ? (size_t)(t->base - off) : 0;
	uint8_t *b = h5_buf_alloc(len ? len : 1);
	int rc;

	if (!b)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (head > len)
		head = len;
	if (head && (rc = n->view->read(n->ds, b, off, head)) < 0) {
		h5_buf_free(b);
		return rc;
	}
	if (len > head)
		memcpy(b + head, t->buf + (off + head - t->base), len - head);
	out->kind = H5_PLAN_BUFFER;
	out->buf = b;
	out->len = len;
	return 0;
}

void tail_free(struct node *n)
{
	if (!n->tail)
		return;
	free(n->tail->buf);
	free(n->tail);
	n->tail = NULL;
}
