/* source_trace.c - a byte source that wraps another and records every
 * write and sync the engine issues (for crash-state tests: the recorded
 * writes replayed in part give the files a crash could leave), and can make
 * the Nth write or sync fail (error-path tests). Reads pass through.
 *
 * Log format (little-endian): per write 'W', u64 offset, u64 length, the
 * bytes; per sync 'S'; per size change 'T', u64 new size, u64 0 (a crash
 * image must know FILE's length: libhdf5 refuses a file shorter than its
 * end of allocated space). A punched hole is logged as a write of zeros
 * (what it reads as after: a replay needs no tag of its own). */
#include "base.h"
#include "source.h"
#include "rd.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct trace_source {
	h5_source base;
	h5_source *inner;
	FILE *log;
	uint64_t count;         /* writes and syncs seen */
	uint64_t fail_at;
	int fail_code;
	pthread_mutex_t lock;
} trace_source;

/* Count one write/sync; the failing one is not passed on. */
static int trace_step(trace_source *t, const char *what)
{
	uint64_t n;

	pthread_mutex_lock(&t->lock);
	n = ++t->count;
	pthread_mutex_unlock(&t->lock);
	if (t->fail_at && n == t->fail_at)
		return h5_err_set(t->fail_code, "%s %llu: failed on purpose (I/O trace)", what, (unsigned long long)n);
	return 0;
}

static int trace_log(trace_source *t, char tag, uint64_t off, const void *buf, size_t len)
{
	uint8_t hdr[17];
	int ok = 1;

	if (!t->log)
		return 0;
	hdr[0] = (uint8_t)tag;
	h5_le_encode(hdr + 1, off, 8);
	h5_le_encode(hdr + 9, len, 8);
	pthread_mutex_lock(&t->lock);
	if (tag == 'S')
		ok = fwrite(hdr, 1, 1, t->log) == 1;
	else
		ok = fwrite(hdr, 1, 17, t->log) == 17 && (len == 0 || fwrite(buf, 1, len, t->log) == len);
	ok = ok && fflush(t->log) == 0;
	pthread_mutex_unlock(&t->lock);
	return ok ? 0 : h5_err_set(H5_ERR_IO, "I/O trace: %s", strerror(errno));
}

static int trace_read(h5_source *s, uint64_t off, void *buf, size_t len)
{
	trace_source *t = (trace_source *)s;

	return t->inner->ops->read(t->inner, off, buf, len);
}

static int trace_write(h5_source *s, uint64_t off, const void *buf, size_t len)
{
	trace_source *t = (trace_source *)s;
	int rc;

	if ((rc = trace_step(t, "write")) < 0)
		return rc;
	if ((rc = t->inner->ops->write(t->inner, off, buf, len)) < 0)
		return rc;
	return trace_log(t, 'W', off, buf, len);
}

static int trace_sync(h5_source *s)
{
	trace_source *t = (trace_source *)s;
	int rc;

	if ((rc = trace_step(t, "sync")) < 0)
		return rc;
	if (t->inner->ops->sync && (rc = t->inner->ops->sync(t->inner)) < 0)
		return rc;
	return trace_log(t, 'S', 0, NULL, 0);
}

static void trace_sync_hint(h5_source *s, uint64_t off, uint64_t len)
{
	trace_source *t = (trace_source *)s;

	if (t->inner->ops->sync_hint)
		t->inner->ops->sync_hint(t->inner, off, len);
}

static int trace_truncate(h5_source *s, uint64_t size)
{
	trace_source *t = (trace_source *)s;
	int rc = t->inner->ops->truncate(t->inner, size);

	return rc < 0 ? rc : trace_log(t, 'T', size, NULL, 0);
}

/* Space allocated ahead (h5_file_reserve): a size change when it extends
 * the object (the inner source's allocate, else its truncate). */
static int trace_allocate(h5_source *s, uint64_t off, uint64_t len)
{
	trace_source *t = (trace_source *)s;
	uint64_t size = 0, end = off + len;
	int rc = t->inner->ops->size(t->inner, &size);

	if (rc < 0 || end <= size)
		return rc;
	rc = t->inner->ops->allocate ? t->inner->ops->allocate(t->inner, off, len) : t->inner->ops->truncate(t->inner, end);
	return rc < 0 ? rc : trace_log(t, 'T', end, NULL, 0);
}

static int trace_punch(h5_source *s, uint64_t off, uint64_t len)
{
	trace_source *t = (trace_source *)s;
	uint8_t *zero;
	int rc;

	if (!t->inner->ops->punch)
		return h5_err_set(H5_ERR_UNSUPPORTED, "no hole punching");
	if ((rc = trace_step(t, "punch")) < 0)
		return rc;
	if ((rc = t->inner->ops->punch(t->inner, off, len)) < 0)
		return rc;
	if (!t->log)
		return 0;
	if (len > SIZE_MAX || !(zero = calloc(1, len ? (size_t)len : 1)))
		return h5_err_set(H5_ERR_NOMEM, "I/O trace: out of memory");
	rc = trace_log(t, 'W', off, zero, (size_t)len);
	free(zero);
	return rc;
}

static int trace_size(h5_source *s, uint64_t *out)
{
	trace_source *t = (trace_source *)s;

	return t->inner->ops->size(t->inner, out);
}

/* No descriptor: every read goes through here (and splicing would bypass
 * a test's view of the file anyway). */
static int trace_fd(const h5_source *s)
{
	(void)s;
	return -1;
}

static void trace_close(h5_source *s)
{
	trace_source *t = (trace_source *)s;

	h5_source_close(t->inner);
	if (t->log)
		fclose(t->log);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static int trace_lock(h5_source *s, int on)
{
	trace_source *t = (trace_source *)s;

	return t->inner->ops->lock ? t->inner->ops->lock(t->inner, on) : 0;
}

static const h5_source_ops trace_ops = {
	.name = "trace",
	.read = trace_read,
	.write = trace_write,
	.sync = trace_sync,
	.sync_hint = trace_sync_hint,
	.truncate = trace_truncate,
	.allocate = trace_allocate,
	.punch = trace_punch,
	.size = trace_size,
	.fd = trace_fd,
	.close = trace_close,
	.lock = trace_lock,
};

static const h5_source_ops trace_ro_ops = {
	.name = "trace",
	.read = trace_read,
	.size = trace_size,
	.fd = trace_fd,
	.close = trace_close,
};

int h5_source_trace(h5_source **out, h5_source *inner, const h5_trace_opts *o)
{
	trace_source *t;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t) {
		h5_source_close(inner);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	t->base = *inner;       /* size, mtime, writable */
	t->base.ops = inner->ops->write ? &trace_ops : &trace_ro_ops;
	t->inner = inner;
	t->fail_at = o ? o->fail_at : 0;
	t->fail_code = o && o->fail_code ? o->fail_code : H5_ERR_IO;
	pthread_mutex_init(&t->lock, NULL);
	if (o && o->log_path) {
		t->log = fopen(o->log_path, "wbe");
		if (!t->log) {
			int e = errno;

			trace_close(&t->base);
			return h5_err_set(H5_ERR_IO, "%s: %s", o->log_path, strerror(e));
		}
	}
	*out = &t->base;
	return 0;
}

uint64_t h5_source_trace_count(const h5_source *s)
{
	return s->ops == &trace_ops || s->ops == &trace_ro_ops ? ((const trace_source *)s)->count : 0;
}
