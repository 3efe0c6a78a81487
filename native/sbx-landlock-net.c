/*
 * The network judge of sbx-landlock. Two modes (sbx-landlock-net.h):
 *
 * NET_LANDLOCK, for `net=filtered` under the landlock backend (src/backend/landlock/). Without a
 * network namespace the command shares the host's network, and Landlock (ABI 4) can limit TCP by port
 * only, never by address: "connect to 443" would be any host's 443. So the command gets no TCP right at
 * all from Landlock, and its connect() calls go to the monitor instead, by seccomp user notification
 * (seccomp_unotify(2)):
 *
 *   connect()  the monitor copies the address out of the command's memory once (process_vm_readv, or
 *              /proc/TID/mem where an outer seccomp profile denies it),
 *              checks that the notification is still pending (so the thread id it read through was
 *              the caller's), takes the socket itself (pidfd_getfd on a PIDFD_THREAD pidfd: a thread
 *              that unshared its descriptor table is read right), checks it is a TCP socket, and
 *              connect()s its own duplicate to an address it builds itself: 127.0.0.1:PORT when the
 *              command named one of sbx's ports there, else sbx's HTTP proxy, where the connection
 *              is captured (below). The kernel never re-reads the command's memory for the call (no
 *              SECCOMP_USER_NOTIF_FLAG_CONTINUE): nothing can be swapped between the check and the
 *              use. Everything else is answered EACCES and reported.
 *   listen()   denied and reported: a listening socket autobinds a port past Landlock's bind rule,
 *              and would take connections from the host's network.
 *   socket()   AF_INET and AF_INET6 sockets that are not plain TCP (UDP, raw, SCTP, MPTCP: Landlock's
 *              TCP rules do not see them) are denied and reported; other families are the main
 *              filter's to judge (src/backend/landlock/seccomp-rules.ts, landlockSeccompRules).
 *
 * NET_NAMESPACE, inside a sandbox that has its own network namespace (bwrap, nsjail: only `lo`, which
 * is the boundary). Only connect() is sent to the monitor, and only to capture: a TCP connect to an
 * address off `lo` is captured into the bridge's proxy port (src/network/host/bridge.cjs announces
 * it); every other connect is let through to the kernel as the command made it
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE, which re-reads the command's memory: harmless here, since
 * whatever the address becomes, the namespace has no route but `lo`).
 *
 * A capture (docs/DESIGN.md "Transparent capture"): the monitor connects its duplicate of the
 * command's socket to 127.0.0.1:<proxy port>, writes
 *   CONNECT IP:PORT HTTP/1.1\r\nHost: IP:PORT\r\nX-Sbx-Capture: 1\r\n\r\n
 * with the address it copied ([IPv6]:PORT; an IPv4-mapped IPv6 address as plain IPv4), reads exactly
 * the response head (byte by byte: nothing after it is the monitor's), and answers the command's
 * connect() 0 on a 200, ECONNREFUSED (reported) on anything else, an end or 10 s of silence. Each
 * capture runs on a thread of its own, at most CAPTURE_MAX at once (EAGAIN beyond). The exchange never
 * changes the socket's flags: non-blocking sends and receives (MSG_DONTWAIT) and poll() serve a
 * blocking and a non-blocking socket alike, and a non-blocking one gets 0 once the tunnel is up. The
 * command could send the same preamble itself on the proxy port: it gets nothing a plain CONNECT would
 * not (the proxy applies the same rules), so the header is a marker, never a privilege.
 *
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
#include <time.h>
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
/* Captures in flight at once: each holds a thread and the command's blocked connect(). */
#define CAPTURE_MAX 64
/* How long a capture waits for sbx's proxy (its connect, the preamble, the response head). */
#define CAPTURE_TIMEOUT_MS 10000
/* The longest response head the monitor reads from the proxy. */
#define HEAD_MAX 4096
/* Both architectures are little-endian: an argument's low 32 bits come first. */
#define ARG_LOW(n) (offsetof(struct seccomp_data, args) + 8 * (n))

static unsigned reported, dropped, capturing;

