/*
 * bufpool.h - reusable buffers (bufpool.c).
 */
#ifndef H5_IO_BUFPOOL_H
#define H5_IO_BUFPOOL_H

#include "base.h"

/* ---- reusable buffers (bufpool.c) ---------------------------------------
 * Large buffers kept mapped for reuse by the next decode or reply: plain
 * malloc() blocks, so h5_buf_free takes any malloc'd pointer and free()
 * takes a pool buffer (the reuse is then lost). */
void h5_buf_trim(void);         /* give every idle buffer back (h5_buf_alloc/free: h5core.h) */
/* Idle buffers kept: a quarter of the cache budget, within [4, 48] MiB.
 * The budget is the sum of the live contexts' cache budgets: a context
 * adds its own when made and takes it back when freed (ctx.c). Tests fix
 * it with h5_buf_budget (0: back to the contexts'). */
void h5_buf_ctx_budget(size_t cache_budget, bool add);
void h5_buf_budget(size_t cache_budget);
size_t h5_buf_idle(void);       /* bytes kept idle now (tests) */
size_t h5_buf_limit(void);      /* the idle bytes allowed now (tests) */

#endif
