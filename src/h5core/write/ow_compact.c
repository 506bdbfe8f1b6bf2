/*
 * ow_compact.c - the compact entry of the overwriters' layout table
 * (ow_int.h h5_ow_layout_ops; IV.A.2.i, layout message version 3:
 * version, class, size, then the data): every put is kept, and the
 * commit changes the data in the header's copy, written in one write of
 * its chunk (checksum included), then fsyncs.
 * Tests: test_overwrite.py, test_overwrite_crash.py.
 */
#include "ow_int.h"
#include "txn.h"
#include "space.h"
#include "base.h"
#include "rd.h"
#include "file.h"

static int compact_check(const h5_dataset *d)
{
	if (d->layout.version < 3)
		return h5_err_set(H5_ERR_UNSUPPORTED, "compact layout message version %u", d->layout.version);
	return 0;
}

static int compact_put(h5_overwriter *w, uint64_t off, const uint8_t *p, size_t len)
{
	return h5_ow_keep(w, off, p, len);
}

/* Compact (IV.A.2.i, layout v3: version, class, size, then the data): the
 * data changes in the header copy, written in one write of its chunk. */
static int compact_commit(h5_overwriter *w, h5_dataset *d, size_t n, bool durable)
{
	h5_ohdr_edit e = { 0 };
	const h5_msg *lay = NULL;
	size_t lc;
	h5_txn t;
	int rc;

	(void)d;
	(void)durable;
	/* in place: every commit is durable before the next one's write */
	h5_txn_begin(&t, w->f, true, NULL, NULL);
	if (!n)
		return h5_txn_order(&t);        /* a durable request, nothing kept */
	rc = h5_ow_edit_begin(&e, &lay, w->f, w->addr);

	if (rc == 0 && (lay->size < 4 || lay->data[1] != H5_LAYOUT_COMPACT ||
			(uint64_t)h5_le_decode(lay->data + 2, 2) < w->nbytes || lay->size - 4 < w->nbytes))
		rc = h5_err_set(H5_ERR_FORMAT, "compact layout message smaller than the dataset");
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = h5_ohdr_patch(&e, lay->addr + 4 + w->ext[i].off, w->ext[i].p, w->ext[i].len);
	lc = rc == 0 ? h5_ohdr_chunk_of(e.oh, lay->addr) : 0;
	if (rc == 0)
		rc = h5_ow_touch_header(&e, w->f, lc);
	if (rc == 0)
		rc = h5_txn_last(&t, &e, lc);
	h5_ow_edit_end(&e, w->f, w->addr);
	return rc;
}

const h5_ow_layout_ops h5_ow_compact = {
	.name = "compact",
	.check = compact_check,
	.put = compact_put,
	.commit = compact_commit,
};
