/*
 * The network judge of sbx-landlock, for `net=filtered` (an allow-list network under the landlock
 * backend, src/backend/landlock/). Without a network namespace the command shares the host's
 * network, and Landlock (ABI 4) can limit TCP by port only, never by address: "connect to 443" would
 * be any host's 443. So the command gets no TCP right at all from Landlock, and its connect() calls go
 * to the monitor instead, by seccomp user notification (seccomp_unotify(2)):
 *
 *   connect()  the monitor copies the address out of the command's memory once (process_vm_readv, or
 *              /proc/TID/mem where an outer seccomp profile denies it),
 *              checks that the notification is still pending (so the thread id it read through was
 *              the caller's), takes the socket itself (pidfd_getfd on a PIDFD_THREAD pidfd: a thread
 *              that unshared its descriptor table is read right), checks it is an AF_INET TCP socket,
 *              and only when the address is 127.0.0.1 and one of sbx's ports does it connect() its own
 *              duplicate to an address it builds itself. The kernel never re-reads the command's
 *              memory for the call (no SECCOMP_USER_NOTIF_FLAG_CONTINUE): nothing can be swapped
 *              between the check and the use. Everything else is answered EACCES and reported.
 *   listen()   denied and reported: a listening socket autobinds a port past Landlock's bind rule,
 *              and would take connections from the host's network.
 *   socket()   AF_INET and AF_INET6 sockets that are not plain TCP (UDP, raw, SCTP, MPTCP: Landlock's
 *              TCP rules do not see them) are denied and reported; other families are the main
 *              filter's to judge (src/backend/landlock/seccomp-rules.ts, landlockSeccompRules).
 *
 * The monitor runs outside the Landlock domain, so its own connect() is not Landlock's to refuse.
 * If the monitor stops judging, it closes the listener and the kernel fails every pending and later
 * call with ENOSYS: closed, never open.
 */
#define _GNU_SOURCE
#include "sbx-landlock-net.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* Linux 6.9, include/uapi/linux/pidfd.h; Debian 12's headers predate it */
#endif
#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "sbx-landlock: the network judge knows x86_64 and aarch64 only"
#endif

/* Denials written to the status descriptor; a looping command must not flood sbx's memory. */
#define MAX_REPORTED 256
/* Both architectures are little-endian: an argument's low 32 bits come first. */
#define ARG_LOW(n) (offsetof(struct seccomp_data, args) + 8 * (n))

static unsigned reported, dropped;

int net_install_filter(void) {
	/* Jump offsets count from the next instruction; labels: 16 allow, 17 notify. */
	struct sock_filter f[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
		/* 2 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		/* 3 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		/* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_connect, 12, 0),
		/* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_listen, 11, 0),
		/* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 9),
		/* 7 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(0)),
		/* 8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 1, 0),
		/* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 0, 6),
		/* 10 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(1)),
		/* 11 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf), /* the type without SOCK_NONBLOCK, SOCK_CLOEXEC */
		/* 12 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_STREAM, 0, 4),
		/* 13 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(2)),
		/* 14 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
		/* 15 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_TCP, 0, 1),
		/* 16 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* 17 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};
	struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
}

int net_send_fd(int sock, int fd) {
	char byte = 0, control[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET, cm->cmsg_type = SCM_RIGHTS, cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof fd);
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

int net_recv_fd(int sock) {
	char byte, control[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control };
	ssize_t n;
	while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {}
	struct cmsghdr *cm = n == 1 ? CMSG_FIRSTHDR(&msg) : NULL;
	if (!cm || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int))) return errno = EPROTO, -1;
	int fd;
	memcpy(&fd, CMSG_DATA(cm), sizeof fd);
	return fd;
}

/* What became of one notification: the errno to answer (0: the monitor connected), and what to report. */
struct verdict {
	int error;
	int report; /* a denial of policy, written to the status descriptor */
	const char *what; /* one phrase, from this file only: never bytes of the command's */
	char address[INET6_ADDRSTRLEN];
	int port; /* -1: none */
	const char *fault; /* a step of the mechanism that failed (the probe names it) */
	int fault_errno;
};

static void deny(struct verdict *v, const char *what) {
	v->error = EACCES, v->report = 1, v->what = what;
}

/* A step of the mechanism failed: the call is refused all the same, and reported as not inspected. */
static void fault(struct verdict *v, const char *step) {
	v->fault_errno = errno, v->fault = step, v->report = 1, v->error = EACCES;
	v->what = "the judge could not inspect the call";
}

static int port_allowed(const struct net_config *c, unsigned port) {
	for (size_t i = 0; i < c->n_ports; i++)
		if (c->ports[i] == port) return 1;
	return 0;
}

/* The address the command passed, as the report shows it. */
static void describe_address(const struct sockaddr_storage *sa, size_t len, struct verdict *v) {
	if (sa->ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)sa;
		inet_ntop(AF_INET, &in->sin_addr, v->address, sizeof v->address);
		v->port = ntohs(in->sin_port);
	} else if (sa->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, v->address, sizeof v->address);
		v->port = ntohs(in6->sin6_port);
	}
}