int net_install_filter(enum net_mode mode) {
	/* Jump offsets count from the next instruction; labels: 16 allow, 17 notify. */
	struct sock_filter landlock[] = {
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
	/* In a namespace the main filter judges the architecture and every other call (sbx's seccomp rules). */
	struct sock_filter namespace[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 0, 2),
		/* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		/* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_connect, 1, 0),
		/* 4 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* 5 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};
	struct sock_fprog prog = mode == NET_NAMESPACE
		? (struct sock_fprog){ .len = sizeof namespace / sizeof namespace[0], .filter = namespace }
		: (struct sock_fprog){ .len = sizeof landlock / sizeof landlock[0], .filter = landlock };
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

/* A connect() handed to a capture thread: the duplicate, and the destination as the monitor copied it. */
struct capture {
	int listener, nr;
	uint64_t id;
	int sock, family; /* the duplicate, and its domain */
	char address[INET6_ADDRSTRLEN]; /* IPv4 when the command named an IPv4-mapped IPv6 address */
	int port;
};

/* What became of one notification: the errno to answer (0: the monitor connected), and what to report. */
struct verdict {
	int error;
	int proceed; /* let the kernel run the call as made (NET_NAMESPACE only) */
	struct capture *capture; /* handed to a capture thread, which answers */
	int report; /* a denial of policy, written to the status descriptor */
	int captured; /* the denial came from sbx's proxy, on a captured connect */
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

/* The destination the command named, from the monitor's copy; an IPv4-mapped IPv6 address as IPv4. */
struct destination {
	int family; /* AF_INET, AF_INET6; 0: neither, or too short */
	struct in_addr v4;
	struct in6_addr v6;
	unsigned port;
};

static struct destination destination_of(const struct sockaddr_storage *sa, size_t len) {
	struct destination d = { 0 };
	if (sa->ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)sa;
		d.family = AF_INET, d.v4 = in->sin_addr, d.port = ntohs(in->sin_port);
	} else if (sa->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		d.port = ntohs(in6->sin6_port);
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) d.family = AF_INET, memcpy(&d.v4, &in6->sin6_addr.s6_addr[12], 4);
		else d.family = AF_INET6, d.v6 = in6->sin6_addr;
	}
	return d;
}

/* The address the command passed, as the report (and a capture's preamble) shows it. */
static void describe(const struct destination *d, char *address, size_t len, int *port) {
	if (d->family == AF_INET) inet_ntop(AF_INET, &d->v4, address, (socklen_t)len);
	else if (d->family == AF_INET6) inet_ntop(AF_INET6, &d->v6, address, (socklen_t)len);
	if (d->family) *port = (int)d->port;
}

/* Whether the destination stays on this host's (or this namespace's) `lo`: 127.0.0.0/8, ::1, 0.0.0.0, ::. */
static int is_local(const struct destination *d) {
	if (d->family == AF_INET) return (ntohl(d->v4.s_addr) >> 24) == 127 || d->v4.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_LOOPBACK(&d->v6) || IN6_IS_ADDR_UNSPECIFIED(&d->v6);
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

/* The loopback address `port` on the duplicate's own family (IPv4-mapped on an IPv6 socket). */
static socklen_t loopback(int family, unsigned port, struct sockaddr_storage *to) {
	memset(to, 0, sizeof *to);
	if (family == AF_INET) {
		struct sockaddr_in *in = (void *)to;
		in->sin_family = AF_INET, in->sin_port = htons((uint16_t)port), in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		return sizeof *in;
	}
	struct sockaddr_in6 *in6 = (void *)to;
	in6->sin6_family = AF_INET6, in6->sin6_port = htons((uint16_t)port);
	in6->sin6_addr.s6_addr[10] = in6->sin6_addr.s6_addr[11] = 0xff;
	in6->sin6_addr.s6_addr[12] = 127, in6->sin6_addr.s6_addr[15] = 1;
	return sizeof *in6;
}

static void start_capture(int listener, const struct seccomp_notif *req, int sock, int family,
                          const struct destination *d, struct verdict *v) {
	if (__atomic_add_fetch(&capturing, 1, __ATOMIC_RELAXED) > CAPTURE_MAX) {
		__atomic_sub_fetch(&capturing, 1, __ATOMIC_RELAXED);
		v->error = EAGAIN, v->report = 1, v->what = "too many connections being captured at once";
		return (void)close(sock);
	}
	struct capture *c = calloc(1, sizeof *c);
	if (!c) {
		__atomic_sub_fetch(&capturing, 1, __ATOMIC_RELAXED);
		return (void)(close(sock), v->error = EAGAIN);
	}
	c->listener = listener, c->nr = req->data.nr, c->id = req->id, c->sock = sock, c->family = family;
	describe(d, c->address, sizeof c->address, &c->port);
	v->capture = c;
}

static void judge_connect(int listener, const struct seccomp_notif *req, const struct net_config *c, struct verdict *v) {
	int namespaced = c->mode == NET_NAMESPACE;
	int fd = (int)req->data.args[0];
	int addrlen = (int)req->data.args[2];
	struct sockaddr_storage sa = { 0 };
	size_t len = addrlen < 0 ? 0 : (size_t)addrlen > sizeof sa ? sizeof sa : (size_t)addrlen;
	int pidfd = (int)syscall(SYS_pidfd_open, req->pid, PIDFD_THREAD);
	/* Before Linux 6.9 there is no PIDFD_THREAD (EINVAL). A thread-group leader's own pidfd then reads the
	 * same descriptor table; any other thread's cannot be opened (EINVAL again), so its connect is left to
	 * the kernel (in a namespace: no route) and never read through another thread's table. */
	if (pidfd < 0 && errno == EINVAL) pidfd = (int)syscall(SYS_pidfd_open, req->pid, 0);
	if (pidfd < 0) return namespaced ? (void)(v->proceed = 1) : fault(v, "pidfd_open");
	/* The address is read once, into the monitor's memory; everything below uses this copy. */
	if (len > 0 && read_caller(req->pid, req->data.args[1], &sa, len) < 0) {
		int err = errno;
		close(pidfd);
		if (namespaced) return (void)(v->proceed = 1); /* the kernel answers a bad pointer itself */
		if (err == EFAULT || err == EIO) return (void)(v->error = EFAULT); /* as the kernel answers a bad pointer */
		errno = err;
		return fault(v, "reading the address (process_vm_readv, /proc/TID/mem)");
	}
	struct destination d = destination_of(&sa, len);
	describe(&d, v->address, sizeof v->address, &v->port);
	/* In a namespace, what stays on its `lo` (or is no IP address at all) is the kernel's to do as asked. */
	if (namespaced && (!d.family || is_local(&d))) return (void)(close(pidfd), v->proceed = 1);
	/* Still pending: the thread id the pidfd and the read went through was the caller's, not a reused one. */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0) return (void)(close(pidfd), v->error = EINTR);
	int sock = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	int err = errno;
	close(pidfd);
	if (sock < 0 && (err == EBADF || namespaced)) return (void)(err == EBADF ? (v->error = EBADF) : (v->proceed = 1));
	if (sock < 0) return (void)(errno = err), fault(v, "pidfd_getfd");
	int domain = -1, type = -1, protocol = -1;
	socklen_t n = sizeof(int);
	if (getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &domain, &n) < 0) {
		if (namespaced) v->proceed = 1;
		else v->error = errno == ENOTSOCK ? ENOTSOCK : EACCES;
		return (void)close(sock);
	}
	getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &n);
	getsockopt(sock, SOL_SOCKET, SO_PROTOCOL, &protocol, &n);
	int tcp = (domain == AF_INET || domain == AF_INET6) && type == SOCK_STREAM && protocol == IPPROTO_TCP;
	if (namespaced && (!tcp || sa.ss_family != domain)) {
		v->proceed = 1; /* not TCP over IP: the namespace has no route for it off `lo` */
	} else if (!tcp) {
		deny(v, "connect on a socket other than TCP");
	} else if (sa.ss_family == AF_UNSPEC) {
		deny(v, "connect to AF_UNSPEC (disconnect)");
	} else if (sa.ss_family != domain) {
		deny(v, "connect to an address of another family");
	} else if (!d.family) {
		v->error = EINVAL; /* as the kernel answers a short address */
	} else if (!held_to_loopback(sock)) {
		deny(v, "connect on a socket bound to a network device other than lo");
	} else if (!namespaced && d.family == AF_INET && d.v4.s_addr == htonl(INADDR_LOOPBACK) && port_allowed(c, d.port)) {
		/* Built here, from the checked values only. A non-blocking socket answers EINPROGRESS,
		 * as its own connect() would: the caller polls its descriptor as usual. */
		struct sockaddr_storage to;
		socklen_t tolen = loopback(domain, d.port, &to);
		v->error = connect(sock, (struct sockaddr *)&to, tolen) < 0 ? errno : 0;
	} else if (namespaced || c->capture_port) {
		return start_capture(listener, req, sock, domain, &d, v);
	} else {
		deny(v, "direct connection");
	}
	close(sock);
}

