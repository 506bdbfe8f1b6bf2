/*
 * ohdr_note.c - the ring of objects whose blocks a change placed at the
 * allocation end (ohdr_note.h): what may move down at unmount. Apart from
 * ohdr_edit.c and ohdr_movedown.c: the writers that note are not the ones
 * that move.
 */
#include "ohdr_note.h"
#include "file_ws.h"

void h5_ohdr_note(h5_file *f, unsigned kind, uint64_t hdr)
{
	struct h5_wstate *ws = h5_ws(f);
	const unsigned cap = sizeof(ws->conts) / sizeof(ws->conts[0]);
	unsigned at = cap;

	/* an object is noted once per kind (its blocks are found again at
	 * unmount), in the slot of a forgotten one when there is one: the
	 * ring filled with the chunks of removed files, and a group's
	 * chunk left at the end was no longer noted (test_stress_io) */
	for (unsigned i = 0; i < ws->nconts; i++) {
		if (ws->conts[i].hdr == hdr && ws->conts[i].kind == kind)
			return;
		if (!ws->conts[i].hdr && at == cap)
			at = i;
	}
	if (at == cap && ws->nconts < cap)
		at = ws->nconts++;
	if (at == cap) {
		at = ws->next_cont;
		ws->next_cont = (ws->next_cont + 1) % cap;
	}
	ws->conts[at] = (struct h5_cont_note){ hdr, kind };
}

void h5_ohdr_forget_conts(h5_file *f, uint64_t hdr)
{
	struct h5_wstate *ws = h5_ws(f);

	for (unsigned i = 0; i < ws->nconts; i++)
		if (ws->conts[i].hdr == hdr)
			ws->conts[i].hdr = 0;
}

int h5_ohdr_notes_each(h5_file *f, unsigned kind, int (*fn)(h5_file *f, uint64_t hdr))
{
	struct h5_wstate *ws = h5_ws(f);

	for (unsigned k = 0; k < ws->nconts; k++) {
		uint64_t hdr = ws->conts[k].hdr;
		int rc;

		if (!hdr || ws->conts[k].kind != kind)
			continue;
		rc = fn(f, hdr);
		if (rc < 0)
			h5_err_clear();         /* (that object only: the others still) */
		else if (rc > 0)
			return 1;
	}
	return 0;
}
