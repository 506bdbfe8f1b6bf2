/* plan.c - the read plan (h5core.h h5_dataset_map): a window of a dataset
 * cut into typed pieces by its layout's map op (layout_ops.h), in one
 * pass, then answered as one kind a reply can carry - pieces of files to
 * splice, pinned engine memory, or a buffer the pieces are copied, read
 * or filled into. Nothing here fails to find out whether something else
 * would work: a layout says "read it" (b->read), and errors are real. */
#include "layout_ops.h"
#include "cidx.h" /* filtered: whether a local FILE pins */

#include <stddef.h>

bool h5_plan_add(h5_plan_build *b, const h5_piece *p)
{
	if (b->n == H5_PIECE_MAX) {
		b->read = true;
		return false;
	}
	b->pc[b->n++] = *p;
	return true;
}

/* Whether q continues p (same kind, next bytes of the same place). */
static bool piece_joins(const h5_piece *p, const h5_piece *q)
{
	if (p->kind != q->kind || p->ds + p->len != q->ds)
		return false;
	switch (p->kind) {
	case H5_PIECE_EXTENT:
		return p->f == q->f && p->addr + p->len == q->addr;
	case H5_PIECE_PINNED:
		return p->mem + p->len == q->mem;
	default:
		return true;
	}
}

/* Sort by dataset offset (chunk order is not the stream's when a window
 * spans several chunks of a row; few pieces, mostly in order), check
 * that they tile the window, merge neighbours. */
static int plan_tidy(h5_plan_build *b)
{
	uint64_t pos = b->off;
	size_t k = 0;

	for (size_t i = 1; i < b->n; i++) {
		h5_piece pk = b->pc[i];
		size_t j = i;

		for (; j > 0 && b->pc[j - 1].ds > pk.ds; j--)
			b->pc[j] = b->pc[j - 1];
		b->pc[j] = pk;
	}
	for (size_t i = 0; i < b->n; i++) {
		if (b->pc[i].ds != pos)
			goto bad;
		pos += b->pc[i].len;
		if (k > 0 && piece_joins(&b->pc[k - 1], &b->pc[i]))
			b->pc[k - 1].len += b->pc[i].len;
		else
			b->pc[k++] = b->pc[i];
	}
	if (pos != b->off + b->len)
		goto bad;
	b->n = k;
	return 0;
bad:
	b->n = 0;
	if (b->overlap_reads) {
		b->read = true;
		return 0;
	}
	return h5_err_set(H5_ERR_FORMAT, "map of [%llu, +%zu) has a gap or overlap at %llu", (unsigned long long)b->off,
			  b->len, (unsigned long long)pos);
}

int h5_plan_cut(h5_plan_build *b, h5_dataset *d, uint64_t off, size_t len, h5_pin *pin, unsigned flags)
{
	int rc;

	memset(b, 0, offsetof(h5_plan_build, pc));
	b->n = 0;
	b->read = false;
	b->overlap_reads = false;
	b->d = d;
	b->off = off;
	b->len = len;
	b->flags = flags;
	b->pin = pin;
	rc = d->lops->map(b);
	if (rc < 0 || b->read)
		return rc;
	return plan_tidy(b);
}

/* The pieces as extents of descriptors, when every one has one. */
static bool plan_extents(h5_read_plan *out, const h5_plan_build *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->pc[i].kind != H5_PIECE_EXTENT || h5_file_fd(b->pc[i].f) < 0)
			return false;
	for (size_t i = 0; i < b->n; i++) {
		out->ext[i].file_off = b->pc[i].f->base + b->pc[i].addr;
		out->ext[i].len = b->pc[i].len;
		out->ext[i].fd = h5_file_fd(b->pc[i].f);
	}
	out->next = b->n;
	out->kind = H5_PLAN_EXTENTS;
	return true;
}

/* The pieces as pinned memory: decoded chunks (held already) and blocks
 * of FILE's byte source (pinned now; a source without a descriptor).
 * 1: done; 0: not all pinnable (nothing more held); or an error. */
