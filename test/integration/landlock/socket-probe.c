/*
 * Ways to reach the network that seccomp's socket() rule or Landlock's connect rule do not see, for
 * test/integration/landlock/bypass.test.ts. Each probe prints one line, "NAME ok" when the forbidden
 * thing worked, else "NAME STEP:ERRNO" naming the step that failed and its errno (strerrorname_np).
 *
 *   uring-udp PORT    io_uring_setup, IORING_OP_SOCKET(AF_INET, SOCK_DGRAM) (never passes socket(),
 *                     so seccomp's family rule cannot see it), then a datagram to 127.0.0.1:PORT
 *   uring-unix PATH   IORING_OP_SOCKET(AF_UNIX), connect() to the pathname socket PATH, send a line
 *   tfo-sendto PORT   sendto(0, MSG_FASTOPEN, 127.0.0.1:PORT) on the TCP socket inherited as stdin:
 *   tfo-sendmsg PORT    the kernel's fastopen path connects without Landlock's connect hook
 *   tfo-sendmmsg PORT
 *   tfo-connect PORT  setsockopt(TCP_FASTOPEN_CONNECT) on stdin's socket, then connect() and write
 *   hand-socket CMD...  runs CMD with a new, unconnected TCP socket as its stdin (how the tfo probes
 *                     get one under network none, where seccomp refuses socket(AF_INET))
 *
 *
 * Under an allow-list network (test/integration/landlock/network-judge.test.ts), each a direct way out:
 *   connect4 ADDR PORT    a TCP connect() to ADDR:PORT (IPv4), then a line sent
 *   connect6 ADDR PORT    the same from an AF_INET6 socket (::1, or ::ffff:127.0.0.1 mapped)
 *   mptcp ADDR PORT       the same from an IPPROTO_MPTCP socket (Landlock's TCP rules do not see MPTCP)
 *   udp PORT              a UDP datagram sent with sendto() to 127.0.0.1:PORT
 *   unspec ADDR PORT      connect() to ADDR:PORT (allowed), then connect(AF_UNSPEC) to dissolve it
 *   listen                listen() on a fresh TCP socket (autobinds an ephemeral port, past bind rules)
 *   thread ADDR PORT      connect4 from a second thread; `thread-unshared` after unshare(CLONE_FILES) there,
 *   thread-unshared ...   so that its descriptor table is not the process's
 *   bindtodevice DEV ADDR PORT  SO_BINDTODEVICE DEV, then connect4 (a 2 s send timeout bounds the SYN)
 *
 *   hammer PORT           connect() to 127.0.0.1:PORT from a fresh TCP socket, over and over until it is
 *                         killed (test/integration/landlock/limits.test.ts: each denial costs the judge
 *                         CPU time); prints "hammer connected" and exits 3 if one ever succeeds. Under
 *                         an allow list each such connect is captured into sbx's proxy, a round trip the
 *                         command waits on: `hammer-udp` is the cheap denial there
 *   hammer-udp            socket(AF_INET, SOCK_DGRAM) over and over, each refused by the judge; prints
 *                         "hammer created" and exits 3 if one ever succeeds
 *
 * Whatever the network:
 *   dgram-pair PATH       socketpair(AF_UNIX, SOCK_DGRAM), then sendto() the pathname socket PATH
 *   dgram-recv PATH       (unsandboxed) binds a datagram socket at PATH, prints "ready", then the first
 *                         datagram within 3 s or "none"
 *
 * Raw system calls only, no liburing: the probe is built with gcc at test time from Debian's headers.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef TCP_FASTOPEN_CONNECT
#define TCP_FASTOPEN_CONNECT 30
#endif

static const char *name;

static int fail(const char *step) {
	printf("%s %s:%s\n", name, step, strerrorname_np(errno));
	return 0;
}

static struct sockaddr_in loopback(const char *port) {
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return addr;
}

/* One IORING_OP_SOCKET through a fresh ring: the new descriptor, or -1 with errno set and *step named. */
static int uring_socket(int domain, int type, const char **step) {
	struct io_uring_params p = { 0 };
	int ring = (int)syscall(__NR_io_uring_setup, 4, &p);
	if (ring < 0) return *step = "io_uring_setup", -1;
	size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	size_t len = sq_len > cq_len ? sq_len : cq_len; /* IORING_FEAT_SINGLE_MMAP: one mapping for both */
	char *sq = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
	struct io_uring_sqe *sqes = mmap(NULL, p.sq_entries * sizeof *sqes, PROT_READ | PROT_WRITE,
	                                 MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
	if (sq == MAP_FAILED || sqes == MAP_FAILED) return *step = "mmap", -1;
	unsigned *tail = (unsigned *)(sq + p.sq_off.tail), mask = *(unsigned *)(sq + p.sq_off.ring_mask);
	struct io_uring_sqe *sqe = &sqes[*tail & mask];
	memset(sqe, 0, sizeof *sqe);
	sqe->opcode = IORING_OP_SOCKET;
	sqe->fd = domain;
	sqe->off = (uint64_t)type;
	((unsigned *)(sq + p.sq_off.array))[*tail & mask] = *tail & mask;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
		return *step = "io_uring_enter", -1;
	struct io_uring_cqe *cqe = (struct io_uring_cqe *)(sq + p.cq_off.cqes) +
	                           (*(unsigned *)(sq + p.cq_off.head) & *(unsigned *)(sq + p.cq_off.ring_mask));
	if (cqe->res < 0) return errno = -cqe->res, *step = "IORING_OP_SOCKET", -1;
	return cqe->res;
}

static int uring_udp(const char *port) {
	const char *step;
	int fd = uring_socket(AF_INET, SOCK_DGRAM, &step);
	if (fd < 0) return fail(step);
	struct sockaddr_in addr = loopback(port);
	if (sendto(fd, "uring-udp\n", 10, 0, (struct sockaddr *)&addr, sizeof addr) != 10) return fail("sendto");
	return puts("uring-udp ok"), 0;
}

static int uring_unix(const char *path) {
	const char *step;
	int fd = uring_socket(AF_UNIX, SOCK_STREAM, &step);
	if (fd < 0) return fail(step);
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) return fail("connect");
	if (write(fd, "uring-unix\n", 11) != 11) return fail("write");
	return puts("uring-unix ok"), 0;
}

