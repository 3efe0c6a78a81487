/*
 * sbx-landlock: the launcher of sbx's landlock backend (src/backend/landlock/), for hosts where no
 * user namespace can be created (a container's default seccomp profile, a process already inside a
 * sandbox). It confines the command with Landlock, no_new_privs, an empty capability set and a
 * seccomp filter, then execs it. It builds no namespace: the command shares the host's mounts,
 * processes and network stack; the backend's gaps table says what that costs.
 *
 * Configuration: descriptor 3, read to EOF, a sequence of NUL-terminated records "key=value"
 * (values may hold any byte but NUL, so paths and environment values need no quoting):
 *   ro=PATH          grant execute, read_file, read_dir beneath PATH
 *   rw=PATH          grant every access right beneath PATH
 *   dev=PATH         grant read_file, write_file (and ioctl on devices) on one device node
 *   except=PATH      never grant PATH: a ro grant above it is split into grants of its siblings
 *   pin=FD:PATH      descriptor FD (O_PATH) is PATH as sbx checked it: grants of PATH use it, never
 *                    the path again (a directory swapped for a symlink meanwhile is not followed)
 *   mkdir=PATH       create this directory (0700) before confinement if it does not exist
 *   tcp=PORT         allow TCP connect to PORT (every other TCP bind/connect is denied)
 *   net=host         leave TCP alone (the host's network); without it TCP is denied but for tcp= ports
 *   net=filtered     deny all TCP to the command, and judge its connect(), listen() and non-TCP socket()
 *                    calls in the monitor (sbx-landlock-net.c): only connect= ports are reached
 *   connect=PORT     under net=filtered, the monitor connects the command's TCP sockets to 127.0.0.1:PORT
 *   capture=PORT     under net=filtered, sbx's HTTP proxy on 127.0.0.1:PORT: every other TCP connect is
 *                    captured into it (sbx-landlock-net.c); without it, refused
 *   rlimit=N:SOFT:HARD   setrlimit(N, SOFT, HARD), in decimal, in the command's process only, once it is
 *                    confined and just before exec: the monitor keeps sbx's own limits
 *   cgroup=PATH      a session cgroup's cgroup.procs: the command's process moves itself there before
 *                    it is confined, the monitor stays where sbx is (it shares no pool with the command)
 *   env=NAME=VALUE   the command's environment, exactly (nothing is inherited)
 *   cwd=PATH         the command's working directory
 *   setsid=1         start a new session (no controlling terminal: TIOCSTI, CVE-2017-5226)
 *   arg=ARG          the command's argv, in order; arg[0] is searched on the command's PATH
 *   guard=PATH       PATH lies beneath an rw= grant and must not change: snapshotted before the
 *                    command starts, put back after every descendant has exited (native/sbx-guard.c)
 *   seccomp=1        descriptor 4 holds a seccomp BPF program (struct sock_filter array), installed last;
 *                    sbx always sends one: Landlock's network rules hold only with it (below, landlock())
 * `sbx-landlock --abi` prints the kernel's Landlock ABI version (0 when it has none) and exits.
 * Descriptor 5: status, for sbx's runtime (src/backend/host/exec.ts), in bwrap's --json-status-fd form:
 * {"child-pid": MONITOR} once the command has exec'd, then {"exit-code": N}. Under net=filtered, each
 * denial of the network judge is a line {"denied": {...}} between them (sbx-landlock-net.c report()).
 * With guard= records, {"guarded": N} comes first, and the restore's {"reverted": PATH, "change": WHAT}
 * lines and {"restored": N} come before the exit code.
 * `sbx-landlock --probe-judge` tries the network judge once and prints "ok" or the step that failed.
 *
 * `sbx-landlock --judge SECCOMP_FD STATUS_FD ANNOUNCE_FD -- CMD [ARGS...]`: the network judge alone,
 * without Landlock, as the first process inside a sandbox that has its own network namespace (bwrap,
 * nsjail: src/backend/shared/bridge.ts). It forks; the child installs the judge's filter (NET_NAMESPACE:
 * connect() only) and then sbx's main seccomp filter, read from SECCOMP_FD ("-": none), and execs CMD
 * (sbx's bridge, src/network/host/bridge.cjs, which starts the command) with descriptor ANNOUNCE_FD the
 * write end of a pipe: the bridge writes its HTTP proxy port there, where the monitor captures into.
 * The monitor (this process) stays outside the main filter, which it could not work under (it denies
 * pidfd_getfd and process_vm_readv to the command), non-dumpable and with no capability, writes each
 * denial on STATUS_FD as under Landlock, passes the signals sbx and a terminal send on to the child, and exits with
 * the child's status (128+N for signal N). The command can kill it (same user, same pid namespace):
 * the listener then closes and every later connect() fails with ENOSYS, and the sandbox's pid 1 ends
 * the run once its first process is gone: closed, never open.
 *
 * Process layout: this process stays outside the sandbox as a monitor (it reports the command's exit
 * status, ends what the command leaves running, and dies with sbx), the forked child confines itself
 * and execs. A child that fails before exec writes its message to stderr and exits 125; the monitor
 * then writes no status, which sbx reads as a sandbox that was never built. Everything fails closed:
 * a right the kernel's Landlock ABI cannot enforce is an error, never skipped.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sbx-guard.h"
#include "sbx-landlock-net.h"

/* Debian 12's uapi header stops at ABI 1: the later constants are the kernel's (include/uapi/linux/landlock.h). */
#define LL_FS_TRUNCATE (1ULL << 14)  /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#define LL_NET_BIND_TCP (1ULL << 0)  /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_RULE_NET_PORT 2
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)

