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
 * take only n->lk (released before the drop), and a dataset that can grow
 * has no page-cached writer (member/write.c wfile_open).
 *
 * Rows are whole: one descriptor at a time may hold a partial row
 * (member/write.c refuses another's append meanwhile), so the order the
 * bytes were accepted in is the order of the rows in FILE.
 *
 * All under n->lk (write to change, read to answer). Memory: what was
 * accepted since the last commit, at most the appender's commit size
 * (64 MiB, doc/APPEND.md) plus the writes answered early. */
#include "member.h"

struct ntail {
	uint64_t base;          /* dataset offset of buf[0]: the committed end */
	char *buf;
	size_t len, cap;
	bool paged;             /* a read handle of the node may have pages cached */
};

/* The accepted end, or committed when nothing waits (under n->lk) */
static uint64_t tail_end(const struct node *n, uint64_t committed)
{
	const struct ntail *t = n->tail;

	return t && t->base + t->len > committed ? t->base + t->len : committed;
}

void tail_mark_paged(struct node *n)
{
	pthread_rwlock_wrlock(&n->lk);
	if (!n->tail)
		n->tail = calloc(1, sizeof(*n->tail));
	if (n->tail)
		n->tail->paged = true;
	pthread_rwlock_unlock(&n->lk);
}

int tail_accept(uint64_t *from, struct node *n, const char *buf, size_t len)
{
	struct ntail *t;
	int e = 0;

	pthread_rwlock_wrlock(&n->lk);
	t = n->tail;
	if (!t) {
		t = n->tail = calloc(1, sizeof(*t));
		if (!t) {
			e = ENOMEM;
			goto out;
		}
	}
	if (t->len == 0)
		t->base = (uint64_t)n->st.st_size;
	if (t->cap - t->len < len) {
		size_t cap = t->cap ? t->cap : 65536;
		char *nb;

		while (cap - t->len < len)
			cap *= 2;
		nb = realloc(t->buf, cap);
		if (!nb) {
			e = ENOMEM;
			goto out;
		}
		t->buf = nb;
		t->cap = cap;
	}
	*from = t->base + t->len;
	memcpy(t->buf + t->len, buf, len);
	t->len += len;
	n->st.st_size = (off_t)(t->base + t->len);
out:
	pthread_rwlock_unlock(&n->lk);
	return e;
}

void tail_committed(struct node *n, uint64_t committed)
{
	struct ntail *t = n->tail;

	if (t && t->len) {
		uint64_t drop = committed > t->base ? committed - t->base : 0;

		if (drop >= t->len) {
			t->len = 0;
			/* a commit after a burst: give its memory back */
			free(t->buf);
			t->buf = NULL;
			t->cap = 0;
		} else if (drop) {
			memmove(t->buf, t->buf + drop, t->len - (size_t)drop);
			t->len -= (size_t)drop;
			t->base = committed;
		}
	}
	n->st.st_size = (off_t)tail_end(n, committed);
}

uint64_t tail_base(const struct node *n)
{
	const struct ntail *t = n->tail;

	return t && t->len ? t->base : (uint64_t)n->st.st_size;
}

uint64_t tail_drop(struct node *n, uint64_t len)
{
	struct ntail *t;
	uint64_t was;

	pthread_rwlock_wrlock(&n->lk);
	t = n->tail;
	was = (uint64_t)n->st.st_size;
	if (t && t->len) {
		t->len -= len < t->len ? (size_t)len : t->len;
		n->st.st_size = (off_t)(t->base + t->len);
	}
	pthread_rwlock_unlock(&n->lk);
	return was;
}

bool tail_paged(struct node *n)
{
	bool p;

	pthread_rwlock_rdlock(&n->lk);
	p = n->tail && n->tail->paged;
	pthread_rwlock_unlock(&n->lk);
	return p;
}

bool tail_covers(const struct node *n, uint64_t off, size_t len)
{
	const struct ntail *t = n->tail;

	return t && t->len && off + len > t->base;
}

int tail_read(h5_read_plan *out, struct node *n, uint64_t off, size_t len)
{
	const struct ntail *t = n->tail;
	uint8_t *b = h5_buf_alloc(len ? len : 1);
	size_t head = off < t->base ? (size_t)(t->base - off) : 0;
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