/*
 * Keeps the connection on lo whatever the command set on its socket beforehand. With SO_BINDTODEVICE
 * (no capability needed on a socket not yet bound to a device) the route to 127.0.0.1 is looked up on
 * that device, so the SYN would leave on a real interface with header fields the command chose (TTL,
 * TOS, MSS), and an IP_OPTIONS source route (where the kernel still lets an unprivileged caller set
 * one) would send it to a first hop the command named. Bound to lo, both stay on this host. A socket
 * already bound to lo is fine; to any other device, refused. The command cannot rebind it afterwards:
 * changing a bound device needs CAP_NET_RAW, which it has not.
 */
static int held_to_loopback(int sock) {
	char dev[IF_NAMESIZE + 1] = { 0 };
	socklen_t n = sizeof dev;
	if (getsockopt(sock, SOL_SOCKET, SO_BINDTODEVICE, dev, &n) < 0) return 0;
	if (n > 0 && dev[0] != '\0') return strcmp(dev, "lo") == 0;
	return setsockopt(sock, SOL_SOCKET, SO_BINDTODEVICE, "lo", 3) == 0;
}

/*
 * len bytes at addr in thread tid's memory, read once into buf. process_vm_readv first; where an outer
 * seccomp profile denies it (Docker's default profile allows it only with CAP_SYS_PTRACE) the same
 * bytes through /proc/TID/mem, which the kernel checks as it checks process_vm_readv (ptrace access,
 * which the monitor has over its own descendants) and no syscall filter names.
 */