/* Stdin as a blocking socket: Node may have left it non-blocking, and a blocking send waits for the handshake. */
static int stdin_socket(void) {
	int flags = fcntl(0, F_GETFL);
	if (flags >= 0) fcntl(0, F_SETFL, flags & ~O_NONBLOCK);
	return 0;
}

static int tfo(const char *how, const char *port) {
	struct sockaddr_in addr = loopback(port);
	char line[] = "tfo-data\n";
	struct iovec iov = { .iov_base = line, .iov_len = sizeof line - 1 };
	struct mmsghdr m = { .msg_hdr = { .msg_name = &addr, .msg_namelen = sizeof addr, .msg_iov = &iov, .msg_iovlen = 1 } };
	int fd = stdin_socket();
	ssize_t sent;
	if (!strcmp(how, "sendto")) sent = sendto(fd, line, iov.iov_len, MSG_FASTOPEN, (struct sockaddr *)&addr, sizeof addr);
	else if (!strcmp(how, "sendmsg")) sent = sendmsg(fd, &m.msg_hdr, MSG_FASTOPEN);
	else sent = sendmmsg(fd, &m, 1, MSG_FASTOPEN) == 1 ? (ssize_t)m.msg_len : -1;
	if (sent < 0) return fail(how);
	return printf("%s ok\n", name), 0;
}

static int tfo_connect(const char *port) {
	struct sockaddr_in addr = loopback(port);
	int fd = stdin_socket(), on = 1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &on, sizeof on) < 0) return fail("setsockopt");
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) return fail("connect");
	if (write(fd, "tfo-data\n", 9) != 9) return fail("write");
	return puts("tfo-connect ok"), 0;
}

static int connect_to(int family, int protocol, const char *address, const char *port) {
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		in->sin_family = AF_INET, in->sin_port = htons((uint16_t)atoi(port)), len = sizeof *in;
		if (inet_pton(AF_INET, address, &in->sin_addr) != 1) return errno = EINVAL, fail("inet_pton");
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
		in6->sin6_family = AF_INET6, in6->sin6_port = htons((uint16_t)atoi(port)), len = sizeof *in6;
		if (inet_pton(AF_INET6, address, &in6->sin6_addr) != 1) return errno = EINVAL, fail("inet_pton");
	}
	int fd = socket(family, SOCK_STREAM, protocol);
	if (fd < 0) return fail("socket");
	if (connect(fd, (struct sockaddr *)&ss, len) < 0) return fail("connect");
	char line[64];
	int n = snprintf(line, sizeof line, "%s\n", name);
	if (write(fd, line, (size_t)n) != n) return fail("write");
	return printf("%s ok\n", name), 0;
}

static int udp(const char *port) {
	struct sockaddr_in addr = loopback(port);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) return fail("socket");
	if (sendto(fd, "udp\n", 4, 0, (struct sockaddr *)&addr, sizeof addr) != 4) return fail("sendto");
	return puts("udp ok"), 0;
}

static int unspec(const char *address, const char *port) {
	struct sockaddr_in addr = loopback(port);
	if (inet_pton(AF_INET, address, &addr.sin_addr) != 1) return errno = EINVAL, fail("inet_pton");
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) return fail("socket");
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) return fail("connect");
	struct sockaddr none = { .sa_family = AF_UNSPEC };
	if (connect(fd, &none, sizeof none) < 0) return fail("unspec");
	return puts("unspec ok"), 0;
}

static int listen_probe(void) {
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) return fail("socket");
	if (listen(fd, 1) < 0) return fail("listen");
	return puts("listen ok"), 0;
}

