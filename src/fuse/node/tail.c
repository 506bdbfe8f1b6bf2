/* tail.c - rows written through the mount and not committed yet, kept and
 * shown to readers from the moment the write is answered.
 *
 * Why. The kernel grows its size of a file when a direct_io WRITE is
 * answered (fuse_write_update_attr), before the appender commits the rows
 * (every 64 MiB or 1 s, at fsync and close: doc/APPEND.md). A node that
 * showed only the committed end made that size go back at the next
 * GETATTR: a mapping made in between (numpy.memmap sizes it by fstat)
 * then reached past the end of the file (SIGBUS, found by append_race.py's
 * mapping threads under ASan), and a fault there read zeros. So the node
 * shows what was accepted, as a local file system shows written bytes
 * before fsync: its size is the accepted end, and a read past the
 * committed end is answered from the bytes kept here. Descriptors of a
 * dataset that grows stay direct_io (wqueue.c wfile_reader_cached): read(2)
 * takes no page the kernel could copy past an old end, and a mapping's
 * pages are dropped by the kernel at each mmap and around each direct write
 * (FUSE_DIRECT_IO_ALLOW_MMAP, mount/initio.c).
 *
 * Bytes shown that will not be rows - a partial row dropped at close(),
 * a write that failed after it was answered - are taken back (tail_drop:
 * the size goes back; write.c drops the kernel's pages of them).
 *
 * Rows are whole: one descriptor at a time may hold a partial row
 * (write.c refuses another's append meanwhile), so the order the bytes
 * were accepted in is the order of the rows in FILE.
 *
 * All under n->lk (write to change, read to answer). Memory: what was
 * accepted since the last commit, at most the appender's commit size
 * (64 MiB) plus the writes answered early; copying costs `cat >>` about
 * a third of its time (256 MiB in 0.175-0.19 s against 0.12-0.16 s,
 * 2026-11-25). */
#include "node.h"

#include <sys/mman.h>

struct ntail {
	/* [base, base + len): accepted, not committed, kept in buf; base
	 * is the committed end */
	uint64_t base;
	char *buf;
	size_t len, cap;
};

static void buf_free(struct ntail *t)
{
	free(t->buf);
	t->buf = NULL;
	t->len = t->cap = 0;
}

static int reserve(struct ntail *t, size_t more)
{
	size_t cap = t->cap ? t->cap : 65536;
	char *nb;

	if (more > SIZE_MAX - t->len)
		return ENOMEM;
	while (cap < t->len + more)
		cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
	if (cap == t->cap)
		return 0;
	nb = realloc(t->buf, cap);
	if (!nb)
		return ENOMEM;
	h5_mem_populate(nb + t->len, cap - t->len, (size_t)1 << 20);
	t->buf = nb;
	t->cap = cap;
	return 0;
}

int tail_accept(struct node *n, const char *buf, size_t len)
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
	if (!t->len)
		t->base = (uint64_t)n->st.st_size;
	if ((e = reserve(t, len)) == 0) {
		memcpy(t->buf + t->len, buf, len);
		t->len += len;
		n->st.st_size = (off_t)(t->base + t->len);
	}
out:
	pthread_rwlock_unlock(&n->lk);
	return e;
}

void tail_committed(struct node *n, uint64_t committed)
{
	struct ntail *t = n->tail;
	uint64_t drop;

	n->st.st_size = (off_t)committed;
	if (!t || !t->len)
		return;
	drop = committed > t->base ? committed - t->base : 0;
	if (drop >= t->len) {
		buf_free(t);    /* a commit after a burst: its memory back */
	} else {
		memmove(t->buf, t->buf + drop, t->len - (size_t)drop);
		t->len -= (size_t)drop;
		n->st.st_size = (off_t)(committed + t->len);
	}
	t->base = committed;
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
		t->len -= (size_t)(len < t->len ? len : t->len);
		n->st.st_size = (off_t)(t->base + t->len);
	}
	pthread_rwlock_unlock(&n->lk);
	return was;
}

bool tail_covers(const struct node *n, uint64_t off, size_t len)
{
	const struct ntail *t = n->tail;

	return t && t->len && off + len > t->base;
}

int tail_read(h5_read_plan *out, struct node *n, uint64_t off, size_t len)
{
	const struct ntail *t = n->tail;
	size_t head = off < t->base ? (size_t)(t->base - off) : 0;
	uint8_t *b;
	int rc;

	if (off >= t->base + t->len)
		len = 0;
	else if (len > t->base + t->len - off)
		len = (size_t)(t->base + t->len - off);
	b = h5_buf_alloc(len ? len : 1);
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
