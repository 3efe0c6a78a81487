/*
 * sbx-warm: the hot path of `sbx hook AGENT ... --warm` and `sbx run --warm ...` (docs/SECURITY.md,
 * "The warm server"). bin/sbx.js execs it instead of Node for those command lines:
 *
 *   sbx-warm NODE SCRIPT hook|run ARGS...
 *
 * NODE is the Node.js the shell half chose (the recorded one, or `node` looked up on PATH) and SCRIPT
 * is bin/sbx.js. It connects to the warm server of this build (src/cli/warm/warm-server.ts) at
 * $XDG_CACHE_HOME/sbx/warm-BUILD.sock (~/.cache when unset), makes sure the process listening there
 * is not inside any sandbox, and sends the command line and the environment. A hook call then sends
 * the hook input and writes the server's answer. A run sends this process's descriptors 0 to 2 to the
 * socket the server names (SCM_RIGHTS), forwards its signals, and writes what the server says (sbx's
 * own lines, the report) until the run's exit status, which becomes its own.
 * Whatever fails before that (no server, a refused peer, a call the server declines, a short or
 * malformed reply, a timeout) ends in the path without a server: exec NODE SCRIPT hook|run ARGS...,
 * with a hook's input already read handed over in a memfd as standard input. So the answer, or the
 * run, is always the one sbx gives without --warm; the server only saves Node's start and the CLI's
 * loading, and keeps the host scans warm. The same binary is the taker of a served run's stdio
 * (--take-stdio, below).
 *
 * Trust in the server: the socket lies in sbx's own cache directory, which no sandbox can see, but
 * its path follows XDG_CACHE_HOME and HOME, and a directory that is sbx's cache under today's
 * variables may have been writable in an earlier run. The server's answer decides whether the agent's
 * command runs sandboxed at all, so the path is not what is trusted. The kernel names the listening
 * process (SO_PEERCRED), and it must be of this uid, in every namespace this process is in, under the
 * same seccomp filters and no_new_privs, and running NODE itself. A process inside a bwrap or nsjail
 * sandbox has other namespaces; one under the landlock backend cannot create a unix socket (its filter
 * refuses socket(AF_UNIX)). The server checks the client in turn: it sends a nonce, this process puts
 * it in its own comm (only a process can set its own), and the server reads it back from
 * /proc/PID/comm with the same namespace checks (a sandboxed process could otherwise have the server
 * judge requests of its choosing).
 *
 * Wire format: src/cli/warm/warm-wire.ts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef SBX_BUILD
#error "SBX_BUILD: the build id (scripts/build.mjs passes it), which names the server's socket"
#endif

/* The hook's own bound (src/cli/hook/hook.ts MAX_INPUT_BYTES); one byte more tells the server it was larger. */
#define MAX_HOOK_INPUT (4u << 20)
#define MAX_REPLY (16u << 20)
#define NONCE_LEN 15
/* A safety net, not a deadline: a server that stops answering costs the call this long, then the
   path without a server answers. */
#define REPLY_TIMEOUT_MS 120000

extern char **environ;

static char *node_arg;
static char **node_argv;
static char *input;
static size_t input_len;
static int input_taken;
static int run_mode;

/* The path without a server, with the same arguments; the input already read, if any, as stdin. */
static void __attribute__((noreturn)) fallback(void) {
	if (input_taken) {
		int fd = memfd_create("sbx-warm-input", 0);
		size_t done = 0;
		while (fd >= 0 && done < input_len) {
			ssize_t n = write(fd, input + done, input_len - done);
			if (n < 0 && errno == EINTR) continue;
			if (n <= 0) {
				close(fd);
				fd = -1;
				break;
			}
			done += (size_t)n;
		}
		if (fd < 0 || lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, 0) < 0) {
			fprintf(stderr, "sbx: the hook could not hand its input over (%s); the call is refused\n", strerror(errno));
			_exit(2);
		}
		if (fd != 0) close(fd);
	}
	signal(SIGPIPE, SIG_DFL); /* an ignored signal stays ignored across exec */
	if (strchr(node_arg, '/'))
		execv(node_arg, node_argv);
	else
		execvp(node_arg, node_argv);
	/* As the shell half's own exec would fail for a run (127); a hook call is refused (2: both agents block). */
	fprintf(stderr, "sbx: cannot start %s: %s%s\n", node_arg, strerror(errno), run_mode ? "" : "; the call is refused");
	_exit(run_mode ? 127 : 2);
}