struct ll_ruleset_attr { /* the ABI 6 layout; the kernel accepts any prefix it knows */
	uint64_t handled_access_fs, handled_access_net, scoped;
};
struct ll_net_port_attr { uint64_t allowed_access, port; };
#define MAX_ITEMS 4096
enum { CONFIG_FD = 3, SECCOMP_FD = 4, STATUS_FD = 5, SETUP_FAILED = 125 };

static const uint64_t FS_RO = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
static const uint64_t FS_DEVICE = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | LL_FS_IOCTL_DEV;

/* The whole configuration; the process execs or exits soon after parsing, so nothing is freed. */
struct config {
	char *ro[MAX_ITEMS], *rw[MAX_ITEMS], *dev[MAX_ITEMS], *except[MAX_ITEMS], *mkdirs[MAX_ITEMS], *pin_path[MAX_ITEMS];
	char *guard[MAX_ITEMS], *cgroup[MAX_ITEMS];
	int pin_fd[MAX_ITEMS];
	char *env[MAX_ITEMS + 1], *argv[MAX_ITEMS + 1], *cwd;
	size_t n_ro, n_rw, n_dev, n_except, n_mkdir, n_env, n_argv, n_tcp, n_rlimit, n_pin, n_guard, n_cgroup;
	uint64_t tcp[MAX_ITEMS];
	struct { int resource; struct rlimit value; } rlimit[64];
	int setsid, net_host, net_filtered;
	struct net_config net; /* connect= ports and the capture= port, under net=filtered */
	char *seccomp; /* the BPF program from descriptor 4, seccomp_len bytes */
	size_t seccomp_len;
};

/* In the child: the pipe that tells the monitor the setup failed (-1), or exec did (errno). */
static int report_fd = -1;

void die(const char *fmt, ...) {
	int failed = -1;
	va_list ap;
	va_start(ap, fmt);
	fputs("sbx-landlock: ", stderr);
	vfprintf(stderr, fmt, ap);
	if (errno) fprintf(stderr, ": %s", strerror(errno));
	fputc('\n', stderr);
	va_end(ap);
	if (report_fd >= 0 && write(report_fd, &failed, sizeof failed) < 0) { /* the monitor sees EOF: exit 125 says it */ }
	_exit(SETUP_FAILED);
}

static char *read_all(int fd, size_t *len) {
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (!buf) die("out of memory");
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR) continue;
		if (r < 0) die("reading descriptor %d", fd);
		if (r == 0) break;
		n += (size_t)r;
		if (n == cap) buf = realloc(buf, cap *= 2);
	}
	*len = n;
	return buf;
}

static void push(char **list, size_t *n, char *value, const char *key) {
	if (*n >= MAX_ITEMS) { errno = 0; die("too many %s records", key); }
	list[(*n)++] = value;
}

