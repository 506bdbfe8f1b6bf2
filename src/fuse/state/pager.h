/*
 * pager.h - the mount's write state (pager.c): one state variable, which
 * every write decision reads (commit/admit.c, node/hold.c, durable.c,
 * idle.c, live/), moved only by the transition functions below, each of
 * which checks the diagram and the invariants. SQLite's pager (eState,
 * assert_pager_state) is the model. Pure bookkeeping: no FILE, no lock
 * of its own (the caller holds fs->wmu around every call), no FUSE, so
 * tests/unit/test_pager.c drives it alone.
 *
 *              begin                        end (last writer, nothing unsynced)
 *   OPEN ------------------> WRITER -------------------------------------> OPEN
 *    |  \ changed            ^  |  end (last writer) after a change
 *    |   \ (no writer)       |  +-----------------------------------> UNSYNCED
 *    |    +--> UNSYNCED -----+ begin
 *    |         (synced under a writer: WRITER stays WRITER, then end -> OPEN)
 *    +--- OPEN, UNSYNCED, WRITER --- lost ---> LOST (sticky until unmount;
 *         writes refused EIO but an undo, the next fsync gets the errno)
 *   RO: a mount that never writes (-o ro, FILE read-only): no transition
 *   but into itself; every write refused (EROFS) before its answer.
 *
 * Invariants, checked at every transition (a debug build, configure
 * --enable-debug as the sanitizer builds are, aborts on a violation; a
 * release build keeps the first violation's text for the caller to log
 * once and goes on with the state the fields give):
 *   P1. FILE's lock is held exactly while there are writers.
 *   P2. The state is the one the fields give: LOST iff a change was lost;
 *       else WRITER iff writers; else UNSYNCED iff a committed change
 *       waits for its sync; else OPEN (RO: none of these ever).
 *   P3. Each transition is one the diagram has (a write ends only after
 *       it began; nothing but RO comes out of RO; nothing leaves LOST).
 *   P4. Only pager_lose sets a lost errno (LOST), and it never changes.
 */
#ifndef H5FS_PAGER_H
#define H5FS_PAGER_H

#include <stdbool.h>
#include <stdint.h>

enum pager_state {
	PAGER_RO,
	PAGER_OPEN,
	PAGER_UNSYNCED,
	PAGER_WRITER,
	PAGER_LOST,
};

struct pager {
	unsigned state;         /* enum pager_state: what decisions read */
	unsigned writers;       /* writes under way (FILE's lock shared) */
	bool locked;            /* FILE's lock held */
	bool unsynced;          /* committed changes not fsync'd */
	uint64_t seq;           /* changes remembered: a sync that began at
				 * seq clears unsynced only if none came since */
	int lost;               /* the errno of a change answered and lost */
	int lost_set;           /* what pager_lose set (P4's witness) */
	const char *violation;  /* the first broken invariant (release builds) */
};

void pager_init(struct pager *p, bool writes);

/* What a request asks of the mount (the rows of the admission table) */
enum pager_op {
	PAGER_CHANGE,           /* a change of one of FILE's objects */
	PAGER_UNDO,             /* putting back what a failed change took away */
	PAGER_OPEN_WRITE,       /* a descriptor opened for writing */
	/* a write descriptor's write: its storage's refusals are the write
	 * descriptors' kind's (behind/wfile.c); on a LOST mount the write of
	 * a descriptor that holds FILE goes on to its commit, which says it,
	 * and one that does not is refused by the lock (pager_begin: EIO) */
	PAGER_WRITE,
	PAGER_FOREIGN,          /* a change of another file's object (external link) */
	PAGER_VIEW,             /* a change of a view (NAME.npy, NAME.csv, ...) */
	PAGER_NOWRITE,          /* a change of a root that has no writes (a collection's folders) */
	PAGER_NOPS
};
/* The admission table (operation x state): 0, or the errno the request is
 * refused with before its answer (EROFS, EIO). */
int pager_admit(const struct pager *p, enum pager_op op);
/* The reason of a refusal, for the caller's one log line. */
const char *pager_refusal(enum pager_op op, unsigned state);

/* A write began (FILE's lock taken by the first): undo, a write putting
 * back what a failed change took (allowed on a LOST mount). 0, or the
 * admission table's errno (the state moved since the request's
 * commit_admit: a commit thread lost a change meanwhile), no transition. */
int pager_begin(struct pager *p, bool undo);
/* A write ended: true when it was the last (the caller gives FILE's lock
 * back). */
bool pager_end(struct pager *p);
/* A change committed that needs a sync; its sequence number. */
uint64_t pager_changed(struct pager *p);
/* A sync that began at seq succeeded. */
void pager_synced(struct pager *p, uint64_t seq);
/* A change answered success could not be written: err kept (EIO if 0). */
void pager_lose(struct pager *p, int err);

/* What decisions read (wmu held; pager_writes without it: RO is set at
 * pager_init and never entered or left, and state is stored atomically) */
static inline bool pager_writes(const struct pager *p)
{
	return __atomic_load_n(&p->state, __ATOMIC_RELAXED) != PAGER_RO;
}
static inline bool pager_writing(const struct pager *p)
{
	return p->state == PAGER_WRITER || (p->state == PAGER_LOST && p->writers);
}
static inline int pager_lost(const struct pager *p)
{
	return p->state == PAGER_LOST ? p->lost : 0;
}
/* Committed changes wait for a sync (also while a writer holds FILE). */
static inline bool pager_unsynced(const struct pager *p)
{
	return p->state == PAGER_UNSYNCED || ((p->state == PAGER_WRITER) && p->unsynced);
}
const char *pager_state_name(unsigned state);

#endif