/* src/policy/user-dirs.ts isUsableDir: absolute, no "." or ".." segment, not under /proc, /sys or /dev. */
static int usable_dir(const char *p) {
	if (!p || p[0] != '/') return 0;
	for (const char *s = p; *s;) {
		while (*s == '/') s++;
		const char *e = s;
		while (*e && *e != '/') e++;
		size_t n = (size_t)(e - s);
		if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) return 0;
		s = e;
	}
	static const char *pseudo[] = {"/proc", "/sys", "/dev"};
	for (size_t i = 0; i < 3; i++) {
		const char *r = pseudo[i];
		const char *q = p;
		while (*q == '/' && q[1] == '/') q++;
		size_t n = strlen(r);
		if (strncmp(q, r, n) == 0 && (q[n] == '\0' || q[n] == '/')) return 0;
	}
	return 1;
}

/* posix.normalize for a usable dir: repeated slashes collapsed, no trailing slash. */
static void normalize(char *out, size_t len, const char *p) {
	size_t o = 0;
	for (const char *s = p; *s && o + 1 < len; s++)
		if (!(*s == '/' && o > 0 && out[o - 1] == '/')) out[o++] = *s;
	if (o > 1 && out[o - 1] == '/') o--;
	out[o] = '\0';
}

/* The socket's path, as src/cli/warm/warm-server.ts warmSocketPath makes it; 0 when it cannot be made. */
static int socket_path(char *out, size_t len) {
	char home[PATH_MAX], cache[PATH_MAX];
	const char *h = getenv("HOME");
	if (!usable_dir(h)) {
		struct passwd *pw = getpwuid(getuid());
		h = pw ? pw->pw_dir : NULL;
		if (!usable_dir(h)) return 0;
	}
	normalize(home, sizeof home, h);
	const char *x = getenv("XDG_CACHE_HOME");
	if (usable_dir(x))
		normalize(cache, sizeof cache, x);
	else if (snprintf(cache, sizeof cache, "%s%s.cache", home, strcmp(home, "/") == 0 ? "" : "/") >= (int)sizeof cache)
		return 0;
	int n = snprintf(out, len, "%s/sbx/warm-%s.sock", strcmp(cache, "/") == 0 ? "" : cache, SBX_BUILD);
	return n > 0 && (size_t)n < len;
}

/* The file execvp would run for NODE, as a real path; 0 when there is none. */
static int node_real_path(char *out) {
	if (strchr(node_arg, '/')) return realpath(node_arg, out) != NULL;
	const char *path = getenv("PATH");
	if (!path) path = "/usr/local/bin:/bin:/usr/bin";
	while (1) {
		const char *end = strchrnul(path, ':');
		char candidate[PATH_MAX];
		int n = end == path ? snprintf(candidate, sizeof candidate, "%s", node_arg)
		                    : snprintf(candidate, sizeof candidate, "%.*s/%s", (int)(end - path), path, node_arg);
		struct stat st;
		if (n > 0 && (size_t)n < sizeof candidate && stat(candidate, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(candidate, X_OK) == 0)
			return realpath(candidate, out) != NULL;
		if (!*end) return 0;
		path = end + 1;
	}
}

/* One line of /proc/PID/status ("Seccomp:", ...), the value with its tabs; 0 when missing. */
static int status_line(const char *pid, const char *key, char *out, size_t len) {
	char path[64], buf[8192];
	snprintf(path, sizeof path, "/proc/%s/status", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0) return 0;
	buf[n] = '\0';
	size_t k = strlen(key);
	for (char *line = buf; line && *line;) {
		char *next = strchr(line, '\n');
		if (next) *next++ = '\0';
		if (strncmp(line, key, k) == 0) {
			snprintf(out, len, "%s", line + k);
			return 1;
		}
		line = next;
	}
	return 0;
}

/* Whether PID is a process of this uid, in this process's namespaces, under the same filters, running `exe`. */
static int trusted_peer(pid_t peer, const char *exe) {
	char pid[16], a[PATH_MAX], b[PATH_MAX];
	snprintf(pid, sizeof pid, "%d", (int)peer);
	static const char *ns[] = {"mnt", "user", "net", "pid", "ipc", "uts", "cgroup"};
	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
		char mine[64], theirs[64];
		snprintf(mine, sizeof mine, "/proc/self/ns/%s", ns[i]);
		snprintf(theirs, sizeof theirs, "/proc/%s/ns/%s", pid, ns[i]);
		ssize_t m = readlink(mine, a, sizeof a - 1);
		int mine_errno = errno;
		ssize_t t = readlink(theirs, b, sizeof b - 1);
		if (m < 0 && t < 0 && mine_errno == ENOENT && errno == ENOENT) continue; /* a kernel without it */
		if (m < 0 || t < 0 || m != t || memcmp(a, b, (size_t)m) != 0) return 0;
	}
	static const char *lines[] = {"Uid:", "Seccomp:", "Seccomp_filters:", "NoNewPrivs:"};
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		int m = status_line("self", lines[i], a, sizeof a);
		int t = status_line(pid, lines[i], b, sizeof b);
		if (m != t || (m && strcmp(a, b) != 0)) return 0;
	}
	char link[64];
	snprintf(link, sizeof link, "/proc/%s/exe", pid);
	ssize_t n = readlink(link, a, sizeof a - 1);
	if (n < 0) return 0;
	a[n] = '\0';
	return strcmp(a, exe) == 0;
}

