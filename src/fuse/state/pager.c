/*
 * pager.c - the mount's write state and its transitions (pager.h: the
 * diagram and the invariants P1-P4, checked at every transition).
 */
#include "pager.h"

#include <stdio.h>
#include <errno.h>
#include <stdlib.h>

static const char *const names[] = { "RO", "OPEN", "UNSYNCED", "WRITER", "LOST" };

/* transitions the diagram has: allowed[from] has bit `to` */
static const unsigned allowed[] = {
	[PAGER_RO] = 1u << PAGER_RO,
	[PAGER_OPEN] = 1u << PAGER_OPEN | 1u << PAGER_WRITER | 1u << PAGER_UNSYNCED | 1u << PAGER_LOST,
	[PAGER_UNSYNCED] = 1u << PAGER_UNSYNCED | 1u << PAGER_WRITER | 1u << PAGER_LOST,
	[PAGER_WRITER] = 1u << PAGER_WRITER | 1u << PAGER_OPEN | 1u << PAGER_UNSYNCED | 1u << PAGER_LOST,
	[PAGER_LOST] = 1u << PAGER_LOST,
};

/* The admission table: rows pager_op, columns the state. */
static const int admit[PAGER_NOPS][PAGER_LOST + 1] = {
	/*                    RO     OPEN   UNSYNCED WRITER LOST */
	[PAGER_CHANGE] =     { EROFS, 0,     0,       0,     EIO },
	[PAGER_UNDO] =       { EROFS, 0,     0,       0,     0 },
	[PAGER_OPEN_WRITE] = { EROFS, 0,     0,       0,     EIO },
	[PAGER_WRITE] =      { EROFS, 0,     0,       0,     0 },
	[PAGER_FOREIGN] =    { EROFS, EROFS, EROFS,   EROFS, EROFS },
	[PAGER_VIEW] =       { EROFS, EROFS, EROFS,   EROFS, EROFS },
	[PAGER_NOWRITE] =    { EROFS, EROFS, EROFS,   EROFS, EROFS },
};

int pager_admit(const struct pager *p, enum pager_op op)
{
	return op < PAGER_NOPS && p->state <= PAGER_LOST ? admit[op][p->state] : EINVAL;
}

const char *pager_refusal(enum pager_op op, unsigned state)
{
	switch (op) {
	case PAGER_FOREIGN: return "an object of another file (external link)";
	case PAGER_VIEW: return "a view is read-only";
	case PAGER_NOWRITE: return "shown read-only";
	default: break;
	}
	return state == PAGER_RO ? "the mount is read-only" : state == PAGER_LOST ?
	       "a change answered earlier could not be written to FILE; unmount and mount again to write" : "";
}

const char *pager_state_name(unsigned state)
{
	return state <= PAGER_LOST ? names[state] : "?";
}

static void violated(struct pager *p, const char *why, unsigned from, unsigned to)
{
#ifdef H5FS_DEBUG
	fprintf(stderr, "h5fs: pager: %s (%s -> %s, writers %u)\n", why, pager_state_name(from),
		pager_state_name(to), p->writers);
	abort();
#else
	(void)from;
	(void)to;
	if (!p->violation)
		p->violation = why;
#endif
}

/* The state the fields give (P2). */
static unsigned derived(const struct pager *p, unsigned from)
{
	if (from == PAGER_RO)
		return PAGER_RO;
	if (p->lost)
		return PAGER_LOST;
	if (p->writers)
		return PAGER_WRITER;
	return p->unsynced ? PAGER_UNSYNCED : PAGER_OPEN;
}

/* Every transition ends here: P1-P4 checked, the new state set. */
static void move(struct pager *p, unsigned from, bool losing)
{
	unsigned to = derived(p, from);

	if (from > PAGER_LOST || !(allowed[from] & 1u << to))
		violated(p, "a transition the diagram does not have", from, to);
	if ((p->writers != 0) != p->locked)
		violated(p, "FILE's lock held without writers, or writers without it", from, to);
	if (from == PAGER_RO && (p->writers || p->unsynced || p->lost))
		violated(p, "a read-only mount wrote", from, to);
	if (p->lost != p->lost_set || (to == PAGER_LOST && from != PAGER_LOST && !losing))
		violated(p, "a lost errno set or changed but by pager_lose", from, to);
	__atomic_store_n(&p->state, to, __ATOMIC_RELAXED);
}

void pager_init(struct pager *p, bool writes)
{
	*p = (struct pager){ .state = writes ? PAGER_OPEN : PAGER_RO };
}

int pager_begin(struct pager *p, bool undo)
{
	unsigned from = p->state;
	int e = pager_admit(p, undo ? PAGER_UNDO : PAGER_CHANGE);

	if (e)
		return e;
	p->writers++;
	p->locked = true;
	move(p, from, false);
	return 0;
}

bool pager_end(struct pager *p)
{
	unsigned from = p->state;
	bool last = false;

	if (p->writers == 0) {
		violated(p, "a write ended that did not begin", from, from);
	} else if (--p->writers == 0) {
		p->locked = false;
		last = true;
	}
	move(p, from, false);
	return last;
}

uint64_t pager_changed(struct pager *p)
{
	unsigned from = p->state;

	p->unsynced = from != PAGER_RO;
	p->seq++;
	move(p, from, false);
	return p->seq;
}

void pager_synced(struct pager *p, uint64_t seq)
{
	unsigned from = p->state;

	if (p->seq == seq)
		p->unsynced = false;
	move(p, from, false);
}

void pager_lose(struct pager *p, int err)
{
	unsigned from = p->state;

	if (from == PAGER_RO)
		violated(p, "a read-only mount lost a change", from, from);
	else if (!p->lost)
		p->lost = p->lost_set = err ? err : EIO;
	move(p, from, true);
}
