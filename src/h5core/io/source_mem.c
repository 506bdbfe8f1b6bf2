/* source_mem.c - a caller-owned memory image as a read-only byte source
 * (fuzzing, tests). */
#include "source.h"
#include "base.h"

#include <stdlib.h>
#include <string.h>

typedef struct mem_source {
	h5_source base;
	const uint8_t *p;
} mem_source;

static int mem_read(h5_source *s, uint64_t off, void *buf, size_t len)
{
	mem_source *m = (mem_source *)s;
	uint64_t end;

	if (h5_add_overflow(off, len, &end) || end > s->size)
		return h5_err_set(H5_ERR_FORMAT, "unexpected end of file at 0x%llx", (unsigned long long)s->size);
	memcpy(buf, m->p + off, len);
	return 0;
}

static int mem_size(h5_source *s, uint64_t *out)
{
	*out = s->size;
	return 0;
}

static int mem_fd(const h5_source *s)
{
	(void)s;
	return -1;
}

static void mem_close(h5_source *s)
{
	free(s);
}

static const h5_source_ops mem_ops = {
	.name = "memory",
	.read = mem_read,
	.size = mem_size,
	.fd = mem_fd,
	.close = mem_close,
};

int h5_source_open_mem(h5_source **out, const void *buf, size_t len)
{
	mem_source *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	m->base.ops = &mem_ops;
	m->base.size = len;
	m->p = buf;
	*out = &m->base;
	return 0;
}