/* Reads exactly `len` bytes within the deadline; 0 on EOF, error or timeout. */
static int read_full(int fd, void *buf, size_t len, const struct timespec *deadline) {
	size_t done = 0;
	while (done < len) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long left = (deadline->tv_sec - now.tv_sec) * 1000 + (deadline->tv_nsec - now.tv_nsec) / 1000000;
		if (left <= 0) return 0;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, (int)(left > INT_MAX ? INT_MAX : left));
		if (r < 0 && errno == EINTR) continue;
		if (r <= 0) return 0;
		ssize_t n = read(fd, (char *)buf + done, len - done);
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) return 0;
		done += (size_t)n;
	}
	return 1;
}

static int write_full(int fd, const void *buf, size_t len) {
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) return 0;
		done += (size_t)n;
	}
	return 1;
}

/* The request, built in memory and sent whole. */
struct out {
	char *buf;
	size_t len, cap;
	int failed;
};

static void put(struct out *o, const void *data, size_t len) {
	if (o->failed) return;
	if (o->len + len > o->cap) {
		size_t cap = o->cap ? o->cap : 65536;
		while (cap < o->len + len) cap *= 2;
		char *grown = realloc(o->buf, cap);
		if (!grown) {
			o->failed = 1;
			return;
		}
		o->buf = grown;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, data, len);
	o->len += len;
}

static void put_u32(struct out *o, uint32_t v) {
	unsigned char b[4] = {v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, (v >> 24) & 0xff};
	put(o, b, 4);
}

static void put_str(struct out *o, const char *s, size_t len) {
	put_u32(o, (uint32_t)len);
	put(o, s, len);
}

static int read_u32(int fd, uint32_t *v, const struct timespec *deadline) {
	unsigned char b[4];
	if (!read_full(fd, b, 4, deadline)) return 0;
	*v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return 1;
}

/* A string of the reply, NUL-terminated; NULL on a short or oversized one. */
static char *read_str(int fd, uint32_t *len, const struct timespec *deadline) {
	if (!read_u32(fd, len, deadline) || *len > MAX_REPLY) return NULL;
	char *s = malloc((size_t)*len + 1);
	if (!s) return NULL;
	if (!read_full(fd, s, *len, deadline)) {
		free(s);
		return NULL;
	}
	s[*len] = '\0';
	return s;
}

