/*
 * vlen.c - a dataset of a type holding variable-length data, read as text
 * (doc/h5fs.1, MAPPING): the state and reads of the text view (view.c).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#include <pthread.h>
#endif

#include "base.h"
#include "rd.h"
#include "strbuf.h"
#include "dtype.h"
#include "gheap.h"
#include "value.h"
#include "dataset.h"
#include "vlen.h"

/* ---- variable-length data as text ---------------------------------------
 * Elements of a type holding variable-length data are references into the
 * global heap (III.E) - meaningless outside the file - so such a dataset
 * reads as text (doc/h5fs.1, MAPPING): one line per element in C order,
 * each ended by "\n". A variable-length string gives its bytes verbatim
 * (a string containing "\n" spans several lines); any other type gives its
 * value in the text rules of attributes (h5_value_text), where nested
 * strings are quoted and escaped, so it stays on one line.
 *
 * The size is known only once every element has been measured. That is
 * done once, on the first size query or read, and leaves a sparse index:
 * the text offset of every stride-th element. A read then decodes at most
 * stride - 1 elements before its window and only the elements it spans.
 * Strings are measured from their stored length, without reading the
 * heap; other types must be rendered, but a run of consecutive elements
 * with the same stored bytes (fill values, repeated records) is rendered
 * once. */

#define VT_STRIDE 1024                    /* elements between two index marks */
#define VT_MAX_MARKS ((uint64_t)1 << 20)  /* 8 MiB of index at most: the stride grows beyond */
#define VT_MAX_ELMTS ((uint64_t)1 << 30)  /* measuring more would stall a lookup for long */
#define VT_BATCH_BYTES ((size_t)64 << 10) /* stored bytes decoded per step */

struct h5_vtext {
	pthread_mutex_t lock;   /* held while measuring; then everything is read-only */
	bool ready;
	int err;                /* a deterministic failure of the measurement, kept */
	char *err_msg;
	uint64_t size;          /* bytes of text */
	uint64_t stride;
	uint64_t nmarks;
	uint64_t *marks;        /* marks[k]: text offset of element k * stride */
};

int h5_vtext_new(h5_vtext **out)
{
	h5_vtext *vt = calloc(1, sizeof(*vt));

	*out = NULL;
	if (!vt)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for a text index");
	if (pthread_mutex_init(&vt->lock, NULL) != 0) {
		free(vt);
		return h5_err_set(H5_ERR_NOMEM, "cannot create the lock of a text index");
	}
	*out = vt;
	return 0;
}

void h5_vtext_free(h5_vtext *vt)
{
	if (!vt)
		return;
	pthread_mutex_destroy(&vt->lock);
	free(vt->marks);
	free(vt->err_msg);
	free(vt);
}

static bool vt_is_string(const h5_dataset *d)
{
	return d->dtype->cls == H5T_VLEN && d->dtype->vlen_type == 1;
}

/* A variable-length string element: 4-byte length, then the global heap ID
 * (collection address, 4-byte object index), IV.A.2.d class 9. */
typedef struct vt_str {
	uint32_t len;           /* bytes; 0 for a null string */
	uint64_t addr;
	uint32_t index;
} vt_str;

static void vt_str_decode(vt_str *out, const h5_dataset *d, const uint8_t *p)
{
	unsigned sa = d->f->fmt.sizeof_addr;

	out->len = (uint32_t)h5_le_decode(p, 4);
	out->addr = h5_le_decode(p + 4, sa);
	out->index = (uint32_t)h5_le_decode(p + 4 + sa, 4);
	/* address 0 is a null string whatever the length says, as libhdf5
	 * decides (H5T__vlen_disk_isnull) */
	if (out->addr == 0)
		out->len = 0;
}

/* Just the text length of a string element: measuring every element of a
 * large dataset is this loop, so it avoids the general decoder. */
static inline uint32_t vt_str_len(unsigned sizeof_addr, const uint8_t *p)
{
	uint32_t len = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	uint8_t addr_bits = 0;

	for (unsigned i = 0; i < sizeof_addr; i++)
		addr_bits |= p[4 + i];
	return addr_bits ? len : 0;   /* address 0: null, as vt_str_decode */
}

/* Text of one element without its newline: *txt is malloc'd (NULL for an
 * empty string). */
static int vt_elem_text(uint8_t **txt, size_t *len, h5_dataset *d, const uint8_t *p)
{
	uint8_t *obj = NULL;
	size_t olen = 0;
	vt_str s;
	int rc;

	*txt = NULL;
	*len = 0;
	if (!vt_is_string(d)) {
		char *t = NULL;

		rc = h5_value_text(&t, len, d->f, d->dtype, p, d->dtype->size, 1);
		*txt = (uint8_t *)t;
		return rc;
	}
	vt_str_decode(&s, d, p);
	if (s.len == 0)
		return 0;
	rc = h5_gheap_read(&obj, &olen, d->f, s.addr, s.index);
	if (rc < 0)
		return h5_err_wrap(rc, "variable-length string: ");
	if (olen < s.len) {
		free(obj);
		return h5_err_set(H5_ERR_FORMAT, "variable-length string of %u bytes, but its global heap object "
				  "0x%llx/%u has %zu", s.len, (unsigned long long)s.addr, s.index, olen);
	}
	*txt = obj;
	*len = s.len;
	return 0;
}

