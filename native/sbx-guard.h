/*
 * Guarded paths of sbx-landlock (native/sbx-guard.c): state inside a read-write grant that must not
 * change (a repository's hooks and config, the project's .sbx). Landlock cannot make a path read-only
 * below a granted directory, so the monitor snapshots them before the command starts and puts them
 * back after every descendant has exited.
 */
#ifndef SBX_GUARD_H
#define SBX_GUARD_H

#include <stddef.h>

/* sbx-landlock.c: prints the message (and errno's), exits 125. */
void die(const char *fmt, ...);

/* Locks the directory holding each of `paths` by identity, in a fixed order; waits for another run holding one. */
void guard_lock(char *const *paths, size_t n);
/* Snapshots `path`, which lies beneath the read-write grant `root` (held as `root_fd`, O_PATH). */
void guard_snapshot(const char *root, int root_fd, const char *path);
/* How many paths guard_snapshot was given. */
int guard_count(void);
/* Puts every guarded path back as snapshotted, reporting each change on `status_fd`. */
void guard_restore(int status_fd);

#endif
