/* tail.c - rows written through the mount and not committed yet, shown to
 * readers through the page cache (memmap of a dataset that grows).
 *
 * Why. A dataset that can grow is read through the kernel's page cache
 * (numpy.memmap needs it: a direct_io descriptor cannot be mapped with
 * Debian's libfuse). Its writers are direct_io (member/write.c): the
 * kernel extends the file's size when it gets a WRITE's answer, and
 * write-behind answers before the bytes are applied, let alone committed.
 * Two ways the cache could then show zeros inside the new size:
 *  1. a page holding the old end, cached with zeros after it (the kernel
 *     fills a page past the end of the file with zeros);
 *  2. a read answered short (at the old end) whose page the kernel fills
 *     in after the size grew.
 * So the bytes of every accepted write are kept here, in order, until
 * committed: a read that reaches past the committed end is answered from
 * them (never short inside what was accepted), the node's size is the
 * accepted end, and after accepting, before answering the WRITE, the
 * pages from the old accepted end on are dropped
 * (fuse_lowlevel_notify_inval_inode). That drop waits for pages the kernel
 * holds locked for reads in flight, whose answers (made before the
 * acceptance) it then drops too; a read asked after the acceptance sees
 * the new bytes. Nothing it waits for waits on the WRITE: READ handlers
 * take only n->lk (released before the drop), and while a handle that
 * bypasses the cache appends, no page-cached writer is open (write.c).
 *
 * Kept only once the node has a page-cached descriptor: a copy of every
 * byte costs `cat >>` about a fifth of its speed (256 MiB: 0.17-0.19 s
 * against 0.14-0.15 s), for readers that may never come. Before that the
 * accepted bytes are only counted (the hole). The first page-cached
 * descriptor first commits them (write.c wfile_tail_catch_up) and fills
 * in what a commit cannot take (a partial row) from the appender; until
 * the hole is gone it is not handed out (it bypasses the cache then).
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
	 * committed end; the first hole bytes were not kept (copy off then),
	 * the rest are buf[0..len) */
	uint64_t base, hole;
	char *buf;
	size_t len, cap;
	bool copy;              /* accepted bytes are kept */
	bool paged;             /* handed out page-cached descriptors: drop pages */
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

/* n's tail, made (with nothing waiting) when missing; under n->lk (write) */
static struct ntail *tail_of(struct node *n)
{
	if (!n->tail)
		n->tail = calloc(1, sizeof(*n->tail));
	return n->tail;
}

static void size_set(struct node *n)
{
	const struct ntail *t = n->tail;

	if (waiting(t))
		n->st.st_size = (off_t)(t->base + waiting(t));
}

uint64_t tail_begin(struct node *n)
{
	uint64_t hole = 0;
	struct ntail *t;

	pthread_rwlock_wrlock(&n->lk);
	t = tail_of(n);
	if (t) {
		t->copy = true;
		hole = t->hole;
	}
	pthread_rwlock_unlock(&n->lk);
	return t ? hole : UINT64_MAX;
}

uint64_t tail_hole(struct node *n)
{
	uint64_t h;

	pthread_rwlock_rdlock(&n->lk);
	h = n->tail ? n->tail->hole : 0;
	pthread_rwlock_unlock(&n->lk);
	return h;
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

int tail_fill(struct node *n, const uint8_t *bytes, uint64_t len)
{
	struct ntail *t;
	int e = 0;

	pthread_rwlock_wrlock(&n->lk);
	t = n->tail;
	if (!t || t->hole != len || (e = reserve(t, (size_t)len)) != 0)
		goto out;
	memmove(t->buf + len, t->buf, t->len);
	memcpy(t->buf, bytes, (size_t)len);
	t->len += (size_t)len;
	t->hole = 0;
out:
	pthread_rwlock_unlock(&n->lk);
	return e;
}

void tail_set_paged(struct node *n)
{
	pthread_rwlock_wrlock(&n->lk);
	if (n->tail)
		n->tail->paged = true;
	pthread_rwlock_unlock(&n->lk);
}

bool tail_paged(struct node *n)
{
	bool p;

	pthread_rwlock_rdlock(&n->lk);
	p = n->tail && n->tail->paged;
	pthread_rwlock_unlock(&n->lk);
	return p;
}

int tail_accept(uint64_t *from, struct node *n, const char *buf, size_t len)
{
	struct ntail *t;
	int e = 0;

	pthread_rwlock_wrlock(&n->lk);
	t = tail_of(n);
	if (!t) {
		e = ENOMEM;
		goto out;
	}
	if (!waiting(t))
		t->base = (uint64_t)n->st.st_size;
	*from = t->base + waiting(t);
	if (!t->copy) {
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
		n->st.st_size = (off_t)(t->base + waiting(t));
	}
	pthread_rwlock_unlock(&n->lk);
	return was;
}

bool tail_covers(const struct node *n, uint64_t off, size_t len)
{
	const struct ntail *t = n->tail;

	return waiting(t) && off + len > t->base;
}

int tail_read(h5_read_plan *out, struct node *n, uint64_t off, size_t len)
{
	const struct ntail *t = n->tail;
	uint64_t kept = t->base + t->hole;     /* where the kept bytes begin */
	size_t head = off < t->base ? (size_t)(t->base - off) : 0;
	uint8_t *b;
	int rc;

	if (head > len)
		head = len;
	/* bytes in the hole cannot be read: the answer ends where it starts
	 * (only descriptors bypassing the cache read while there is one) */
	if (t->hole && off + len > t->base)
		len = head;
	b = h5_buf_alloc(len ? len : 1);
	if (!b)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (head && (rc = n->view->read(n->ds, b, off, head)) < 0) {
		h5_buf_free(b);
		return rc;
	}
	if (len > head)
		memcpy(b + head, t->buf + (off + head - kept), len - head);
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