/* The last element rendered, reused while the stored bytes repeat. */
typedef struct vt_memo {
	uint8_t *raw;           /* esize bytes */
	bool valid;
	uint8_t *txt;
	size_t len;
} vt_memo;

static void vt_memo_clear(vt_memo *m)
{
	free(m->raw);
	free(m->txt);
}

/* Text of the element at p, through the memo (non-string types). The text
 * stays owned by the memo. */
static int vt_memo_text(const uint8_t **txt, size_t *len, vt_memo *m, h5_dataset *d, const uint8_t *p)
{
	size_t esize = d->dtype->size;
	int rc;

	if (!m->valid || memcmp(m->raw, p, esize) != 0) {
		free(m->txt);
		m->txt = NULL;
		m->valid = false;
		rc = vt_elem_text(&m->txt, &m->len, d, p);
		if (rc < 0)
			return rc;
		memcpy(m->raw, p, esize);
		m->valid = true;
	}
	*txt = m->txt;
	*len = m->len;
	return 0;
}

/* Elements per step and the buffers for one pass over the elements. */
static int vt_buffers(uint8_t **batch, uint64_t *per, vt_memo *memo, const h5_dataset *d)
{
	uint64_t esize = d->dtype->size;
	size_t need = 4 + (size_t)d->f->fmt.sizeof_addr + 4;

	*batch = NULL;
	memset(memo, 0, sizeof(*memo));
	if (esize == 0 || esize > H5_VALUE_MAX_TEXT)
		return h5_err_set(H5_ERR_LIMIT, "elements of %llu bytes cannot be shown as text",
				  (unsigned long long)esize);
	if (vt_is_string(d) && esize < need)
		return h5_err_set(H5_ERR_FORMAT, "variable-length string type of %llu bytes cannot hold a heap "
				  "reference (%zu bytes)", (unsigned long long)esize, need);
	*per = VT_BATCH_BYTES / esize ? VT_BATCH_BYTES / esize : 1;
	*batch = malloc((size_t)(*per * esize));
	memo->raw = malloc((size_t)esize);
	if (!*batch || !memo->raw) {
		free(*batch);
		*batch = NULL;
		free(memo->raw);
		memo->raw = NULL;
		return h5_err_set(H5_ERR_NOMEM, "out of memory decoding variable-length elements");
	}
	return 0;
}

/* Measure every element: the text size and the index marks. */
static int vt_build(h5_vtext *vt, h5_dataset *d)
{
	uint64_t esize = d->dtype->size, n = d->nelmts, per = 1, stride = VT_STRIDE, nmarks, total = 0;
	uint8_t *batch = NULL;
	uint64_t *marks = NULL;
	vt_memo memo;
	bool str = vt_is_string(d);
	int rc;

	rc = vt_buffers(&batch, &per, &memo, d);
	if (rc < 0)
		goto out;
	if (n > VT_MAX_ELMTS) {
		rc = h5_err_set(H5_ERR_LIMIT, "%llu variable-length elements: more than %llu cannot be shown as "
				"text", (unsigned long long)n, (unsigned long long)VT_MAX_ELMTS);
		goto out;
	}
	if (n / stride >= VT_MAX_MARKS)
		stride = n / VT_MAX_MARKS + 1;
	nmarks = n ? (n - 1) / stride + 1 : 0;
	marks = malloc((size_t)(nmarks ? nmarks : 1) * sizeof(*marks));
	if (!marks) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory for a text index of %llu entries",
				(unsigned long long)nmarks);
		goto out;
	}
	for (uint64_t i = 0; i < n; i += per) {
		uint64_t cnt = n - i < per ? n - i : per;

		rc = h5_dataset_read_raw(d, batch, i * esize, (size_t)(cnt * esize));
		if (rc < 0)
			goto out;
		for (uint64_t j = 0; j < cnt; j++) {
			const uint8_t *p = batch + j * esize;
			size_t len;

			if ((i + j) % stride == 0)
				marks[(i + j) / stride] = total;
			if (str) {
				len = vt_str_len(d->f->fmt.sizeof_addr, p);
			} else {
				const uint8_t *txt;

				rc = vt_memo_text(&txt, &len, &memo, d, p);
				if (rc < 0) {
					h5_err_wrap(rc, "element %llu: ", (unsigned long long)(i + j));
					goto out;
				}
			}
			if (h5_add_overflow(total, (uint64_t)len + 1, &total) || total > (uint64_t)INT64_MAX) {
				rc = h5_err_set(H5_ERR_LIMIT, "the text of the elements exceeds 2^63-1 bytes");
				goto out;
			}
		}
	}
	vt->size = total;
	vt->stride = stride;
	vt->nmarks = nmarks;
	vt->marks = marks;
	marks = NULL;
	vt->ready = true;