static void parse_config(struct config *c) {
	size_t len;
	char *buf = read_all(CONFIG_FD, &len);
	close(CONFIG_FD);
	errno = 0;
	if (len == 0 || buf[len - 1] != '\0') die("configuration on fd %d is empty or not NUL-terminated", CONFIG_FD);
	for (char *rec = buf, *next; rec < buf + len; rec = next) {
		next = rec + strlen(rec) + 1;
		char *eq = strchr(rec, '=');
		if (!eq) die("record without '=' in the configuration");
		*eq = '\0';
		char *v = eq + 1, *end;
		if (!strcmp(rec, "ro")) push(c->ro, &c->n_ro, v, rec);
		else if (!strcmp(rec, "rw")) push(c->rw, &c->n_rw, v, rec);
		else if (!strcmp(rec, "dev")) push(c->dev, &c->n_dev, v, rec);
		else if (!strcmp(rec, "except")) push(c->except, &c->n_except, v, rec);
		else if (!strcmp(rec, "mkdir")) push(c->mkdirs, &c->n_mkdir, v, rec);
		else if (!strcmp(rec, "guard")) push(c->guard, &c->n_guard, v, rec);
		else if (!strcmp(rec, "cgroup")) push(c->cgroup, &c->n_cgroup, v, rec);
		else if (!strcmp(rec, "env")) push(c->env, &c->n_env, v, rec);
		else if (!strcmp(rec, "arg")) push(c->argv, &c->n_argv, v, rec);
		else if (!strcmp(rec, "cwd")) c->cwd = v;
		else if (!strcmp(rec, "pin")) {
			long fd = strtol(v, &end, 10);
			if (end == v || *end != ':' || fd < 3 || fd > 65535 || c->n_pin >= MAX_ITEMS) die("bad pin record %s", v);
			c->pin_fd[c->n_pin] = (int)fd;
			c->pin_path[c->n_pin++] = end + 1;
		} else if (!strcmp(rec, "setsid")) c->setsid = 1;
		else if (!strcmp(rec, "net") && !strcmp(v, "host")) c->net_host = 1;
		else if (!strcmp(rec, "net") && !strcmp(v, "filtered")) c->net_filtered = 1;
		else if (!strcmp(rec, "connect")) {
			unsigned long port = strtoul(v, &end, 10);
			if (*v == '\0' || *end != '\0' || port == 0 || port > 65535 || c->net.n_ports >= NET_MAX_PORTS)
				die("bad connect record %s", v);
			c->net.ports[c->net.n_ports++] = (uint16_t)port;
		}
		else if (!strcmp(rec, "capture")) {
			unsigned long port = strtoul(v, &end, 10);
			if (*v == '\0' || *end != '\0' || port == 0 || port > 65535) die("bad capture record %s", v);
			c->net.capture_port = (uint16_t)port;
		}
		else if (!strcmp(rec, "seccomp")) c->seccomp = read_all(SECCOMP_FD, &c->seccomp_len);
		else if (!strcmp(rec, "tcp")) {
			unsigned long port = strtoul(v, &end, 10);
			if (*v == '\0' || *end != '\0' || port > 65535 || c->n_tcp >= MAX_ITEMS) die("bad tcp record %s", v);
			c->tcp[c->n_tcp++] = port;
		} else if (!strcmp(rec, "rlimit")) {
			struct rlimit *r = &c->rlimit[c->n_rlimit].value;
			long resource = strtol(v, &end, 10);
			if (*end != ':' || c->n_rlimit >= 64) die("bad rlimit record %s", v);
			r->rlim_cur = strtoull(end + 1, &end, 10);
			if (*end != ':') die("bad rlimit record %s", v);
			r->rlim_max = strtoull(end + 1, &end, 10);
			if (*end != '\0' || errno) die("bad rlimit record %s", v);
			c->rlimit[c->n_rlimit++].resource = (int)resource;
		} else die("unknown configuration key %s", rec);
	}
	if (c->n_argv == 0 || !c->cwd) die("the configuration names no command or no cwd");
	if (c->net_host && c->n_tcp > 0) die("net=host and tcp= records contradict each other");
	if (c->net_filtered && (c->net_host || c->n_tcp > 0)) die("net=filtered, net=host and tcp= records contradict each other");
	if ((c->net.n_ports > 0 || c->net.capture_port) && !c->net_filtered) die("connect= and capture= records need net=filtered");
	close(SECCOMP_FD); /* sbx always passes one, empty without a filter: it must not reach the command */
}

/* The kernel's Landlock ABI version; 0 when it has none (not built, or not in lsm=). */
static int landlock_abi(void) {
	int abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	return abi < 0 ? 0 : abi;
}

/* Whether `path` is `dir` or lies beneath it (both absolute, without trailing slash). */
static int is_within(const char *path, const char *dir) {
	size_t n = strlen(dir);
	if (n == 1) return 1; /* "/" */
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Adds a rule beneath the file `fd` (O_PATH, consumed) is. */
static void add_rule(int ruleset, int fd, const char *path, uint64_t access) {
	struct landlock_path_beneath_attr rule = { .allowed_access = access, .parent_fd = fd };
	struct stat st;
	if (fstat(fd, &st) < 0) die("stat %s", path);
	/* The kernel refuses directory-only rights on a file (EINVAL): a file keeps the rights that apply to files. */
	if (!S_ISDIR(st.st_mode))
		rule.allowed_access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |
		                       LANDLOCK_ACCESS_FS_WRITE_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV;
	if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) < 0)
		die("landlock rule for %s", path);
	close(fd);
}