/* Standard input, up to one byte past the hook's bound. */
static int read_input(void) {
	size_t cap = 65536;
	input = malloc(cap);
	if (!input) return 0;
	input_taken = 1;
	while (input_len <= MAX_HOOK_INPUT) {
		if (input_len == cap) {
			cap *= 2;
			char *grown = realloc(input, cap);
			if (!grown) return 0;
			input = grown;
		}
		size_t want = cap - input_len;
		if (want > MAX_HOOK_INPUT + 1 - input_len) want = MAX_HOOK_INPUT + 1 - input_len;
		ssize_t n = read(0, input + input_len, want);
		if (n < 0 && errno == EINTR) continue;
		if (n < 0) return 0;
		if (n == 0) break;
		input_len += (size_t)n;
	}
	return 1;
}

/*
 * Waits until `fd` has something to read (or its end): the taker's socket is the server's, non-blocking
 * (its flags are shared with the server's copy, so they are left as they are), and the client's go
 * comes only once it has written what came before.
 */
static int wait_readable(int fd) {
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int r;
	do r = poll(&p, 1, -1);
	while (r < 0 && errno == EINTR);
	return r == 1;
}

/*
 * The launch's taker, for a run the server serves: the server spawns `sbx-warm --take-stdio FD PID
 * FILE ARGS...` in place of FILE ARGS... (src/backend/host/exec.ts StdioFrom), FD a connection only the
 * client PID can have made. The client's descriptors 0, 1 and 2 arrive there with SCM_RIGHTS; they go
 * in place of this process's (/dev/null), and FILE is exec'd with the sandbox's environment, as the
 * server would have spawned it. Nothing arrives, or from another process: exit 125, FILE never run.
 */
static int take_stdio(int argc, char **argv) {
	if (argc < 5) return 125;
	int sock = atoi(argv[2]);
	pid_t want = (pid_t)atoi(argv[3]);
	struct ucred cred;
	socklen_t cred_len = sizeof cred;
	if (sock <= 2 || want <= 0 || getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) < 0 ||
	    cred.pid != want || cred.uid != getuid())
		return 125;
	char byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(3 * sizeof(int))];
	} control;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof control.buf};
	ssize_t n;
	do n = wait_readable(sock) ? recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) : -1;
	while (n < 0 && (errno == EINTR || errno == EAGAIN));
	struct cmsghdr *c = n == 1 ? CMSG_FIRSTHDR(&msg) : NULL;
	if (!c || (msg.msg_flags & MSG_CTRUNC) || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(3 * sizeof(int)))
		return 125;
	int fds[3];
	memcpy(fds, CMSG_DATA(c), sizeof fds);
	/* 0 to 2 are taken (/dev/null), so what arrived is above them: no dup2 below overwrites another's source. */
	for (int i = 0; i < 3; i++)
		if (fds[i] <= 2 || dup2(fds[i], i) < 0) return 125;
	/* The client's go: it has written sbx's lines said before the launch, which must come before the command's. */
	char go;
	do n = wait_readable(sock) ? read(sock, &go, 1) : -1;
	while (n < 0 && (errno == EINTR || errno == EAGAIN));
	if (n != 1 || go != 'G') return 125;
	close(sock);
	execvp(argv[4], argv + 4);
	fprintf(stderr, "sbx: cannot start %s: %s\n", argv[4], strerror(errno));
	return 125;
}

static int control_fd = -1;
/* Set once the server says the launch is starting: before, nothing runs yet to pass a signal to. */
static volatile sig_atomic_t launching;
/* Signals this process was started with ignored (a background job's SIGINT): ignored until the launch, as by `sbx run`. */
static volatile sig_atomic_t ignored_before[NSIG];

/*
 * A signal for the run: passed to the server, which passes it on as `sbx run` passes its own. Before
 * the launch this process dies of it, as `sbx run` would before its command starts; the server sees
 * the connection close and ends the run, and the taker, without its go, never starts the launch.
 */
static void forward_signal(int sig) {
	if (!launching) {
		if (ignored_before[sig]) return;
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	int saved = errno;
	unsigned char m[2] = {'S', (unsigned char)sig};
	ssize_t ignored = write(control_fd, m, 2);
	(void)ignored;
	errno = saved;
}

/* Reads exactly `len` bytes, waiting as long as it takes (a run lasts what its command does). */
static int read_all(int fd, void *buf, size_t len) {
	size_t done = 0;
	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) return 0;
		done += (size_t)n;
	}
	return 1;
}