static const char *type_name(int type) {
	switch (type & 0xf) {
	case SOCK_DGRAM: return "UDP (DNS, QUIC) is not carried: clients fall back to TCP; sbx answers DNS over TCP";
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
	const char *captured = v->captured ? ", \"captured\": true" : "";
	int n = snprintf(line, sizeof line, "{ \"denied\": { \"call\": \"%s\", \"what\": \"%s\"%s%s } }\n", call_name(nr),
	                 v->what, where, captured);
	if (write(status_fd, line, (size_t)n) < 0) { /* sbx is gone: the run is ending anyway */ }
}

static void respond(int listener, uint64_t id, const struct verdict *v) {
	struct seccomp_notif_resp resp;
	memset(&resp, 0, sizeof resp);
	resp.id = id, resp.error = v->proceed ? 0 : -v->error;
	if (v->proceed) resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT) { /* the listener is going */ }
}

static struct { int listener, status_fd; struct net_config config; } judged;
static pthread_mutex_t announce_lock = PTHREAD_MUTEX_INITIALIZER;

/* A deadline CAPTURE_TIMEOUT_MS from now, and the milliseconds left before it. */
static struct timespec deadline_in(long ms) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000, t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
	return t;
}

static int left_ms(const struct timespec *deadline) {
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long ms = (deadline->tv_sec - now.tv_sec) * 1000 + (deadline->tv_nsec - now.tv_nsec) / 1000000L;
	return ms < 0 ? 0 : (int)ms;
}