/* PATH as sbx pinned it, else opened now (system paths and the session's own directories). */
static int open_grant(const char *path, const struct config *c) {
	for (size_t i = 0; i < c->n_pin; i++)
		if (!strcmp(c->pin_path[i], path)) {
			int fd = fcntl(c->pin_fd[i], F_DUPFD_CLOEXEC, 0);
			if (fd < 0) die("pinned descriptor %d of %s", c->pin_fd[i], path);
			return fd;
		}
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0) die("opening %s", path);
	return fd;
}

/*
 * Landlock grants whole hierarchies: it cannot deny one file beneath a granted directory. A grant
 * with an excluded path below it becomes grants of each sibling on the way down, the excluded path
 * itself left out. A name created in the directories on the way later is not granted. Those
 * directories stay listable when every excluded path beneath them is a file: a read_dir rule there
 * covers the directories below too, but no file's content, and bwrap shows a masked file's name as
 * well (an empty file over it). Python lists each directory of its search path, so a toolchain with
 * one masked file would otherwise fail to import anything from that directory. Beneath an excluded
 * directory (or one that cannot be checked) they get no rule at all: its entries' names stay hidden,
 * as under bwrap's empty tmpfs. Symbolic links are not followed (the path they name is granted, or
 * not, where it lies, as without the split). landlock.ts sends only read-only grants this way. `fd`
 * (O_PATH) is `path`, consumed.
 */
static void grant(int ruleset, int fd, const char *path, uint64_t access, const struct config *c) {
	int split = 0, dir_beneath = 0;
	for (size_t i = 0; i < c->n_except; i++) {
		if (is_within(path, c->except[i])) { close(fd); return; } /* the path is excluded itself */
		if (!is_within(c->except[i], path)) continue;
		struct stat st;
		split = 1;
		if (lstat(c->except[i], &st) < 0 || !S_ISREG(st.st_mode)) dir_beneath = 1;
	}
	if (!split) { add_rule(ruleset, fd, path, access); return; }
	if (!dir_beneath && (access & LANDLOCK_ACCESS_FS_READ_DIR)) {
		int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (copy < 0) die("dup of %s", path);
		add_rule(ruleset, copy, path, LANDLOCK_ACCESS_FS_READ_DIR);
	}
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = dfd < 0 ? NULL : fdopendir(dfd);
	if (!dir) die("listing %s, which holds an excluded path", path);
	close(fd);
	for (struct dirent *e; (errno = 0, e = readdir(dir));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
		char child[PATH_MAX];
		int len = snprintf(child, sizeof child, "%s/%s", strcmp(path, "/") ? path : "", e->d_name);
		if (len >= (int)sizeof child) die("path too long under %s", path);
		int cfd = openat(dirfd(dir), e->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0) die("opening %s", child);
		struct stat st;
		if (fstat(cfd, &st) < 0) die("stat %s", child);
		if (S_ISLNK(st.st_mode)) close(cfd);
		else grant(ruleset, cfd, child, access, c);
	}
	if (errno) die("listing %s", path);
	closedir(dir);
}

/*
 * The command's own stdin, stdout and stderr, when they are a terminal or a file: reopened by path
 * (/dev/stdout, /dev/stderr, /proc/self/fd/N, `tee /dev/tty`), which Landlock would otherwise deny,
 * as bwrap's /proc allows. Pipes and sockets need no rule (Landlock does not govern them).
 */
static void grant_stdio(int ruleset) {
	for (int fd = 0; fd <= 2; fd++) {
		struct stat st;
		if (fstat(fd, &st) < 0 || !(S_ISCHR(st.st_mode) || S_ISREG(st.st_mode))) continue;
		int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (copy < 0) die("dup of descriptor %d", fd);
		uint64_t access = FS_DEVICE | (S_ISCHR(st.st_mode) ? 0 : LL_FS_TRUNCATE);
		add_rule(ruleset, copy, "a standard descriptor", access);
	}
}

