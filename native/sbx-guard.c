/*
 * Detect and revert (docs/SECURITY.md "Git state under Landlock"). bwrap binds a repository's hooks,
 * its config view and the project's .sbx read-only inside the writable workspace; Landlock grants add
 * up and cannot narrow a granted tree, so sbx-landlock lets the command write them and undoes it:
 *
 * - Before the command is forked, each guarded path is snapshotted: a directory whole (entries,
 *   modes, file contents, link targets), a file by its bytes, and every directory from the grant's
 *   root down to it by identity (device, inode), each held open (O_PATH) so that a directory the
 *   command renamed (`mv .git .gitold`) can be found again wherever it went.
 * - After the command and every descendant are gone (sbx-landlock.c end_leftovers()), each path is
 *   put back: a renamed directory returns (what took its place goes to a quarantine name at the
 *   grant's root), added entries are deleted (directories quarantined), changed, replaced or removed
 *   files are written anew. Nothing is written through an entry the command left: every step is
 *   relative to a directory descriptor, never follows a link (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW), and
 *   a file that differs is unlinked and created (O_EXCL), so a symlink, FIFO or hard link it planted
 *   is replaced, not written through.
 * - Each change is reported on the status descriptor as {"reverted": PATH, "change": WHAT}, then
 *   {"restored": N} once all are done; sbx turns them into `git-state` violations.
 */
#define _GNU_SOURCE
#include "sbx-guard.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/file.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <unistd.h>

/* A snapshot is held in memory for the whole run: bounded, and a larger one refuses the run. */
#define MAX_BYTES (32u << 20)
#define MAX_NODES 65536
#define MAX_ROOTS 64

enum kind { ABSENT, DIRECTORY, REGULAR, SYMLINK };

struct node {
	char *name;
	enum kind kind;
	int whole; /* the directory's every entry is guarded (else only the kids on the way to one) */
	struct stat st;
	int fd;    /* a directory, held open (O_PATH) from the snapshot on */
	char *data; /* a file's bytes, a link's target */
	size_t len;
	struct node **kids;
	size_t n_kids;
};

struct root {
	const char *path;
	int fd;
	struct node top;
};

static struct root roots[MAX_ROOTS];
static size_t n_roots, n_nodes, n_bytes;
static int n_guarded, n_reverted, status_out = -1;

static void *alloc(size_t n) {
	void *p = calloc(1, n ? n : 1);
	if (!p) die("out of memory");
	return p;
}

static char *read_fd(int fd, size_t size, const char *path) {
	if ((n_bytes += size) > MAX_BYTES) { errno = 0; die("guarded state over %u bytes (at %s)", MAX_BYTES, path); }
	char *buf = alloc(size);
	size_t got = 0;
	while (got < size) {
		ssize_t r = read(fd, buf + got, size - got);
		if (r < 0 && errno == EINTR) continue;
		if (r <= 0) die("reading %s", path);
		got += (size_t)r;
	}
	return buf;
}

static struct node *kid(struct node *dir, const char *name) {
	for (size_t i = 0; i < dir->n_kids; i++)
		if (!strcmp(dir->kids[i]->name, name)) return dir->kids[i];
	if (++n_nodes > MAX_NODES) { errno = 0; die("more than %d guarded entries", MAX_NODES); }
	struct node *k = alloc(sizeof *k);
	k->name = strdup(name);
	k->fd = -1;
	dir->kids = realloc(dir->kids, (dir->n_kids + 1) * sizeof *dir->kids);
	if (!k->name || !dir->kids) die("out of memory");
	dir->kids[dir->n_kids++] = k;
	return k;
}