static int plan_pins(h5_read_plan *out, const h5_plan_build *b)
{
	h5_file *f = b->d->f;
	h5_source *src = f->src;
	h5_pin *p = &out->pin;
	size_t niov = 0;
	int rc = 0;

	for (size_t i = 0; i < b->n; i++) {
		const h5_piece *pc = &b->pc[i];

		if (pc->kind == H5_PIECE_FILL)
			return 0;
		if (pc->kind == H5_PIECE_EXTENT && (pc->f != f || h5_file_fd(f) >= 0 || !src->ops->pin))
			return 0;
	}
	p->src = src;
	for (size_t i = 0; i < b->n && rc == 0; i++) {
		const h5_piece *pc = &b->pc[i];
		size_t k = 0;

		if (niov == H5_PIN_MAX) {
			rc = H5_ERR_LIMIT;
			break;
		}
		if (pc->kind == H5_PIECE_PINNED) {
			p->iov[niov].iov_base = (void *)(uintptr_t)pc->mem;
			p->iov[niov++].iov_len = (size_t)pc->len;
			continue;
		}
		/* b->n <= H5_PIN_MAX: one hold each fits src_held */
		rc = src->ops->pin(src, f->base + pc->addr, (size_t)pc->len, p->iov + niov, H5_PIN_MAX - niov, &k,
				   &p->src_held[p->nsrc_held]);
		if (rc == 0) {
			p->nsrc_held++;
			niov += k;
		}
	}
	/* H5_ERR_LIMIT: the source holds enough pinned already, or the
	 * blocks are more pieces than a reply carries - the source's way of
	 * saying "read it" (source.h) */
	if (rc == H5_ERR_LIMIT) {
		h5_err_clear();
		for (size_t i = 0; i < p->nsrc_held; i++)
			src->ops->unpin(src, p->src_held[i]);
		p->nsrc_held = 0;
		return 0;
	}
	if (rc < 0)
		return rc;
	p->niov = niov;
	out->kind = H5_PLAN_PINNED;
	return 1;
}

/* The pieces copied, read and filled into a buffer. */
static int plan_copy(uint8_t *buf, const h5_plan_build *b)
{
	for (size_t i = 0; i < b->n; i++) {
		const h5_piece *pc = &b->pc[i];
		uint8_t *to = buf + (pc->ds - b->off);
		int rc;

		switch (pc->kind) {
		case H5_PIECE_EXTENT:
			rc = h5_file_read(pc->f, pc->addr, to, (size_t)pc->len);
			if (rc < 0)
				return rc;
			break;
		case H5_PIECE_PINNED:
			memcpy(to, pc->mem, (size_t)pc->len);
			break;
		default:
			h5_dataset_fill(b->d, to, pc->ds, (size_t)pc->len);
			break;
		}
	}
	return 0;
}

void h5_plan_init(h5_read_plan *out, h5_dataset *d)
{
	out->kind = H5_PLAN_EMPTY;
	out->next = 0;
	out->buf = NULL;
	out->len = 0;
	out->pin.niov = 0;
	out->pin.nheld = 0;
	out->pin.nsrc_held = 0;
	out->pin.cache = d->f->chunks;
	out->pin.src = NULL;
}

uint8_t *h5_plan_buffer(h5_read_plan *out, size_t len)
{
	out->buf = h5_buf_alloc(len);
	if (!out->buf)
		return NULL;
	out->len = len;
	out->kind = H5_PLAN_BUFFER;
	return out->buf;
}

int h5_plan_map_raw(h5_read_plan *out, h5_dataset *d, uint64_t off, size_t len, unsigned flags)
{
	h5_plan_build *b = NULL;
	uint64_t end;
	int rc = 0;

	h5_plan_init(out, d);
	if (h5_add_overflow(off, len, &end) || end > d->nbytes)
		return h5_err_set(H5_ERR_INVAL, "window of %zu bytes at %llu is past the end of the dataset", len,
				  (unsigned long long)off);
	if (len == 0)
		return 0;
	b = malloc(sizeof(*b));
	if (!b)
		return h5_err_set(H5_ERR_NOMEM, "out of memory planning a read");
	rc = h5_plan_cut(b, d, off, len, &out->pin, flags);
	if (rc < 0)
		goto out;
	if (!b->read && !(flags & H5_MAP_NO_SPLICE) && plan_extents(out, b)) {
		h5_pin_release(&out->pin);  /* none held: every piece is of a file */
		goto out;
	}
	if (!b->read) {
		rc = plan_pins(out, b);
		if (rc != 0) {
			rc = rc < 0 ? rc : 0;
			goto out;
		}
	}
	if (!h5_plan_buffer(out, len)) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory for a read of %zu bytes", len);
		goto out;
	}
	rc = b->read ? h5_dataset_read_raw(d, out->buf, off, len) : plan_copy(out->buf, b);