/* 0 once fd is ready for `events`; -1 (ETIMEDOUT) past the deadline. The monitor's threads take no signal. */
static int wait_for(int fd, short events, const struct timespec *deadline) {
	for (;;) {
		int ms = left_ms(deadline);
		if (ms == 0) return errno = ETIMEDOUT, -1;
		struct pollfd p = { .fd = fd, .events = events };
		int n = poll(&p, 1, ms);
		if (n > 0) return 0;
		if (n < 0 && errno != EINTR) return -1;
	}
}

/*
 * NET_NAMESPACE: sbx's HTTP proxy port inside, as the bridge announced it (one decimal line, written
 * once it listens and before it starts the command, so a capture never waits long). Read once.
 */
static unsigned proxy_port(void) {
	pthread_mutex_lock(&announce_lock);
	if (!judged.config.capture_port && judged.config.announce_fd >= 0) {
		char buf[16] = { 0 };
		size_t n = 0;
		struct timespec deadline = deadline_in(CAPTURE_TIMEOUT_MS);
		while (n < sizeof buf - 1 && !memchr(buf, '\n', n) && wait_for(judged.config.announce_fd, POLLIN, &deadline) == 0) {
			ssize_t r = read(judged.config.announce_fd, buf + n, sizeof buf - 1 - n);
			if (r <= 0) break;
			n += (size_t)r;
		}
		char *end;
		unsigned long port = strtoul(buf, &end, 10);
		if (end != buf && *end == '\n' && port > 0 && port <= 65535) judged.config.capture_port = (uint16_t)port;
		close(judged.config.announce_fd);
		judged.config.announce_fd = -1;
	}
	unsigned port = judged.config.capture_port;
	pthread_mutex_unlock(&announce_lock);
	return port;
}

static int send_all(int sock, const char *buf, size_t len, const struct timespec *deadline) {
	while (len > 0) {
		ssize_t n = send(sock, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0) buf += n, len -= (size_t)n;
		else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (wait_for(sock, POLLOUT, deadline) < 0) return -1;
		} else return -1;
	}
	return 0;
}

/* The status code of the proxy's answer, reading exactly its head; -1 when it ended, was late or malformed. */
static int read_status(int sock, const struct timespec *deadline) {
	char head[HEAD_MAX + 1];
	size_t n = 0;
	while (!(n >= 4 && memcmp(head + n - 4, "\r\n\r\n", 4) == 0)) {
		if (n == HEAD_MAX) return -1;
		ssize_t r = recv(sock, head + n, 1, MSG_DONTWAIT);
		if (r == 1) n++;
		else if (r == 0) return -1;
		else if (errno != EAGAIN && errno != EINTR) return -1;
		else if (wait_for(sock, POLLIN, deadline) < 0) return -1;
	}
	head[n] = '\0';
	if (n < 12 || strncmp(head, "HTTP/1.", 7) != 0 || head[8] != ' ') return -1;
	int code = 0;
	for (int i = 9; i < 12; i++) {
		if (head[i] < '0' || head[i] > '9') return -1;
		code = code * 10 + (head[i] - '0');
	}
	return code;
}