static int read_caller(pid_t tid, uint64_t addr, void *buf, size_t len) {
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(tid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len) return 0;
	if (n >= 0 || (errno != EPERM && errno != ENOSYS)) return errno = n >= 0 ? EFAULT : errno, -1;
	char path[32];
	snprintf(path, sizeof path, "/proc/%d/mem", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return -1;
	n = pread(fd, buf, len, (off_t)addr);
	int err = errno;
	close(fd);
	if (n == (ssize_t)len) return 0;
	return errno = n >= 0 ? EFAULT : err, -1;
}

static void judge_connect(int listener, const struct seccomp_notif *req, const struct net_config *c, struct verdict *v) {
	int fd = (int)req->data.args[0];
	int addrlen = (int)req->data.args[2];
	struct sockaddr_storage sa = { 0 };
	size_t len = addrlen < 0 ? 0 : (size_t)addrlen > sizeof sa ? sizeof sa : (size_t)addrlen;
	int pidfd = (int)syscall(SYS_pidfd_open, req->pid, PIDFD_THREAD);
	if (pidfd < 0) return fault(v, "pidfd_open");
	/* The address is read once, into the monitor's memory; everything below uses this copy. */
	if (len > 0 && read_caller(req->pid, req->data.args[1], &sa, len) < 0) {
		int err = errno;
		close(pidfd);
		if (err == EFAULT || err == EIO) return (void)(v->error = EFAULT); /* as the kernel answers a bad pointer */
		errno = err;
		return fault(v, "reading the address (process_vm_readv, /proc/TID/mem)");
	}
	/* Still pending: the thread id the pidfd and the read went through was the caller's, not a reused one. */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0) return (void)(close(pidfd), v->error = EINTR);
	int sock = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	int err = errno;
	close(pidfd);
	if (sock < 0 && err == EBADF) return (void)(v->error = EBADF);
	if (sock < 0) return (void)(errno = err), fault(v, "pidfd_getfd");
	int domain = -1, type = -1, protocol = -1;
	socklen_t n = sizeof(int);
	if (getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &domain, &n) < 0) {
		v->error = errno == ENOTSOCK ? ENOTSOCK : EACCES;
		return (void)close(sock);
	}
	getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &n);
	getsockopt(sock, SOL_SOCKET, SO_PROTOCOL, &protocol, &n);
	describe_address(&sa, len, v);
	if (domain != AF_INET || type != SOCK_STREAM || protocol != IPPROTO_TCP) {
		deny(v, domain == AF_INET6 ? "connect on an IPv6 socket" : "connect on a socket other than IPv4 TCP");
	} else if (sa.ss_family == AF_UNSPEC) {
		deny(v, "connect to AF_UNSPEC (disconnect)");
	} else if (sa.ss_family != AF_INET) {
		deny(v, "connect to an address of another family");
	} else if (len < sizeof(struct sockaddr_in)) {
		v->error = EINVAL; /* as the kernel answers a short address */
	} else {
		const struct sockaddr_in *in = (const void *)&sa;
		unsigned port = ntohs(in->sin_port);
		if (in->sin_addr.s_addr != htonl(INADDR_LOOPBACK) || !port_allowed(c, port)) {
			deny(v, "direct connection");
		} else if (!held_to_loopback(sock)) {
			deny(v, "connect on a socket bound to a network device other than lo");
		} else {
			/* Built here, from the checked values only. A non-blocking socket answers EINPROGRESS,
			 * as its own connect() would: the caller polls its descriptor as usual. */
			struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
			to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			v->error = connect(sock, (struct sockaddr *)&to, sizeof to) < 0 ? errno : 0;
		}
	}
	close(sock);
}

static const char *type_name(int type) {
	switch (type & 0xf) {
	case SOCK_DGRAM: return "datagram (UDP)";
	case SOCK_RAW: return "raw";
	case SOCK_STREAM: return "stream, not TCP (SCTP, MPTCP)";
	default: return "other";
	}
}

static void judge(int listener, const struct seccomp_notif *req, const struct net_config *c, struct verdict *v) {
	v->port = -1;
	if (req->data.arch != NATIVE_ARCH) return deny(v, "foreign architecture");
	switch (req->data.nr) {
	case __NR_connect: return judge_connect(listener, req, c, v);
	case __NR_listen: return deny(v, "listen: the sandbox takes no connections");
	case __NR_socket: return deny(v, type_name((int)req->data.args[1]));
	default: return deny(v, "unexpected system call");
	}
}

static const char *call_name(int nr) {
	return nr == __NR_connect ? "connect" : nr == __NR_listen ? "listen" : nr == __NR_socket ? "socket" : "other";
}

/* One JSON line, one write(): atomic on a pipe (PIPE_BUF), so it never interleaves with the monitor's. */
static void report(int status_fd, int nr, const struct verdict *v) {
	if (__atomic_fetch_add(&reported, 1, __ATOMIC_RELAXED) >= MAX_REPORTED) {
		__atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	char line[512], where[128] = "";
	if (v->address[0]) snprintf(where, sizeof where, ", \"address\": \"%s\", \"port\": %d", v->address, v->port);
	int n = snprintf(line, sizeof line, "{ \"denied\": { \"call\": \"%s\", \"what\": \"%s\"%s } }\n", call_name(nr), v->what, where);
	if (write(status_fd, line, (size_t)n) < 0) { /* sbx is gone: the run is ending anyway */ }
}

/* Receives, judges and answers one notification; -1 when the listener failed. */
static int judge_one(int listener, const struct net_config *c, int status_fd, struct verdict *v) {
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	memset(&req, 0, sizeof req); /* the kernel refuses a request buffer that is not zeroed */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
		return errno == EINTR || errno == ENOENT ? 0 : -1; /* ENOENT: the caller died or was interrupted meanwhile */
	memset(v, 0, sizeof *v);
	judge(listener, &req, c, v);
	if (v->report && status_fd >= 0) report(status_fd, req.data.nr, v);
	memset(&resp, 0, sizeof resp);
	resp.id = req.id, resp.error = -v->error;
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT) return -1;
	return 0;
}

