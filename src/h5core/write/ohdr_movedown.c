/*
 * ohdr_movedown.c - the continuation chunks of noted headers (ohdr_note.h)
 * copied down at unmount (ohdr_edit.h h5_ohdr_move_down; the copy is an
 * ordinary h5_ohdr_commit_cow, so its crash safety is ohdr_edit.c's: one
 * write switches chunk 0 to the copies). Apart from ohdr_edit.c: when a
 * header moves is FILE's space policy, not the editing of one header.
 */
#include "ohdr_edit.h"
#include "base.h"
#include "space.h"
#include "file_ws.h"

/* The header hdr's continuation chunks copied down (see ohdr_edit.h):
 * only when one of them ends at the allocation end. */
static int move_down(h5_file *f, uint64_t hdr)
{
	struct h5_wstate *ws = h5_ws(f);
	h5_ohdr_change c;
	const h5_ohdr *oh;
	uint64_t total = 0, end = h5_space_end(f);
	bool last = false;
	int rc = h5_ohdr_change_open(&c, f, hdr);

	if (rc < 0)
		goto out;
	oh = c.e.oh;
	for (size_t i = 1; i < oh->nchunks; i++) {
		last |= oh->chunks[i].addr + oh->chunks[i].len == end;
		total += oh->chunks[i].len;
	}
	/* only when freed space below takes them all (else they would go up) */
	if (!last || h5_freesp_largest(&ws->freesp) < total)
		goto out;
	/* every chunk patched with its own first byte: h5_ohdr_commit_cow
	 * copies each continuation chunk to space taken (best fit, below)
	 * and switches chunk 0 to them in its one write, the old ones freed */
	for (size_t i = 0; rc == 0 && i < oh->nchunks; i++)
		rc = h5_ohdr_patch(&c.e, oh->chunks[i].addr, oh->chunks[i].buf, 1);
	ws->freesp.low = true;   /* down, not into the best-fitting hole */
	if (rc == 0)
		rc = h5_ohdr_commit_cow(&c, f, true);
	ws->freesp.low = false;
	if (rc == 0)
		rc = 1;
out:
	h5_ohdr_change_close(&c);
	return rc;
}

int h5_ohdr_move_down(h5_file *f)
{
	return h5_ohdr_notes_each(f, H5_NOTE_CONT, move_down);
}