out:
	free(marks);
	free(batch);
	vt_memo_clear(&memo);
	return rc;
}

/* The measured text of d, measuring it on first use. A failure that would
 * recur (a damaged heap, a limit) is kept and reported again without
 * measuring again; memory or I/O failures are retried next time. */
int h5_vtext_ensure(h5_vtext **out, h5_dataset *d)
{
	h5_vtext *vt = __atomic_load_n(&d->vtext, __ATOMIC_ACQUIRE), *none = NULL;
	int rc = 0;

	*out = NULL;
	if (!vt) {
		/* the text view's state, made on its first use (view.c); of
		 * two threads making it at once, one keeps its own */
		rc = h5_vtext_new(&vt);
		if (rc < 0)
			return rc;
		if (!__atomic_compare_exchange_n(&d->vtext, &none, vt, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			h5_vtext_free(vt);
			vt = none;
		}
	}
	pthread_mutex_lock(&vt->lock);
	if (!vt->ready) {
		if (vt->err) {
			rc = h5_err_set(vt->err, "%s", vt->err_msg ? vt->err_msg : "variable-length data unreadable");
		} else {
			rc = vt_build(vt, d);
			if (rc < 0 && rc != H5_ERR_NOMEM && rc != H5_ERR_IO) {
				vt->err = rc;
				vt->err_msg = strdup(h5_err_msg());
			}
		}
	}
	pthread_mutex_unlock(&vt->lock);
	if (rc == 0)
		*out = vt;
	return rc;
}

uint64_t h5_vtext_size(const h5_vtext *vt)
{
	return vt->size;
}

/* Copy the part of element text [pos, pos+len] (the newline at pos+len)
 * that falls in [off, end) to out (which holds [off, end)). */
static void vt_copy(uint8_t *out, uint64_t off, uint64_t end, uint64_t pos, const uint8_t *txt, size_t len)
{
	uint64_t from = pos > off ? pos : off;
	uint64_t to = pos + len + 1 < end ? pos + len + 1 : end;

	for (uint64_t b = from; b < to; ) {
		if (b < pos + len) {
			uint64_t stop = to < pos + len ? to : pos + len;

			memcpy(out + (b - off), txt + (b - pos), (size_t)(stop - b));
			b = stop;
		} else {
			out[b - off] = '\n';
			b++;
		}
	}
}

/* [off, off+len) of the text; the caller checked off+len <= vt->size. */
int h5_vtext_read(h5_dataset *d, const h5_vtext *vt, uint8_t *out, uint64_t off, size_t len)
{
	uint64_t esize = d->dtype->size, n = d->nelmts, per = 1, end = off + len, pos, idx;
	size_t lo = 0, hi = (size_t)vt->nmarks;
	uint8_t *batch = NULL;
	vt_memo memo;
	bool str = vt_is_string(d);
	int rc;

	rc = vt_buffers(&batch, &per, &memo, d);
	if (rc < 0)
		goto out;
	if (vt->nmarks == 0) {
		rc = h5_err_set(H5_ERR_INVAL, "read of %zu bytes from a dataset without elements", len);
		goto out;
	}
	/* the last mark at or before off */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (vt->marks[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	idx = (uint64_t)lo * vt->stride;
	pos = vt->marks[lo];
	while (pos < end) {
		uint64_t cnt;

		if (idx >= n) {
			rc = h5_err_set(H5_ERR_FORMAT, "the elements' text ends at byte %llu, before the %llu "
					"measured", (unsigned long long)pos, (unsigned long long)vt->size);
			goto out;
		}
		cnt = n - idx < per ? n - idx : per;
		rc = h5_dataset_read_raw(d, batch, idx * esize, (size_t)(cnt * esize));
		if (rc < 0)
			goto out;
		for (uint64_t j = 0; j < cnt && pos < end; j++, idx++) {
			const uint8_t *p = batch + j * esize;
			const uint8_t *txt;
			uint8_t *owned = NULL;
			size_t tlen;

			if (str) {
				/* strings are measured without the heap: skip the
				 * ones before the window that way */
				uint32_t slen = vt_str_len(d->f->fmt.sizeof_addr, p);

				if (pos + slen + 1 <= off) {
					pos += (uint64_t)slen + 1;
					continue;
				}
				rc = vt_elem_text(&owned, &tlen, d, p);
				txt = owned;
			} else {
				rc = vt_memo_text(&txt, &tlen, &memo, d, p);
			}
			if (rc < 0) {
				h5_err_wrap(rc, "element %llu: ", (unsigned long long)idx);
				goto out;
			}
			vt_copy(out, off, end, pos, txt, tlen);
			pos += (uint64_t)tlen + 1;
			free(owned);
		}
	}
out:
	free(batch);
	vt_memo_clear(&memo);
	return rc;
}
