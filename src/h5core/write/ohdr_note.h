/* ohdr_note.h - the objects whose blocks a change placed at the
 * allocation end, noted so that they may move down at unmount
 * (ohdr_note.c; h5_ws(f)->conts, file_ws.h). Beneath every writer that
 * notes (ohdr_edit.c, link_stab.c, link_dense.c, attr_write.c,
 * attr_dense.c) and the ones that move them down (ohdr_movedown.c,
 * link_write.c, attr_move.c). Every call under write_lock.
 *
 * A header that got continuation chunks is noted (h5_ohdr_note, kind
 * H5_NOTE_CONT), once, 32 at most (a forgotten one's slot taken first,
 * else the oldest); a header freed is forgotten (h5_ohdr_forget_conts).
 * A group whose link storage (symbol table, dense store) a change wrote
 * is noted in the same ring (kind H5_NOTE_GROUP, link_write.c
 * h5_link_move_down), and an object whose dense attribute store one wrote
 * (H5_NOTE_ATTRS, attr_move.c h5_attr_move_down). */
#ifndef H5_WRITE_OHDR_NOTE_H
#define H5_WRITE_OHDR_NOTE_H

#include "base.h"
#include "file.h"

enum { H5_NOTE_CONT = 0, H5_NOTE_GROUP = 1, H5_NOTE_ATTRS = 2 };
void h5_ohdr_note(h5_file *f, unsigned kind, uint64_t hdr);
void h5_ohdr_forget_conts(h5_file *f, uint64_t hdr);
/* Each object noted with kind given to fn until one returns 1 (moved
 * down): 1, or 0 when none did; a note fn fails on (gone, or not what
 * it was) is passed over. */
int h5_ohdr_notes_each(h5_file *f, unsigned kind, int (*fn)(h5_file *f, uint64_t hdr));

#endif