static int read_u32_all(int fd, uint32_t *v) {
	unsigned char b[4];
	if (!read_all(fd, b, 4)) return 0;
	*v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return 1;
}

/* `len` bytes from the server to `out`, in pieces: 0 when the server's side ends; *failed set (and the rest drained) when `out` fails. */
static int relay(int fd, uint32_t len, int out, int *failed, int *error) {
	char buf[65536];
	while (len > 0) {
		size_t want = len < sizeof buf ? len : sizeof buf;
		if (!read_all(fd, buf, want)) return 0;
		if (!*failed && !write_full(out, buf, want)) {
			*failed = 1;
			*error = errno;
		}
		len -= (uint32_t)want;
	}
	return 1;
}

/*
 * After a run's go: sends this process's descriptors 0, 1 and 2 to the socket the server names, then
 * relays what the server says until the run's exit status. Anything wrong before the descriptors are
 * sent means the path without a server (the server runs nothing without them).
 */
static int serve_run(int fd, pid_t server, const struct timespec *deadline) {
	uint32_t len;
	char *path = read_str(fd, &len, deadline);
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (!path || len == 0 || len >= sizeof addr.sun_path || memchr(path, '\0', len)) fallback();
	memcpy(addr.sun_path, path, (size_t)len + 1);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct ucred cred;
	socklen_t cred_len = sizeof cred;
	if (s < 0 || connect(s, (struct sockaddr *)&addr, sizeof addr) < 0 ||
	    getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) < 0 || cred.pid != server)
		fallback();
	int fds[3] = {0, 1, 2};
	char byte = 'D';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof fds)];
	} control;
	memset(&control, 0, sizeof control);
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof control.buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof fds);
	memcpy(CMSG_DATA(c), fds, sizeof fds);
	ssize_t sent;
	do sent = sendmsg(s, &msg, MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	if (sent != 1) fallback();

	/* The run is the server's now: its signals go there, and this process waits for its end. */
	control_fd = fd;
	struct sigaction sa = {.sa_handler = forward_signal, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++) {
		struct sigaction before;
		sigaction(forwarded[i], NULL, &before);
		ignored_before[forwarded[i]] = before.sa_handler == SIG_IGN;
		sigaction(forwarded[i], &sa, NULL);
	}
	for (;;) {
		char type;
		uint32_t n;
		int failed = 0, error = 0;
		if (!read_all(fd, &type, 1)) break;
		if (type == 'X') {
			if (!read_u32_all(fd, &n) || n > 255) break;
			return (int)n;
		}
		if (type == 'E') {
			if (!read_u32_all(fd, &n) || !relay(fd, n, 2, &failed, &error)) break;
			continue;
		}
		if (type == 'L') {
			/* Everything before is written: the taker may start the launch (a run without it, --capture, ignores this). */
			launching = 1;
			ssize_t ignored = send(s, "G", 1, MSG_NOSIGNAL);
			(void)ignored;
			continue;
		}
		if (type != 'O' || !read_u32_all(fd, &n) || !relay(fd, n, 1, &failed, &error)) break;
		/* The report did not reach stdout: said on stderr, as src/cli/run-command.ts emitReport says it. */
		uint32_t before_len, after_len;
		struct timespec soon;
		clock_gettime(CLOCK_MONOTONIC, &soon);
		soon.tv_sec += REPLY_TIMEOUT_MS / 1000;
		char *before = read_str(fd, &before_len, &soon);
		char *after = before ? read_str(fd, &after_len, &soon) : NULL;
		if (!after) break;
		if (failed) {
			const char *name = strerrorname_np(error);
			write_full(2, before, before_len);
			write_full(2, name ? name : strerror(error), strlen(name ? name : strerror(error)));
			write_full(2, after, after_len);
		}
		free(before);
		free(after);
	}
	static const char gone[] = "sbx: the warm server went away before the run ended; its outcome is unknown\n";
	write_full(2, gone, sizeof gone - 1);
	return 125;
}