static char **thread_args;
static void *in_thread(void *unshared) {
	if (unshared && unshare(CLONE_FILES) < 0) return fail("unshare"), NULL;
	connect_to(AF_INET, 0, thread_args[0], thread_args[1]);
	return NULL;
}

static int thread(int unshared, char **args) {
	pthread_t t;
	thread_args = args;
	/* Fill descriptors in the main thread first: in an unshared table the new socket's number is then
	 * one the process's table holds too, for something else. */
	for (int i = 0; i < 4; i++) socket(AF_INET, SOCK_STREAM, 0);
	if (pthread_create(&t, NULL, in_thread, unshared ? &t : NULL) != 0) return fail("pthread_create");
	pthread_join(t, NULL);
	return 0;
}

static int bind_device(const char *dev, const char *address, const char *port) {
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };
	if (inet_pton(AF_INET, address, &in.sin_addr) != 1) return errno = EINVAL, fail("inet_pton");
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) return fail("socket");
	struct timeval two = { 2, 0 };
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &two, sizeof two) < 0) return fail("SO_SNDTIMEO");
	if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev, (socklen_t)strlen(dev)) < 0) return fail("SO_BINDTODEVICE");
	if (connect(fd, (struct sockaddr *)&in, sizeof in) < 0) return fail("connect");
	return printf("%s ok\n", name), 0;
}

static struct sockaddr_un unix_address(const char *path) {
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	strncpy(un.sun_path, path, sizeof un.sun_path - 1);
	return un;
}

static int dgram_pair(const char *path) {
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0) return fail("socketpair");
	struct sockaddr_un un = unix_address(path);
	if (sendto(sv[0], "dgram-pair\n", 11, 0, (struct sockaddr *)&un, sizeof un) != 11) return fail("sendto");
	return printf("%s ok\n", name), 0;
}

static int dgram_recv(const char *path) {
	struct sockaddr_un un = unix_address(path);
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	struct timeval three = { 3, 0 };
	if (fd < 0 || bind(fd, (struct sockaddr *)&un, sizeof un) < 0) return fail("bind");
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &three, sizeof three) < 0) return fail("SO_RCVTIMEO");
	printf("ready\n");
	fflush(stdout);
	char buf[64];
	ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
	if (n < 0) return puts("none"), 0;
	buf[n] = 0;
	return fputs(buf, stdout), 0;
}

/* Never returns but when a connect succeeds: the CPU-time limit is what ends it. */
static int hammer(const char *port) {
	struct sockaddr_in addr = loopback(port);
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0) return fail("socket");
		if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0) return puts("hammer connected"), 3;
		close(fd);
	}
}

static int hammer_udp(void) {
	for (;;) {
		int fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (fd >= 0) return puts("hammer created"), 3;
	}
}

int main(int argc, char **argv) {
	if (argc < 2) return fprintf(stderr, "usage: socket-probe PROBE ARG...\n"), 2;
	name = argv[1];
	if (!strcmp(name, "hand-socket")) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || dup2(fd, 0) < 0) return perror("socket-probe: hand-socket"), 2;
		execvp(argv[2], argv + 2);
		return perror("socket-probe: exec"), 127;
	}
	if (!strcmp(name, "uring-udp")) return uring_udp(argv[2]);
	if (!strcmp(name, "hammer-udp")) return hammer_udp();
	if (!strcmp(name, "uring-unix")) return uring_unix(argv[2]);
	if (!strncmp(name, "tfo-send", 8)) return tfo(name + 4, argv[2]);
	if (!strcmp(name, "tfo-connect")) return tfo_connect(argv[2]);
	if (!strcmp(name, "connect4") && argc == 4) return connect_to(AF_INET, 0, argv[2], argv[3]);
	if (!strcmp(name, "connect6") && argc == 4) return connect_to(AF_INET6, 0, argv[2], argv[3]);
	if (!strcmp(name, "mptcp") && argc == 4) return connect_to(AF_INET, 262 /* IPPROTO_MPTCP */, argv[2], argv[3]);
	if (!strcmp(name, "udp")) return udp(argv[2]);
	if (!strcmp(name, "unspec") && argc == 4) return unspec(argv[2], argv[3]);
	if (!strcmp(name, "listen")) return listen_probe();
	if (!strcmp(name, "thread") && argc == 4) return thread(0, argv + 2);
	if (!strcmp(name, "thread-unshared") && argc == 4) return thread(1, argv + 2);
	if (!strcmp(name, "bindtodevice") && argc == 5) return bind_device(argv[2], argv[3], argv[4]);
	if (!strcmp(name, "hammer") && argc == 3) return hammer(argv[2]);
	if (!strcmp(name, "dgram-pair") && argc == 3) return dgram_pair(argv[2]);
	if (!strcmp(name, "dgram-recv") && argc == 3) return dgram_recv(argv[2]);
	return fprintf(stderr, "socket-probe: unknown probe %s\n", name), 2;
}