out:
	if (out->kind == H5_PLAN_BUFFER || rc < 0)
		h5_pin_release(&out->pin);      /* copied, or failed: unpin */
	if (rc < 0)
		h5_read_plan_release(out);
	free(b);
	return rc;
}

void h5_read_plan_release(h5_read_plan *p)
{
	h5_pin_release(&p->pin);
	h5_buf_free(p->buf);
	p->buf = NULL;
	p->len = 0;
	p->next = 0;
	p->kind = H5_PLAN_EMPTY;
}

void h5_pin_release(h5_pin *p)
{
	for (size_t i = 0; i + 1 < p->nheld; i += 2) {
		h5_cache_ref ref = { p->held[i], p->held[i + 1] };

		h5_cache_release(p->cache, &ref);
	}
	for (size_t i = 0; i < p->nsrc_held; i++) {
		h5_source *src = p->src;

		src->ops->unpin(src, p->src_held[i]);
	}
	p->nheld = 0;
	p->nsrc_held = 0;
	p->niov = 0;
}

/* ---- the older, narrower questions (tests, fuzzing, tools) ----------------- */

int h5_dataset_extents(h5_extent *out, size_t max, size_t *n, h5_dataset *d, uint64_t off, size_t len)
{
	h5_plan_build *b;
	uint64_t end;
	int rc;

	*n = 0;
	if (h5_add_overflow(off, len, &end) || end > d->nbytes)
		return h5_err_set(H5_ERR_INVAL, "window of %zu bytes at %llu is past the end of the dataset", len,
				  (unsigned long long)off);
	if (h5_file_fd(d->f) < 0 || d->has_vlen || d->conv)
		return h5_err_set(H5_ERR_UNSUPPORTED, "not stored as plain bytes of FILE");
	if (len == 0)
		return 0;
	b = malloc(sizeof(*b));
	if (!b)
		return h5_err_set(H5_ERR_NOMEM, "out of memory mapping a window");
	rc = h5_plan_cut(b, d, off, len, NULL, 0);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < b->n && !b->read; i++)
		if (b->pc[i].kind != H5_PIECE_EXTENT || h5_file_fd(b->pc[i].f) < 0)
			b->read = true;
	if (b->read) {
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "part of the window is not stored as plain bytes");
		goto out;
	}
	if (b->n > max) {
		rc = h5_err_set(H5_ERR_LIMIT, "the window spans more than %zu pieces of the file", max);
		goto out;
	}
	for (size_t i = 0; i < b->n; i++) {
		out[i].file_off = b->pc[i].f->base + b->pc[i].addr;
		out[i].len = b->pc[i].len;
		out[i].fd = h5_file_fd(b->pc[i].f);
	}
	*n = b->n;
out:
	free(b);
	return rc;
}

int h5_dataset_pin(h5_pin *out, h5_dataset *d, uint64_t off, size_t len)
{
	h5_read_plan *p;
	uint64_t end;
	int rc;

	memset(out, 0, sizeof(*out));
	if (h5_add_overflow(off, len, &end) || end > d->nbytes)
		return h5_err_set(H5_ERR_INVAL, "window of %zu bytes at %llu is past the end of the dataset", len,
				  (unsigned long long)off);
	if (d->has_vlen || d->conv)
		return h5_err_set(H5_ERR_UNSUPPORTED, "variable-length data and n-bit numbers are converted");
	/* plain bytes: a local FILE splices them instead (h5_dataset_extents) */
	if (h5_file_fd(d->f) >= 0 && !(d->cidx && d->cidx->filtered))
		return h5_err_set(H5_ERR_UNSUPPORTED, "plain bytes of a local FILE are spliced");
	p = malloc(sizeof(*p));
	if (!p)
		return h5_err_set(H5_ERR_NOMEM, "out of memory pinning a window");
	rc = h5_dataset_map(p, d, off, len, H5_MAP_NO_SPLICE);
	if (rc == 0 && p->kind == H5_PLAN_PINNED) {
		*out = p->pin;
	} else if (rc == 0 && len > 0) {
		h5_read_plan_release(p);
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "not stored as decoded chunks or blocks of the byte source");
	}
	free(p);
	return rc;
}
