/*
 * test_pager.c - the mount's write state (src/fuse/state/pager.c, built
 * here with H5FS_DEBUG as the debug and sanitizer builds are): every
 * transition of the diagram, and each invariant P1-P4 of pager.h broken
 * on purpose, which must abort (Check runs each in a fork and expects
 * SIGABRT).
 */
#include "testutil.h"
#include "pager.h"

#include <errno.h>
#include <signal.h>

/* The diagram's transitions, and what decisions read in each state. */
START_TEST(pager_diagram)
{
	struct pager p, ro;
	uint64_t seq;

	pager_init(&ro, false);
	ck_assert_uint_eq(ro.state, PAGER_RO);
	ck_assert(!pager_writes(&ro));
	pager_init(&p, true);
	ck_assert_uint_eq(p.state, PAGER_OPEN);
	ck_assert(pager_writes(&p) && !pager_writing(&p) && !pager_unsynced(&p) && !pager_lost(&p));
	/* OPEN -> WRITER (two writers share FILE's lock) -> OPEN */
	pager_begin(&p, false);
	pager_begin(&p, false);
	ck_assert_uint_eq(p.state, PAGER_WRITER);
	ck_assert(pager_writing(&p) && p.locked);
	ck_assert(!pager_end(&p));
	ck_assert(pager_end(&p));
	ck_assert_uint_eq(p.state, PAGER_OPEN);
	ck_assert(!p.locked);
	/* a change under a writer: WRITER, unsynced; its end: UNSYNCED */
	pager_begin(&p, false);
	seq = pager_changed(&p);
	ck_assert_uint_eq(p.state, PAGER_WRITER);
	ck_assert(pager_unsynced(&p));
	pager_end(&p);
	ck_assert_uint_eq(p.state, PAGER_UNSYNCED);
	/* the sync under FILE's lock: WRITER stays, then OPEN */
	pager_begin(&p, false);
	pager_synced(&p, seq);
	ck_assert_uint_eq(p.state, PAGER_WRITER);
	ck_assert(!pager_unsynced(&p));
	pager_end(&p);
	ck_assert_uint_eq(p.state, PAGER_OPEN);
	/* storage freed with no writer: OPEN -> UNSYNCED; a sync that a
	 * change overtook clears nothing */
	seq = pager_changed(&p);
	ck_assert_uint_eq(p.state, PAGER_UNSYNCED);
	pager_begin(&p, false);
	pager_changed(&p);
	pager_synced(&p, seq);
	ck_assert(pager_unsynced(&p));
	/* lost: sticky, its errno kept; an undo may still write */
	pager_lose(&p, ENOSPC);
	ck_assert_uint_eq(p.state, PAGER_LOST);
	ck_assert_int_eq(pager_lost(&p), ENOSPC);
	pager_end(&p);
	pager_begin(&p, true);
	ck_assert(pager_writing(&p));
	pager_lose(&p, EIO);
	ck_assert_int_eq(pager_lost(&p), ENOSPC);
	pager_end(&p);
	ck_assert_uint_eq(p.state, PAGER_LOST);
	ck_assert(!pager_unsynced(&p));
	ck_assert_str_eq(pager_state_name(p.state), "LOST");
	ck_assert(p.violation == NULL);
}
END_TEST

/* The admission table: refusals before the answer, no transition. */
START_TEST(pager_admission)
{
	struct pager p, ro;

	pager_init(&ro, false);
	ck_assert_int_eq(pager_begin(&ro, false), EROFS);
	ck_assert_int_eq(pager_admit(&ro, PAGER_OPEN_WRITE), EROFS);
	ck_assert_uint_eq(ro.state, PAGER_RO);
	ck_assert_uint_eq(ro.writers, 0);
	pager_init(&p, true);
	ck_assert_int_eq(pager_admit(&p, PAGER_CHANGE), 0);
	ck_assert_int_eq(pager_admit(&p, PAGER_FOREIGN), EROFS);
	ck_assert_int_eq(pager_admit(&p, PAGER_VIEW), EROFS);
	ck_assert_int_eq(pager_admit(&p, PAGER_NOWRITE), EROFS);
	pager_lose(&p, EIO);
	ck_assert_int_eq(pager_begin(&p, false), EIO);
	ck_assert_int_eq(pager_admit(&p, PAGER_OPEN_WRITE), EIO);
	ck_assert_uint_eq(p.writers, 0);
	ck_assert_int_eq(pager_begin(&p, true), 0);
	ck_assert(pager_end(&p));
	ck_assert(p.violation == NULL);
}
END_TEST

/* P1: FILE's lock held without a writer */
START_TEST(break_lock)
{
	struct pager p;

	pager_init(&p, true);
	p.locked = true;
	pager_changed(&p);
}
END_TEST

/* P2: a state the fields do not give (a writer counted behind the
 * pager's back: the next transition finds WRITER from OPEN with the lock
 * not taken) */
START_TEST(break_state)
{
	struct pager p;

	pager_init(&p, true);
	p.writers = 1;
	pager_synced(&p, 0);
}
END_TEST

/* P3: a write ends that did not begin */
START_TEST(break_end)
{
	struct pager p;

	pager_init(&p, true);
	pager_end(&p);
}
END_TEST

/* P3: UNSYNCED -> OPEN without FILE's lock (a sync outside a write) */
START_TEST(break_sync_unlocked)
{
	struct pager p;
	uint64_t seq;

	pager_init(&p, true);
	seq = pager_changed(&p);
	pager_synced(&p, seq);
}
END_TEST

/* P2: a read-only mount's fields moved (a write counted behind its back) */
START_TEST(break_ro)
{
	struct pager p;

	pager_init(&p, false);
	p.writers = 1;
	p.locked = true;
	pager_synced(&p, 0);
}
END_TEST

/* P4: a lost errno set behind the pager's back (not pager_lose) */
START_TEST(break_lost_errno)
{
	struct pager p;

	pager_init(&p, true);
	p.lost = EIO;
	pager_changed(&p);
}
END_TEST

/* P4: a lost errno changed once set */
START_TEST(break_lost_changed)
{
	struct pager p;

	pager_init(&p, true);
	pager_lose(&p, EIO);
	pager_begin(&p, true);
	p.lost = ENOSPC;
	pager_end(&p);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("pager");
	TCase *tc = tcase_create("pager");

	tcase_add_test(tc, pager_diagram);
	tcase_add_test(tc, pager_admission);
	tcase_add_test_raise_signal(tc, break_lock, SIGABRT);
	tcase_add_test_raise_signal(tc, break_state, SIGABRT);
	tcase_add_test_raise_signal(tc, break_end, SIGABRT);
	tcase_add_test_raise_signal(tc, break_sync_unlocked, SIGABRT);
	tcase_add_test_raise_signal(tc, break_ro, SIGABRT);
	tcase_add_test_raise_signal(tc, break_lost_errno, SIGABRT);
	tcase_add_test_raise_signal(tc, break_lost_changed, SIGABRT);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