static void landlock(const struct config *c) {
	int abi = landlock_abi();
	/* ABI 4 is the floor: without TCP rules a network-less policy could not be enforced; ABI 6 for
	 * scoping, so that the command cannot signal sbx or other host processes, nor reach abstract
	 * unix sockets (X11, dbus, containerd's shims) outside its own domain. */
	errno = 0;
	if (abi < 6) die("Landlock ABI %d is too old: sbx needs ABI 6 (Linux 6.12) for signal and socket scoping", abi);
	/* TCP rules hook bind() and connect() only. The connections they cannot see come from seccomp's
	 * filter, which sbx always sends (src/backend/landlock/, landlockSeccompRules): sends with MSG_FASTOPEN,
	 * which connect from inside sendto/sendmsg/sendmmsg, and io_uring, which creates sockets without
	 * socket(). TCP_FASTOPEN_CONNECT is covered here: it defers the SYN, but connect() is still called. */
	struct ll_ruleset_attr attr = {
		.handled_access_fs = ((LANDLOCK_ACCESS_FS_REFER << 1) - 1) | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV,
		.handled_access_net = c->net_host ? 0 : LL_NET_BIND_TCP | LL_NET_CONNECT_TCP,
		.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL,
	};
	int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (ruleset < 0) die("landlock_create_ruleset");
	uint64_t all = attr.handled_access_fs;
	for (size_t i = 0; i < c->n_ro; i++) grant(ruleset, open_grant(c->ro[i], c), c->ro[i], FS_RO, c);
	for (size_t i = 0; i < c->n_rw; i++) grant(ruleset, open_grant(c->rw[i], c), c->rw[i], all, c);
	for (size_t i = 0; i < c->n_dev; i++)
		add_rule(ruleset, open_grant(c->dev[i], c), c->dev[i], FS_DEVICE);
	grant_stdio(ruleset);
	for (size_t i = 0; i < c->n_tcp; i++) {
		struct ll_net_port_attr port = { .allowed_access = LL_NET_CONNECT_TCP, .port = c->tcp[i] };
		if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_NET_PORT, &port, 0) < 0)
			die("landlock rule for tcp port %llu", (unsigned long long)c->tcp[i]);
	}
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0) die("landlock_restrict_self");
	close(ruleset);
	/* The pins are sbx's: the command must not inherit a descriptor of any host path. */
	for (size_t i = 0; i < c->n_pin; i++) close(c->pin_fd[i]);
}

/* Root inside a container keeps CAP_DAC_OVERRIDE and friends, which Landlock does not stop: every
 * capability goes, from the bounding set too, so that exec cannot give any back. */
static void drop_capabilities(void) {
	for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EPERM) die("dropping capability %d", cap);
	/* EPERM above means no CAP_SETPCAP, so an unprivileged caller: its bounding set cannot be used
	 * anyway since it has no capability to regain through it under no_new_privs. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) die("clearing ambient caps");
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { { 0 } };
	if (syscall(SYS_capset, &header, data) < 0) die("capset");
}

static void install_program(const char *program, size_t len, int fd) {
	errno = 0;
	size_t n = len / sizeof(struct sock_filter);
	if (n == 0 || n > BPF_MAXINSNS || len % sizeof(struct sock_filter) != 0)
		die("the seccomp program on fd %d has a bad size", fd);
	struct sock_fprog fprog = { .len = (unsigned short)n, .filter = (struct sock_filter *)program };
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) < 0) die("installing the seccomp filter");
}

static void install_seccomp(const struct config *c) {
	if (c->seccomp) install_program(c->seccomp, c->seccomp_len, SECCOMP_FD); /* absent: seccomp preset off */
}

/* The command's process into each session cgroup ("0": the writer, cgroup-v2.rst), before anything
 * else it does is charged: the monitor stays in sbx's cgroup, out of reach of the session's
 * memory.oom.group kill and pids.max. Before Landlock, which would deny the write. */
static void enter_cgroups(const struct config *c) {
	for (size_t i = 0; i < c->n_cgroup; i++) {
		int fd = open(c->cgroup[i], O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "0", 1) != 1) die("moving into cgroup %s", c->cgroup[i]);
		close(fd);
	}
}

/* The child: confine, then exec. Order matters: the bounding set needs the capabilities that are
 * dropped next; Landlock and seccomp need no_new_privs; the rlimits come once the setup's own
 * descriptors are closed (a small RLIMIT_NOFILE must not fail the Landlock rules); seccomp comes
 * last so that the setup's own system calls are not filtered. */