/* Records what `name` in `dirfd` is now; a directory is held open, and listed when `whole`. */
static void snap(int dirfd, struct node *n, const char *path, int whole) {
	n->whole = whole;
	if (fstatat(dirfd, n->name, &n->st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT) die("stat %s", path);
		n->kind = ABSENT;
		return;
	}
	errno = 0;
	if (S_ISDIR(n->st.st_mode)) {
		n->kind = DIRECTORY;
		if (n->fd < 0 && (n->fd = openat(dirfd, n->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			die("opening %s", path);
		if (!whole) return;
		int lfd = openat(n->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *d = lfd < 0 ? NULL : fdopendir(lfd);
		if (!d) die("listing %s", path);
		for (struct dirent *e; (errno = 0, e = readdir(d));) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
			char child[PATH_MAX];
			if (snprintf(child, sizeof child, "%s/%s", path, e->d_name) >= (int)sizeof child) die("path too long: %s", path);
			snap(n->fd, kid(n, e->d_name), child, 1);
		}
		if (errno) die("listing %s", path);
		closedir(d);
	} else if (S_ISREG(n->st.st_mode)) {
		/* A write through this name would reach the file's other names, outside what is guarded: the
		 * restore could put back this name only. bwrap's read-only bind refuses the write itself. */
		if (n->st.st_nlink > 1) {
			errno = 0;
			die("%s has %ju hard links: what the sandbox writes to it would reach the other names, which "
			    "sbx cannot put back; give it a name of its own first (cp %s x && mv x %s)",
			    path, (uintmax_t)n->st.st_nlink, path, path);
		}
		n->kind = REGULAR;
		int fd = openat(dirfd, n->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) die("opening %s", path);
		n->data = read_fd(fd, (size_t)n->st.st_size, path);
		n->len = (size_t)n->st.st_size;
		close(fd);
	} else if (S_ISLNK(n->st.st_mode)) {
		n->kind = SYMLINK;
		n->data = alloc(PATH_MAX);
		ssize_t len = readlinkat(dirfd, n->name, n->data, PATH_MAX - 1);
		if (len < 0) die("readlink %s", path);
		n->len = (size_t)len;
	} else {
		die("%s is neither a file, a directory nor a symbolic link: it cannot be guarded", path);
	}
}

/* The parent of `pid` (/proc/PID/stat's fourth field, after the parenthesised name), or -1. */
static long parent_of(long pid) {
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
	if (fd >= 0) close(fd);
	if (n <= 0) return -1;
	buf[n] = '\0';
	const char *end = strrchr(buf, ')');
	long ppid;
	return end && sscanf(end + 1, " %*c %ld", &ppid) == 1 ? ppid : -1;
}

/*
 * Whether the flock on the directory `st` names is held by a process this one descends from: an sbx
 * nested in a landlock run on the same tree. The outer monitor restores after the inner run ends
 * (it outlives its whole sandbox), from a snapshot taken before anything of either sandbox ran, so the
 * inner run may go on without the lock. Any other holder is a concurrent run: refused.
 */
static int held_by_ancestor(const struct stat *st) {
	FILE *locks = fopen("/proc/locks", "re");
	if (!locks) return 0;
	char line[256], want[64];
	snprintf(want, sizeof want, "%02x:%02x:%ju", major(st->st_dev), minor(st->st_dev), (uintmax_t)st->st_ino);
	long holder = -1;
	while (holder < 0 && fgets(line, sizeof line, locks)) {
		char kind[16], mode[16], rw[16], id[64];
		long pid;
		if (sscanf(line, "%*[^:]: %15s %15s %15s %ld %63s", kind, mode, rw, &pid, id) == 5 &&
		    !strcmp(kind, "FLOCK") && !strcmp(rw, "WRITE") && !strcmp(id, want))
			holder = pid;
	}
	fclose(locks);
	for (long p = parent_of(getpid()); holder > 0 && p > 0; p = parent_of(p))
		if (p == holder) return 1;
	return 0;
}

struct lock { dev_t dev; ino_t ino; int fd; char *dir; };

static int lock_order(const void *a, const void *b) {
	const struct lock *x = a, *y = b;
	if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/*
 * One guarded run per git dir at a time, held until this process exits: a second run's snapshot would
 * take in what the first one's sandbox planted, and put it back after the first one's restore removed
 * it. The lock is on the identity (device, inode) of the directory holding each guarded path, not on a
 * path or a grant: a repository's common git dir is one directory for the main checkout and for every
 * linked worktree, which reach it through different grants (the workspace, or the common dir bound on
 * its own). All are taken before any snapshot, in (device, inode) order, so that two runs wanting
 * overlapping sets cannot deadlock. A second run waits (an agent's parallel calls are serialised;
 * sbx's timeout still ends it: no handler is installed yet, so SIGTERM ends this process). A run nested
 * in the holder does not wait for its own parent: the outer restore comes after it.
 */
void guard_lock(char *const *paths, size_t n) {
	struct lock locks[MAX_ROOTS];
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		char dir[PATH_MAX];
		if (snprintf(dir, sizeof dir, "%s", paths[i]) >= (int)sizeof dir) die("path too long: %s", paths[i]);
		char *slash = strrchr(dir, '/');
		if (!slash) continue;
		*(slash == dir ? slash + 1 : slash) = '\0';
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) die("opening %s", dir);
		struct stat st;
		if (fstat(fd, &st) < 0) die("stat %s", dir);
		int seen = 0;
		for (size_t j = 0; j < k && !seen; j++) seen = locks[j].dev == st.st_dev && locks[j].ino == st.st_ino;
		if (seen) { close(fd); continue; }
		if (k == MAX_ROOTS) { errno = 0; die("too many guarded directories"); }
		char *copy = strdup(dir);
		if (!copy) die("out of memory");
		locks[k++] = (struct lock){ .dev = st.st_dev, .ino = st.st_ino, .fd = fd, .dir = copy };
	}
	qsort(locks, k, sizeof *locks, lock_order);
	for (size_t i = 0; i < k; i++) {
		if (flock(locks[i].fd, LOCK_EX | LOCK_NB) == 0) continue;
		if (errno != EWOULDBLOCK) die("locking a guarded directory");
		struct stat st = { .st_dev = locks[i].dev, .st_ino = locks[i].ino };
		if (held_by_ancestor(&st)) continue;
		fprintf(stderr, "sbx-landlock: waiting for another sbx run guarding the git state in %s\n", locks[i].dir);
		while (flock(locks[i].fd, LOCK_EX) < 0)
			if (errno != EINTR) die("locking a guarded directory");
	}
	/* The descriptors stay open: the locks are held until this process exits. */
}

void guard_snapshot(const char *root, int root_fd, const char *path) {
	struct root *r = NULL;
	for (size_t i = 0; i < n_roots && !r; i++)
		if (!strcmp(roots[i].path, root)) r = &roots[i];
	if (!r) {
		if (n_roots == MAX_ROOTS) { errno = 0; die("too many guarded roots"); }
		r = &roots[n_roots++];
		*r = (struct root){ .path = root, .fd = root_fd, .top = { .kind = DIRECTORY, .fd = root_fd } };
		if (fstat(root_fd, &r->top.st) < 0) die("stat %s", root);
	}
	size_t n = strlen(root);
	errno = 0;
	if (strncmp(path, root, n) || path[n] != '/' || path[n + 1] == '\0') die("guard %s is not beneath %s", path, root);
	char rel[PATH_MAX];
	if (snprintf(rel, sizeof rel, "%s", path + n + 1) >= (int)sizeof rel) die("path too long: %s", path);
	struct node *dir = &r->top;
	char *name = rel, *slash;
	for (; (slash = strchr(name, '/')); name = slash + 1) {
		*slash = '\0';
		struct node *k = kid(dir, name);
		*slash = '/';
		if (k->whole) return; /* an enclosing directory is guarded whole already */
		if (k->st.st_ino == 0) snap(dir->fd, k, path, 0);
		errno = 0;
		if (k->kind != DIRECTORY) die("%s: a directory above the guarded path is not one", path);
		dir = k;
	}
	snap(dir->fd, kid(dir, name), path, 1);
	n_guarded++;
}

int guard_count(void) { return n_guarded; }

/* `s` as a JSON string: the names come from the command and may hold any byte but NUL and '/'. */
static void json_string(FILE *out, const char *s) {
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
		else if (c < 0x20 || c == 0x7f) fprintf(out, "\\u%04x", c);
		else fputc(c, out);
	}
	fputc('"', out);
}

static void report(const char *path, const char *change) {
	n_reverted++;
	FILE *out = fdopen(dup(status_out), "w");
	if (!out) return; /* the restore matters more than its report; sbx still sees {"restored": N} */
	fputs("{ \"reverted\": ", out);
	json_string(out, path);
	fputs(", \"change\": ", out);
	json_string(out, change);
	fputs(" }\n", out);
	fclose(out);
}

/* Moves `name` out of `dirfd` to a fresh quarantine name at the root (or beside it across devices). */
static void quarantine(const struct root *r, int dirfd, const char *name, const char *path, const char *what) {
	char q[64], msg[PATH_MAX + 128];
	for (int i = 0;; i++) {
		snprintf(q, sizeof q, ".sbx-quarantine-%d-%d", (int)getpid(), i);
		if (renameat2(dirfd, name, r->fd, q, RENAME_NOREPLACE) == 0) break;
		if (errno == EXDEV && renameat2(dirfd, name, dirfd, q, RENAME_NOREPLACE) == 0) break;
		if (errno != EEXIST) die("moving %s aside", path);
	}
	snprintf(msg, sizeof msg, "%s; the sandbox's entry was moved to %s/%s", what, r->path, q);
	report(path, msg);
}

/* Where the directory held by `n` went, if it still exists: moved back to `name` in `dirfd`. */
static int bring_back(struct node *n, int dirfd, const char *name, const char *path) {
	struct stat st, at;
	char link[64], where[PATH_MAX], msg[2 * PATH_MAX];
	if (fstat(n->fd, &st) < 0 || st.st_nlink == 0) return 0; /* removed */
	snprintf(link, sizeof link, "/proc/self/fd/%d", n->fd);
	ssize_t len = readlink(link, where, sizeof where - 1);
	if (len <= 0) return 0;
	where[len] = '\0';
	const char *base = strrchr(where, '/');
	int up = openat(n->fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	/* The name readlink gave is checked against the held inode before it is renamed. */
	int ok = base && up >= 0 && fstatat(up, base + 1, &at, AT_SYMLINK_NOFOLLOW) == 0 && at.st_dev == n->st.st_dev &&
	         at.st_ino == n->st.st_ino && renameat2(up, base + 1, dirfd, name, RENAME_NOREPLACE) == 0;
	if (up >= 0) close(up);
	if (ok) {
		snprintf(msg, sizeof msg, "renamed to %s; moved back", where);
		report(path, msg);
	}
	return ok;
}

static int same_file(const struct node *n, int dirfd, const struct stat *st) {
	if (!S_ISREG(st->st_mode) || st->st_mode != n->st.st_mode || st->st_nlink != n->st.st_nlink ||
	    (size_t)st->st_size != n->len || st->st_uid != n->st.st_uid || st->st_gid != n->st.st_gid)
		return 0;
	int fd = openat(dirfd, n->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) return 0;
	char buf[65536];
	size_t at = 0;
	ssize_t r;
	while ((r = read(fd, buf, sizeof buf)) > 0 && at + (size_t)r <= n->len && !memcmp(buf, n->data + at, (size_t)r))
		at += (size_t)r;
	close(fd);
	return r == 0 && at == n->len;
}

/*
 * Re-creates a file or link as snapshotted, under its name in `dirfd` (where nothing is now): written
 * whole under a fresh name first and renamed into place, so a failure (the sandbox filled the disk)
 * leaves the name absent, never a partial file. Returns 0, or -1 with errno when it could not.
 */
static int recreate(const struct node *n, int dirfd) {
	char tmp[64];
	int fd = -1;
	for (int i = 0; fd < 0; i++) {
		snprintf(tmp, sizeof tmp, ".sbx-restore-%d-%d", (int)getpid(), i);
		if (n->kind == SYMLINK) {
			char target[PATH_MAX];
			snprintf(target, sizeof target, "%.*s", (int)n->len, n->data);
			if (symlinkat(target, dirfd, tmp) == 0) break;
		} else {
			fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		}
		if (fd < 0 && errno != EEXIST) return -1;
	}
	int err = 0;
	for (size_t at = 0; fd >= 0 && at < n->len && !err;) {
		ssize_t w = write(fd, n->data + at, n->len - at);
		if (w < 0 && errno == EINTR) continue;
		if (w <= 0) err = w < 0 ? errno : ENOSPC;
		else at += (size_t)w;
	}
	/* A root caller restores the owner too (a user's repository); anyone else owns what they create. */
	if (fd >= 0 && !err && geteuid() == 0 && fchown(fd, n->st.st_uid, n->st.st_gid) < 0) err = errno;
	if (fd >= 0 && !err && fchmod(fd, n->st.st_mode & 07777) < 0) err = errno;
	if (fd >= 0 && close(fd) < 0 && !err) err = errno;
	if (!err && renameat2(dirfd, tmp, dirfd, n->name, RENAME_NOREPLACE) < 0) err = errno;
	if (err) {
		unlinkat(dirfd, tmp, 0);
		return errno = err, -1;
	}
	return 0;
}

static void restore(const struct root *r, int dirfd, struct node *n, const char *path);

/* A whole directory: entries the snapshot does not have go (directories to quarantine), then each kid. */
static void restore_entries(const struct root *r, int fd, struct node *n, const char *path) {
	int lfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = lfd < 0 ? NULL : fdopendir(lfd);
	if (!d) die("listing %s", path);
	char child[PATH_MAX];
	for (struct dirent *e; (errno = 0, e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
		int known = 0;
		for (size_t i = 0; i < n->n_kids && !known; i++) known = !strcmp(n->kids[i]->name, e->d_name);
		if (known) continue;
		snprintf(child, sizeof child, "%s/%s", path, e->d_name);
		struct stat st;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) die("stat %s", child);
		if (S_ISDIR(st.st_mode)) quarantine(r, fd, e->d_name, child, "added");
		else if (unlinkat(fd, e->d_name, 0) < 0) die("removing %s", child);
		else report(child, "added; removed");
	}
	if (errno) die("listing %s", path);
	closedir(d);
}

/*
 * The mode the directory held by `fd` (O_PATH) had at the snapshot, put back first: a command that
 * ran `chmod 0 .git/hooks` must not keep a normal user's monitor out of it. chmod goes through the
 * descriptor's /proc link, which names that inode itself (an O_PATH descriptor takes no fchmod).
 */
static void restore_mode(int fd, const struct stat *was, const char *path) {
	struct stat st;
	char link[64];
	if (fstat(fd, &st) < 0) die("stat %s", path);
	if ((st.st_mode & 07777) == (was->st_mode & 07777)) return;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	if (chmod(link, was->st_mode & 07777) < 0) die("restoring the mode of %s", path);
	report(path, "mode changed; restored");
}

static void restore_dir(const struct root *r, int dirfd, struct node *n, const char *path) {
	struct stat st;
	int here = fstatat(dirfd, n->name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	int same = here && S_ISDIR(st.st_mode) && st.st_dev == n->st.st_dev && st.st_ino == n->st.st_ino;
	if (!same) {
		if (here) quarantine(r, dirfd, n->name, path, "replaced");
		if (bring_back(n, dirfd, n->name, path)) {
			same = 1;
		} else if (!n->whole) {
			report(path, "removed; not recreated (what was guarded beneath it is gone)");
			return;
		} else {
			if (mkdirat(dirfd, n->name, n->st.st_mode & 07777) < 0) die("restoring %s", path);
			report(path, "removed; recreated");
		}
	}
	if (same) restore_mode(n->fd, &n->st, path);
	int fd = openat(dirfd, n->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) die("opening %s", path);
	if (n->whole) {
		restore_entries(r, fd, n, path);
		if (geteuid() == 0 && (st.st_uid != n->st.st_uid || st.st_gid != n->st.st_gid) &&
		    fchown(fd, n->st.st_uid, n->st.st_gid) < 0)
			die("restoring the owner of %s", path);
	}
	char child[PATH_MAX];
	for (size_t i = 0; i < n->n_kids; i++) {
		snprintf(child, sizeof child, "%s/%s", path, n->kids[i]->name);
		restore(r, fd, n->kids[i], child);
	}
	close(fd);
}

static void restore(const struct root *r, int dirfd, struct node *n, const char *path) {
	struct stat st;
	int here = fstatat(dirfd, n->name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (!here && errno != ENOENT) die("stat %s", path);
	switch (n->kind) {
	case DIRECTORY:
		restore_dir(r, dirfd, n, path);
		return;
	case ABSENT:
		if (!here) return;
		if (S_ISDIR(st.st_mode)) quarantine(r, dirfd, n->name, path, "added");
		else if (unlinkat(dirfd, n->name, 0) < 0) die("removing %s", path);
		else report(path, "added; removed");
		return;
	case SYMLINK: {
		char target[PATH_MAX];
		ssize_t len = here && S_ISLNK(st.st_mode) ? readlinkat(dirfd, n->name, target, sizeof target) : -1;
		if (len == (ssize_t)n->len && !memcmp(target, n->data, n->len)) return;
		break;
	}
	case REGULAR:
		if (here && same_file(n, dirfd, &st)) return;
		break;
	}
	const char *what = !here ? "removed; restored" : S_ISREG(st.st_mode) == (n->kind == REGULAR) ? "changed; restored"
	                                                                                           : "replaced; restored";
	if (here && S_ISDIR(st.st_mode)) quarantine(r, dirfd, n->name, path, "replaced by a directory");
	else if (here && unlinkat(dirfd, n->name, 0) < 0) die("removing %s", path);
	if (recreate(n, dirfd) < 0) {
		/* What the sandbox left is gone already; only the original could not be written back. */
		char msg[128];
		snprintf(msg, sizeof msg, "%s; could not be restored (%s): left absent", here ? "changed" : "removed",
		         strerror(errno));
		report(path, msg);
		return;
	}
	if (!(here && S_ISDIR(st.st_mode))) report(path, what);
}

void guard_restore(int status_fd) {
	status_out = status_fd;
	for (size_t i = 0; i < n_roots; i++) {
		char child[PATH_MAX];
		struct node *top = &roots[i].top;
		restore_mode(roots[i].fd, &top->st, roots[i].path);
		for (size_t k = 0; k < top->n_kids; k++) {
			snprintf(child, sizeof child, "%s/%s", roots[i].path, top->kids[k]->name);
			restore(&roots[i], roots[i].fd, top->kids[k], child);
		}
	}
	dprintf(status_fd, "{ \"restored\": %d }\n", n_reverted);
}
