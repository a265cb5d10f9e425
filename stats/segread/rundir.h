/*
 * rundir.h - the run directory, where libscratch puts its segments and
 * scratchd its socket: its name, by the library's rules, and the checks
 * that it is the user's own.
 */
#ifndef SCRATCH_STATS_RUNDIR_H
#define SCRATCH_STATS_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The run directory into buf: dir when not NULL, else $SCRATCH_RUNTIME_DIR,
 * else $XDG_RUNTIME_DIR/scratch, else /dev/shm/scratch-$UID. With create,
 * a missing last component is made 0700. Returns 0, or -errno with a
 * human cause in err: a directory that is not ours or is open to others is
 * refused (-EPERM); one whose socket path would not fit a Unix socket
 * address (108 bytes with its NUL) is too long (-ENAMETOOLONG), checked
 * before anything is created.
 */
int rundir_resolve(const char *dir, bool create, char *buf, size_t len, char *err, size_t errlen);

#endif /* SCRATCH_STATS_RUNDIR_H */