static void confine_and_exec(struct config *c, int ready, int judge) {
	report_fd = ready;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) die("PR_SET_PDEATHSIG");
	enter_cgroups(c);
	if (c->setsid && setsid() < 0) die("setsid");
	for (size_t i = 0; i < c->n_mkdir; i++)
		if (mkdir(c->mkdirs[i], 0700) < 0 && errno != EEXIST) die("mkdir %s", c->mkdirs[i]);
	if (chdir(c->cwd) < 0) die("chdir %s", c->cwd);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die("PR_SET_NO_NEW_PRIVS");
	drop_capabilities();
	landlock(c);
	/* Before the main filter, which may deny seccomp() or sendmsg() to the command. The listener must
	 * not reach the command: it could answer its own calls. */
	if (c->net_filtered) {
		int listener = net_install_filter(NET_LANDLOCK);
		if (listener < 0) die("installing the network judge's seccomp filter (user notification)");
		if (net_send_fd(judge, listener) < 0) die("passing the network judge's listener to the monitor");
		close(listener);
		close(judge);
	}
	/* Lowering only: they are clamped to sbx's own hard limits (src/limits/host/cgroup/rlimits.ts). */
	for (size_t i = 0; i < c->n_rlimit; i++)
		if (setrlimit(c->rlimit[i].resource, &c->rlimit[i].value) < 0) die("setrlimit %d", c->rlimit[i].resource);
	install_seccomp(c);
	c->env[c->n_env] = c->argv[c->n_argv] = NULL;
	environ = c->env;
	/* `ready` is close-on-exec: the monitor sees it close when exec succeeds. execvp searches the
	 * command's PATH (now its environment), as bwrap does. */
	execvp(c->argv[0], c->argv);
	int err = errno;
	if (write(ready, &err, sizeof err) < 0) { /* the status is the exit code below all the same */ }
	fprintf(stderr, "sbx-landlock: cannot execute %s: %s\n", c->argv[0], strerror(err));
	_exit(err == ENOENT ? 127 : 126);
}

/*
 * Without a pid namespace nothing ends what the command leaves running (a daemon it started, a
 * double-forked child) when it exits. The monitor is their subreaper: each orphan is reparented to
 * it, and once the command is gone they are killed until none is left, as bwrap's pid 1 does.
 */
static void end_leftovers(void) {
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
	for (;;) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
		if (fd >= 0) close(fd);
		buf[n > 0 ? n : 0] = '\0';
		for (char *p = buf, *end; *p; p = end) {
			long pid = strtol(p, &end, 10);
			if (end == p) break;
			kill((pid_t)pid, SIGKILL);
		}
		if (waitpid(-1, NULL, 0) < 0 && errno == ECHILD) return;
	}
}

/* Each guard= path, beneath the outermost rw= grant holding it (the chain of directories down to it is
 * checked from there), through that grant's pinned descriptor. */
static void snapshot_guards(const struct config *c) {
	guard_lock(c->guard, c->n_guard);
	for (size_t i = 0; i < c->n_guard; i++) {
		const char *root = NULL;
		for (size_t j = 0; j < c->n_rw; j++)
			if (strcmp(c->guard[i], c->rw[j]) && is_within(c->guard[i], c->rw[j]) && (!root || is_within(root, c->rw[j])))
				root = c->rw[j];
		errno = 0;
		if (!root) die("guard %s lies beneath no rw grant", c->guard[i]);
		guard_snapshot(root, open_grant(root, c), c->guard[i]);
	}
}

/* The command, as a pidfd: signalled from the handler below without the risk of a reused pid. */
static volatile int command_pidfd = -1;

/*
 * SIGTERM and SIGHUP end the sandbox: sbx sends SIGTERM where it used to SIGKILL the monitor (the
 * timeout's grace, a second Ctrl-C: src/backend/host/exec.ts launcherKill), and it is the monitor's
 * parent-death signal. The command is killed, so main() goes on to end_leftovers() and the restore
 * of the guarded paths: a SIGKILLed monitor could do neither. SIGINT and SIGQUIT come from the
 * terminal, which delivers them to the command too: the command decides.
 */
static void on_signal(int sig) {
	int saved = errno;
	if ((sig == SIGTERM || sig == SIGHUP) && command_pidfd >= 0) syscall(SYS_pidfd_send_signal, command_pidfd, SIGKILL, NULL, 0);
	errno = saved;
}

/* --judge: the child the monitor passes signals on to (a pidfd: never a reused pid). */
static volatile int judged_pidfd = -1;

static void pass_on(int sig) {
	int saved = errno;
	if (judged_pidfd >= 0) syscall(SYS_pidfd_send_signal, judged_pidfd, sig, NULL, 0);
	errno = saved;
}

