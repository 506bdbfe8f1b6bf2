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
 * committed end is answered from the bytes kept here. Read-only and
 * write-only descriptors of a dataset that grows stay direct_io (wqueue.c
 * wfile_reader_cached; O_RDWR ones use the cache, wq_attach): read(2)
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
 * What is kept. Only the bytes of the trailing partial row: whole rows
 * are in the appender (staged in FILE or in its staging buffer), and a
 * read that reaches them has them committed first (tail_read answers 1,
 * read.c then commits through a write handle: wclose.c wfile_show_node,
 * the engine's h5_append_show, the same ordered commit as every other)
 * and reads them from the dataset. Copying every accepted byte here for
 * the rare reader was half the daemon's CPU of a `cp` into a group (perf:
 * tail_accept's memcpy 44%, issue 44; bench/README.md).
 *
 * All under n->lk (write to change, read to answer). Memory: one row at
 * most, in the node (fs.h struct ntail: node.c frees it with the node). */
#include "tail.h"


/* The partial row after accepting buf: what it held plus buf, or buf's
 * own last partial row once a row ends inside buf. */
static int part_take(struct ntail *t, const char *buf, size_t len)
{
	uint64_t end = t->base + t->len + len;
	size_t keep = (size_t)(end % t->rb), from = 0;
	char *np;

	if (keep > t->plen + len)      /* (the kept row was lost: tail_drop) */
		keep = 0;
	if (keep < t->plen + len) {
		/* a row ended inside buf: the new partial row is its tail */
		t->plen = 0;
		from = len - keep;
	}
	if (t->plen + (len - from) > t->pcap) {
		size_t cap = t->pcap ? t->pcap : 256;

		while (cap < t->plen + (len - from))
			cap *= 2;
		np = realloc(t->part, cap);
		if (!np)
			return ENOMEM;
		t->part = np;
		t->pcap = cap;
	}
	if (len > from) {       /* (part stays NULL while nothing is kept) */
		memcpy(t->part + t->plen, buf + from, len - from);
		t->plen += len - from;
	}
	return 0;
}

int tail_accept(struct node *n, const char *buf, size_t len, uint64_t rb)
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
	if (!t->len) {
		t->base = (uint64_t)n->st.st_size;
		t->plen = 0;
	}
	t->rb = rb ? rb : 1;
	if ((e = part_take(t, buf, len)) == 0) {
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
		t->len = t->plen = 0;
	} else {
		t->len -= drop;
		if (t->plen > t->len)   /* (never: commits are of whole rows) */
			t->plen = (size_t)t->len;
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
		uint64_t d = len < t->len ? len : t->len;

		t->len -= d;
		/* a dropped partial row, or everything: what stays kept is
		 * the partial row's beginning, if any */
		t->plen = d <= t->plen ? t->plen - (size_t)d : 0;
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
	uint64_t pstart = t->base + t->len - t->plen;
	size_t head = off < t->base ? (size_t)(t->base - off) : 0;
	uint8_t *b;
	int rc;

	if (off >= t->base + t->len)
		len = 0;
	else if (len > t->base + t->len - off)
		len = (size_t)(t->base + t->len - off);
	if (head > len)
		head = len;
	/* whole rows not committed in the window: committed first (read.c) */
	if (len > head && pstart > t->base && off + head < pstart)
		return 1;
	b = h5_buf_alloc(len ? len : 1);
	if (!b)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (head && (rc = n->view->read(n->ds, b, off, head)) < 0) {
		h5_buf_free(b);
		return rc;
	}
	if (len > head)
		memcpy(b + head, t->part + (off + head - pstart), len - head);
	out->kind = H5_PLAN_BUFFER;
	out->buf = b;
	out->len = len;
	return 0;
}