int main(int argc, char **argv) {
	if (argc >= 2 && strcmp(argv[1], "--take-stdio") == 0) return take_stdio(argc, argv);
	if (argc < 4 || (strcmp(argv[3], "hook") != 0 && strcmp(argv[3], "run") != 0)) {
		fprintf(stderr, "usage: sbx-warm NODE SCRIPT hook|run ARGS... (started by bin/sbx.js)\n");
		return 2;
	}
	int run = run_mode = strcmp(argv[3], "run") == 0;
	node_arg = argv[1];
	node_argv = argv + 1; /* NODE SCRIPT hook|run ARGS... */
	/* A closed standard descriptor would be the socket's number, and the answer would go there. */
	for (int std = 0; std < 3; std++)
		if (fcntl(std, F_GETFD) < 0 && open("/dev/null", O_RDWR) != std) return 2;
	signal(SIGPIPE, SIG_IGN);

	char path[sizeof(((struct sockaddr_un *)0)->sun_path)], node[PATH_MAX], cwd[PATH_MAX];
	/* The cwd is where the error messages show paths from, as Node's process.cwd() would. */
	if (!socket_path(path, sizeof path) || !node_real_path(node) || !getcwd(cwd, sizeof cwd)) fallback();
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) fallback();
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	memcpy(addr.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) fallback();
	struct ucred cred;
	socklen_t cred_len = sizeof cred;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) < 0 || cred.uid != geteuid() ||
	    !trusted_peer(cred.pid, node))
		fallback();

	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += REPLY_TIMEOUT_MS / 1000;
	char hello[4 + NONCE_LEN], nonce[NONCE_LEN + 1];
	if (!read_full(fd, hello, sizeof hello, &deadline) || memcmp(hello, "SBX1", 4) != 0) fallback();
	memcpy(nonce, hello + 4, NONCE_LEN);
	nonce[NONCE_LEN] = '\0';
	for (size_t i = 0; i < NONCE_LEN; i++)
		if (!((nonce[i] >= 'a' && nonce[i] <= 'z') || (nonce[i] >= '0' && nonce[i] <= '9'))) fallback();
	if (prctl(PR_SET_NAME, nonce) < 0) fallback();

	struct out o = {0};
	put(&o, "SBX1", 4);
	put_u32(&o, (uint32_t)getpid());
	put_str(&o, SBX_BUILD, strlen(SBX_BUILD));
	put_str(&o, node, strlen(node));
	put_str(&o, cwd, strlen(cwd));
	put_u32(&o, (uint32_t)(isatty(0) | isatty(1) << 1 | isatty(2) << 2));
	put_u32(&o, (uint32_t)(argc - 3));
	for (int i = 3; i < argc; i++) put_str(&o, argv[i], strlen(argv[i]));
	uint32_t nenv = 0;
	for (char **e = environ; *e; e++) nenv++;
	put_u32(&o, nenv);
	for (char **e = environ; *e; e++) put_str(&o, *e, strlen(*e));
	if (o.failed || !write_full(fd, o.buf, o.len)) fallback();
	/* The server says go only for a call it serves (a plain command line, this build, for a run one it
	   can run as `sbx run` here would): anything else, `--help` say, goes on without it, before the
	   input is read. */
	char go;
	if (!read_full(fd, &go, 1, &deadline) || go != 'Y') fallback();
	if (run) return serve_run(fd, cred.pid, &deadline);

	if (!read_input()) fallback();
	o.len = 0;
	put_str(&o, input, input_len);
	if (o.failed || !write_full(fd, o.buf, o.len)) fallback();
	free(o.buf);

	uint32_t status, out_len, fail_len;
	char magic[4];
	if (!read_full(fd, magic, 4, &deadline) || memcmp(magic, "SBX1", 4) != 0 || !read_u32(fd, &status, &deadline) ||
	    status > 255)
		fallback();
	char *out = read_str(fd, &out_len, &deadline);
	char *on_failure = out ? read_str(fd, &fail_len, &deadline) : NULL;
	if (!on_failure) fallback();
	close(fd);
	/* As src/cli/hook/hook.ts writes its answer: a stdout that fails blocks the call (2), with the reason on stderr. */
	if (out_len > 0 && !write_full(1, out, out_len)) {
		write_full(2, on_failure, fail_len);
		return 2;
	}
	return (int)status;
}