static int descriptor_arg(const char *arg) {
	char *end;
	long fd = strtol(arg, &end, 10);
	errno = 0;
	if (end == arg || *end != '\0' || fd < 3 || fd > 65535) die("--judge: bad descriptor %s", arg);
	return (int)fd;
}

/* `sbx-landlock --judge SECCOMP_FD STATUS_FD ANNOUNCE_FD -- CMD...` (the header says what it is for). */
static int judge_main(int argc, char **argv) {
	errno = 0;
	if (argc < 7 || strcmp(argv[5], "--") != 0) die("usage: sbx-landlock --judge SECCOMP_FD STATUS_FD ANNOUNCE_FD -- CMD...");
	size_t program_len = 0;
	char *program = NULL;
	if (strcmp(argv[2], "-") != 0) {
		int fd = descriptor_arg(argv[2]);
		program = read_all(fd, &program_len);
		close(fd);
	}
	int status_fd = descriptor_arg(argv[3]), announce_fd = descriptor_arg(argv[4]);
	if (fcntl(status_fd, F_SETFD, FD_CLOEXEC) < 0) die("status descriptor %d", status_fd);
	/* Nothing in the sandbox may read the monitor's memory or take its descriptors (the listener). */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) die("PR_SET_DUMPABLE");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die("PR_SET_NO_NEW_PRIVS");
	drop_capabilities();
	sigset_t all, old;
	sigfillset(&all);
	if (sigprocmask(SIG_BLOCK, &all, &old) < 0) die("sigprocmask");
	int judge[2], announce[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, judge) < 0 || pipe2(announce, O_CLOEXEC) < 0) die("socketpair");
	pid_t pid = fork();
	if (pid < 0) die("fork");
	if (pid == 0) {
		close(judge[0]), close(announce[0]), close(status_fd);
		if (sigprocmask(SIG_SETMASK, &old, NULL) < 0) die("sigprocmask");
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) die("PR_SET_PDEATHSIG");
		/* Out of the way of ANNOUNCE_FD, which may be any number the launcher left free. */
		if (judge[1] == announce_fd && (judge[1] = fcntl(judge[1], F_DUPFD_CLOEXEC, announce_fd + 1)) < 0) die("dup");
		/* Not close-on-exec: the bridge writes its port there, then closes it before starting the command. */
		if (announce[1] == announce_fd ? fcntl(announce_fd, F_SETFD, 0) < 0 : dup2(announce[1], announce_fd) < 0)
			die("announce descriptor %d", announce_fd);
		int listener = net_install_filter(NET_NAMESPACE);
		if (listener < 0) die("installing the network judge's seccomp filter (user notification)");
		if (net_send_fd(judge[1], listener) < 0) die("passing the network judge's listener to the monitor");
		close(listener), close(judge[1]);
		if (program) install_program(program, program_len, descriptor_arg(argv[2]));
		execvp(argv[6], argv + 6);
		int err = errno;
		fprintf(stderr, "sbx-landlock: cannot execute %s: %s\n", argv[6], strerror(err));
		_exit(err == ENOENT ? 127 : 126);
	}
	close(judge[1]), close(announce[1]);
	signal(SIGPIPE, SIG_IGN);
	if ((judged_pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0) die("pidfd_open");
	int listener = net_recv_fd(judge[0]);
	close(judge[0]);
	/* The child sends the listener before exec; without a judge it must not go on. */
	struct net_config config = { .mode = NET_NAMESPACE, .announce_fd = announce[0] };
	errno = listener < 0 ? errno : net_start_judge(listener, &config, status_fd);
	if (errno) {
		kill(pid, SIGKILL);
		die("starting the network judge");
	}
	/* The signals sbx and a terminal send (sbx signals the sandbox's first process: backend/host/exec.ts);
	 * never the synchronous ones, which would be the monitor's own fault. */
	struct sigaction sa = { .sa_handler = pass_on };
	int passed[] = { SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGTERM, SIGALRM, SIGWINCH, SIGCONT };
	for (size_t i = 0; i < sizeof passed / sizeof passed[0]; i++)
		if (sigaction(passed[i], &sa, NULL) < 0) die("sigaction");
	if (sigprocmask(SIG_SETMASK, &old, NULL) < 0) die("sigprocmask");
	/* Any child: under nsjail the monitor is the jail's pid 1, and orphans come to it to be reaped. */
	int status;
	for (pid_t got; (got = waitpid(-1, &status, 0)) != pid;)
		if (got < 0 && errno != EINTR) die("waitpid");
	if (net_denials_dropped()) dprintf(status_fd, "{ \"denied-dropped\": %u }\n", net_denials_dropped());
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

int main(int argc, char **argv) {
	static struct config c;
	if (argc >= 2 && !strcmp(argv[1], "--judge")) return judge_main(argc, argv);
	if (argc == 2 && !strcmp(argv[1], "--abi")) return printf("%d\n", landlock_abi()) < 0;
	if (argc == 2 && !strcmp(argv[1], "--probe-judge")) {
		char why[256];
		const char *failed = net_probe(why, sizeof why);
		return printf("%s\n", failed ? failed : "ok") < 0;
	}
	parse_config(&c);
	/* Blocked until the handlers are in place; the child gets them back unblocked, with their defaults. */
	sigset_t ends, old;
	sigemptyset(&ends);
	for (int sig = 0, all[] = { SIGTERM, SIGHUP, SIGINT, SIGQUIT }; sig < 4; sig++) sigaddset(&ends, all[sig]);
	if (sigprocmask(SIG_BLOCK, &ends, &old) < 0) die("sigprocmask");
	/* The monitor ends with sbx (as bwrap --die-with-parent), through on_signal: its restore still runs. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) < 0) die("PR_SET_PDEATHSIG");
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) die("PR_SET_CHILD_SUBREAPER");
	/* Before the fork: nothing of the command has run yet. */
	snapshot_guards(&c);
	int pipefd[2], judge[2] = { -1, -1 };
	if (pipe2(pipefd, O_CLOEXEC) < 0) die("pipe");
	if (c.net_filtered && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, judge) < 0) die("socketpair");
	pid_t pid = fork();
	if (pid < 0) die("fork");
	if (pid == 0) {
		close(pipefd[0]), close(STATUS_FD);
		if (judge[0] >= 0) close(judge[0]);
		if (sigprocmask(SIG_SETMASK, &old, NULL) < 0) die("sigprocmask");
		confine_and_exec(&c, pipefd[1], judge[1]);
	}
	close(pipefd[1]);
	if (judge[1] >= 0) close(judge[1]);
	/*
	 * The monitor's own duties must outlive what the command can do to it: with sbx gone, a status
	 * write would raise SIGPIPE before the restore is done. The profile's rlimits and cgroup are the
	 * command's alone (rlimit=, cgroup= records, applied in the child), so the monitor runs under sbx's
	 * own limits: were one inherited from further up, a file-size or CPU limit would still not kill it
	 * mid-restore at the soft limit. Ignored here, after the fork, so the command keeps the defaults.
	 */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	signal(SIGXCPU, SIG_IGN);
	if ((command_pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0) die("pidfd_open");
	struct sigaction sa = { .sa_handler = on_signal };
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&ends, sig) && sigaction(sig, &sa, NULL) < 0) die("sigaction");
	if (sigprocmask(SIG_SETMASK, &old, NULL) < 0) die("sigprocmask");
	int err = 0, status;
	ssize_t r;
	while ((r = read(pipefd[0], &err, sizeof err)) < 0 && errno == EINTR) {}
	/* EOF: the pipe closed on exec, the command runs. Otherwise the child wrote -1 (setup failed:
	 * its message is on stderr, no status is written, sbx reports a sandbox that was never built) or
	 * exec's errno (the command was not found or not executable: reported as its exit, 127 or 126). */
	if (r > 0 && err == -1) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
		_exit(SETUP_FAILED);
	}
	/* The command runs and has sent the listener (before exec): without a judge it must not go on. */
	if (r == 0 && c.net_filtered) {
		int listener = net_recv_fd(judge[0]);
		c.net.mode = NET_LANDLOCK, c.net.announce_fd = -1;
		errno = listener < 0 ? errno : net_start_judge(listener, &c.net, STATUS_FD);
		if (errno) {
			kill(pid, SIGKILL);
			die("starting the network judge");
		}
		close(judge[0]);
	}
	if (guard_count() > 0) dprintf(STATUS_FD, "{ \"guarded\": %d }\n", guard_count());
	dprintf(STATUS_FD, "{ \"child-pid\": %d }\n", (int)getpid());
	while (waitpid(pid, &status, 0) < 0) if (errno != EINTR) die("waitpid");
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	/* Only once nothing of the sandbox is left can the guarded paths be put back for good. */
	end_leftovers();
	if (net_denials_dropped()) dprintf(STATUS_FD, "{ \"denied-dropped\": %u }\n", net_denials_dropped());
	if (guard_count() > 0) guard_restore(STATUS_FD);
	dprintf(STATUS_FD, "{ \"exit-code\": %d }\n", code);
	_exit(code);
}