/* The whole exchange on the duplicate: 0 once the proxy said 200, else what to report. */
static const char *exchange(struct capture *c, unsigned proxy, int *status) {
	*status = 0;
	if (!proxy) return "no proxy port to capture into (the bridge announced none)";
	struct timespec deadline = deadline_in(CAPTURE_TIMEOUT_MS);
	struct sockaddr_storage to;
	socklen_t tolen = loopback(c->family, proxy, &to);
	if (connect(c->sock, (struct sockaddr *)&to, tolen) < 0) {
		if (errno != EINPROGRESS) return "sbx's proxy could not be reached";
		int err = 0;
		socklen_t n = sizeof err;
		if (wait_for(c->sock, POLLOUT, &deadline) < 0 || getsockopt(c->sock, SOL_SOCKET, SO_ERROR, &err, &n) < 0 || err)
			return "sbx's proxy could not be reached";
	}
	char target[INET6_ADDRSTRLEN + 8], preamble[256];
	int v6 = strchr(c->address, ':') != NULL;
	snprintf(target, sizeof target, v6 ? "[%s]:%d" : "%s:%d", c->address, c->port);
	int n = snprintf(preamble, sizeof preamble, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nX-Sbx-Capture: 1\r\n\r\n", target, target);
	if (send_all(c->sock, preamble, (size_t)n, &deadline) < 0) return "sbx's proxy did not take the captured connection";
	*status = read_status(c->sock, &deadline);
	if (*status == 200) return NULL;
	return *status < 0 ? "sbx's proxy did not answer the captured connection" : "sbx's proxy refused the captured connection";
}

static void *capture_run(void *arg) {
	struct capture *c = arg;
	struct verdict v = { .port = c->port };
	int status;
	const char *refused = exchange(c, proxy_port(), &status);
	if (refused) {
		/* Back to unconnected (tcp_disconnect, which also drops what the proxy sent after its head), so
		 * that the socket is what a refused connect() leaves: the client may close it or try again. */
		struct sockaddr unspec = { .sa_family = AF_UNSPEC };
		if (connect(c->sock, &unspec, sizeof unspec) < 0) { /* not connected after all: nothing to undo */ }
		v.error = ECONNREFUSED, v.report = v.captured = 1, v.what = refused;
		memcpy(v.address, c->address, sizeof v.address);
		/* The proxy reported its own refusal (the name, the rule): the judge adds only what the proxy could not. */
		if (status != 403 && judged.status_fd >= 0) report(judged.status_fd, c->nr, &v);
	}
	respond(c->listener, c->id, &v);
	close(c->sock);
	free(c);
	__atomic_sub_fetch(&capturing, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Runs a capture on a thread of its own (signals stay blocked: it inherits the judge's mask). */
static int spawn_capture(struct capture *c) {
	pthread_attr_t attr;
	pthread_t thread;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 128 * 1024);
	int err = pthread_create(&thread, &attr, capture_run, c);
	pthread_attr_destroy(&attr);
	return err;
}

/* Receives, judges and answers one notification; -1 when the listener failed. */
static int judge_one(int listener, const struct net_config *c, int status_fd, struct verdict *v) {
	struct seccomp_notif req;
	memset(&req, 0, sizeof req); /* the kernel refuses a request buffer that is not zeroed */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
		return errno == EINTR || errno == ENOENT ? 0 : -1; /* ENOENT: the caller died or was interrupted meanwhile */
	memset(v, 0, sizeof *v);
	judge(listener, &req, c, v);
	if (v->capture) {
		if (spawn_capture(v->capture) == 0) return 0;
		close(v->capture->sock);
		free(v->capture);
		__atomic_sub_fetch(&capturing, 1, __ATOMIC_RELAXED);
		v->capture = NULL, v->error = EAGAIN;
	}
	if (v->report && status_fd >= 0) report(status_fd, req.data.nr, v);
	respond(listener, req.id, v);
	return 0;
}

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
		int listener = net_install_filter(NET_LANDLOCK);
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
	struct net_config none = { .mode = NET_LANDLOCK, .announce_fd = -1 };
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