static struct { int listener, status_fd; struct net_config config; } judged;

static void *judge_loop(void *unused) {
	(void)unused;
	struct verdict v;
	while (judge_one(judged.listener, &judged.config, judged.status_fd, &v) == 0) {}
	close(judged.listener);
	return NULL;
}

/* The structures this file was built with must be the kernel's (a newer kernel may grow them). 0, or an errno. */
static int check_sizes(void) {
	struct seccomp_notif_sizes sizes;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0) return errno;
	if (sizes.seccomp_notif != sizeof(struct seccomp_notif) || sizes.seccomp_notif_resp != sizeof(struct seccomp_notif_resp))
		return EPROTO;
	return 0;
}

int net_start_judge(int listener, const struct net_config *config, int status_fd) {
	int bad = check_sizes();
	if (bad) return bad;
	judged.listener = listener, judged.status_fd = status_fd, judged.config = *config;
	pthread_t thread;
	sigset_t all, old;
	/* The judge takes no signal: the monitor's waitpid is the thread they are for. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = pthread_create(&thread, NULL, judge_loop, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err ? err : pthread_detach(thread);
}

unsigned net_denials_dropped(void) {
	return __atomic_load_n(&dropped, __ATOMIC_RELAXED);
}

/*
 * The whole mechanism tried once on a child of the probe: the filter with a listener, the listener
 * passed over a socketpair, then one connect() judged as in a run. Where an outer sandbox's seccomp
 * profile, a ptrace policy (Yama's ptrace_scope 2 or 3) or an existing listener (seccomp allows one
 * per filter chain: EBUSY) stops a step, that step is named. The connect is to 127.0.0.1:9 with no
 * port allowed: its denial means every step before the address check worked.
 */
const char *net_probe(char *why, size_t len) {
	int sv[2], bad = check_sizes();
	if (bad) return snprintf(why, len, "SECCOMP_GET_NOTIF_SIZES: %s", strerror(bad)), why;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) return snprintf(why, len, "socketpair: %s", strerror(errno)), why;
	pid_t pid = fork();
	if (pid < 0) return snprintf(why, len, "fork: %s", strerror(errno)), why;
	if (pid == 0) {
		close(sv[0]);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) _exit(10 + errno % 100);
		int listener = net_install_filter();
		if (listener < 0) _exit(100 + errno % 100);
		if (net_send_fd(sv[1], listener) < 0) _exit(3);
		close(listener);
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(9) };
		to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		_exit(connect(s, (struct sockaddr *)&to, sizeof to) < 0 && errno == EACCES ? 0 : 4);
	}
	close(sv[1]);
	int listener = net_recv_fd(sv[0]);
	close(sv[0]);
	struct verdict v = { 0 };
	const char *failed = NULL;
	struct net_config none = { .n_ports = 0 };
	if (listener >= 0) {
		struct pollfd p = { .fd = listener, .events = POLLIN };
		if (poll(&p, 1, 2000) != 1) failed = "no notification arrived";
		else if (judge_one(listener, &none, -1, &v) < 0) failed = "SECCOMP_IOCTL_NOTIF_RECV";
		if (failed) kill(pid, SIGKILL);
		close(listener);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
	if (code >= 100 && code < 200) return snprintf(why, len, "seccomp user notification: %s", strerror(code - 100)), why;
	if (code >= 10 && code < 100) return snprintf(why, len, "no_new_privs: %s", strerror(code - 10)), why;
	if (v.fault) return snprintf(why, len, "%s: %s", v.fault, strerror(v.fault_errno)), why;
	if (failed) return snprintf(why, len, "%s", failed), why;
	if (code != 0) return snprintf(why, len, "the probe's connect was not judged (exit %d)", code), why;
	return NULL;
}
