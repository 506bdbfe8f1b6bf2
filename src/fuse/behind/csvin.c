/* csvin.c - rows written as text to NAME.csv (doc/h5fs.1 VIEWS, "Rows
 * as text"): `echo 1.5,2 >> NAME.csv`. The view opened for writing is a
 * write handle of dataset NAME (member/views.c csv_over) whose writes
 * are text: each write's complete records are parsed (src/common
 * views_csv_in.c) before it is answered, and their rows go to the
 * dataset's stream as `cat rows.bin >> NAME` sends them (write.c
 * wfile_append_now: committed, crash-safe and durable as any append).
 * A record that does not parse refuses the whole write (EINVAL, nothing
 * of it appended, the reason logged). A record not ended yet waits for
 * the next write; at close it is parsed as the last one (its refusal is
 * close's EINVAL). */
#include "wstate.h"
#include "views.h"

/* a record longer than this is refused, not kept waiting for its end */
#define CSVIN_MAX_LINE (16u << 20)

struct csv_stream {
	/* one write or flush at a time: threads writing one descriptor
	 * would otherwise interleave the record kept waiting */
	pthread_mutex_t mu;
	struct vw_csv_in *p;
	h5_dataset *d;          /* the type's own handle (the node's is swapped) */
	char *buf;              /* a record not ended yet */
	size_t len, cap;
	uint64_t text;          /* text taken: where a write without O_APPEND goes */
};

void csvin_free(struct csv_stream *s)
{
	if (!s)
		return;
	vw_csv_in_free(s->p);
	h5_dataset_close(s->d);
	pthread_mutex_destroy(&s->mu);
	free(s->buf);
	free(s);
}

int csvin_open(h5fs *fs, struct wfile *w)
{
	struct csv_stream *s;
	int rc;

	if (!w->grows) {
		h5fs_log(fs, LOG_NOTICE, "open %s.csv for writing: EPERM: the dataset cannot grow (rows are appended "
			 "to a chunked dataset whose first dimension is unlimited: doc/APPEND.md)",
			 show_path(w->n->path));
		return EPERM;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return ENOMEM;
	pthread_mutex_init(&s->mu, NULL);
	rc = h5_dataset_open(&s->d, w->g->f, w->n->addr);
	if (rc == 0)
		rc = vw_csv_in_new(&s->p, s->d);
	if (rc < 0) {
		int e = rc == H5_ERR_UNSUPPORTED || rc == H5_ERR_NOTFOUND ? EPERM : h5fs_errno(rc);

		h5fs_log(fs, e == EIO ? LOG_ERR : LOG_NOTICE, "open %s.csv for writing: %s: %s", show_path(w->n->path),
			 e == EPERM ? "EPERM" : e == EIO ? "EIO" : "error", h5_err_msg());
		h5_err_clear();
		csvin_free(s);
		return e;
	}
	w->csv = s;
	return 0;
}

/* text[0, len) parsed (final: nothing follows) and its rows appended.
 * *used: the text taken. 0 or an errno (EINVAL: logged, nothing taken). */
static int take(h5fs *fs, struct wfile *w, fuse_ino_t ino, const char *text, size_t len, bool final, size_t *used)
{
	uint8_t *rows = NULL;
	size_t nbytes = 0;
	int rc, e = 0;

	rc = vw_csv_in_parse(w->csv->p, &rows, &nbytes, used, text, len, final);
	if (rc < 0) {
		e = h5fs_errno(rc);
		h5fs_log(fs, LOG_NOTICE, "write %s.csv: %s: %s%s", show_path(w->n->path),
			 e == EINVAL ? "EINVAL" : "error", h5_err_msg(), e == EINVAL ? ": nothing of the write appended" : "");
		h5_err_clear();
		return e;
	}
	if (nbytes)
		e = wfile_append_now(fs, w, ino, rows, nbytes);
	free(rows);
	return e;
}

static int write_locked(h5fs *fs, struct wfile *w, fuse_ino_t ino, const char *buf, size_t size, off_t off)
{
	struct csv_stream *s = w->csv;
	const char *text = buf;
	size_t len = size, used = 0;
	char *joined = NULL;
	int e;

	if (!w->append && (off < 0 || (uint64_t)off != s->text)) {
		h5fs_log(fs, LOG_NOTICE, "write %s.csv at %lld: EPERM: the text goes in order (the next byte is %llu)",
			 show_path(w->n->path), (long long)off, (unsigned long long)s->text);
		return EPERM;
	}
	if (s->len) {
		/* the record begun by the last write, then this one */
		joined = malloc(s->len + size);
		if (!joined)
			return ENOMEM;
		memcpy(joined, s->buf, s->len);
		memcpy(joined + s->len, buf, size);
		text = joined;
		len = s->len + size;
	}
	/* a record kept waiting is bounded: what follows the last line
	 * break is checked before anything of the write is taken (a line
	 * break inside quotes only makes that rest longer: checked after) */
	for (used = len; used > 0 && text[used - 1] != '\n'; used--)
		;
	e = len - used > CSVIN_MAX_LINE ? EINVAL : 0;
	if (!e)
		e = take(fs, w, ino, text, len, false, &used);
	if (!e && len - used > CSVIN_MAX_LINE)
		e = EINVAL;
	if (e == EINVAL && len - used > CSVIN_MAX_LINE)
		h5fs_log(fs, LOG_NOTICE, "write %s.csv: EINVAL: a line of more than %u bytes", show_path(w->n->path),
			 CSVIN_MAX_LINE);
	if (!e) {
		size_t rest = len - used;

		if (rest > s->cap) {
			char *nb = realloc(s->buf, rest);

			if (!nb) {
				e = ENOMEM;
				goto out;
			}
			s->buf = nb;
			s->cap = rest;
		}
		if (rest)
			memmove(s->buf, text + used, rest);
		s->len = rest;
		s->text += size;
	}
out:
	free(joined);
	return e;
}

int csvin_write(h5fs *fs, struct wfile *w, fuse_ino_t ino, const char *buf, size_t size, off_t off)
{
	int e;

	pthread_mutex_lock(&w->csv->mu);
	e = write_locked(fs, w, ino, buf, size, off);
	pthread_mutex_unlock(&w->csv->mu);
	return e;
}

int csvin_flush(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	struct csv_stream *s = w->csv;
	size_t used = 0;
	int e = 0;

	pthread_mutex_lock(&s->mu);
	if (s->len) {
		e = take(fs, w, ino, s->buf, s->len, true, &used);
		/* taken or refused, the record is done: close told which */
		s->len = 0;
	}
	pthread_mutex_unlock(&s->mu);
	return e;
}
