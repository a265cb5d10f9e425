/*
 * debug.h - SCRATCH_ASSERT, the invariants a debug build checks.
 *
 * configure --enable-debug defines SCRATCH_DEBUG (config.h). Then a false
 * SCRATCH_ASSERT(expr) writes "scratch: file:line: assertion failed: expr"
 * with one write(2) to fd 2 and aborts: no stdio and no malloc, because it
 * may fire inside the host's malloc (the preload shim). Without it the
 * expression is not evaluated and costs nothing; it still has to compile.
 *
 * What is asserted: the accounting equations that pool.h and the file
 * headers of workspace.c and arena.c write down, where the sequence bracket that
 * publishes them closes, and cheap local invariants (block states) at the
 * transitions. An assertion reads only what its writer owns at that point,
 * so it holds whatever other threads do meanwhile.
 */
#ifndef SCRATCH_DEBUG_H
#define SCRATCH_DEBUG_H

#include "internal.h"

#if defined(SCRATCH_DEBUG)
#define SCRATCH_ASSERT(expr)                                                                       \
	(likely(expr) ? (void)0 : scratch__assert_fail(__FILE__, __LINE__, #expr))
#else
#define SCRATCH_ASSERT(expr) ((void)sizeof(!(expr)))
#endif

#endif /* SCRATCH_DEBUG_H */
