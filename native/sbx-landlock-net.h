/*
 * The network judge of sbx-landlock (sbx-landlock-net.c). Two modes:
 *   NET_LANDLOCK   under `net=filtered` without a network namespace: the command's connect(), listen()
 *                  and non-TCP socket() calls are sent to the monitor by seccomp user notification;
 *                  the monitor connects only to the loopback ports sbx named (its egress proxy,
 *                  network.host_ports) and captures every other TCP connect into sbx's proxy.
 *   NET_NAMESPACE  inside a sandbox's own network namespace (bwrap, nsjail; `sbx-landlock --judge`):
 *                  only connect() is sent; a TCP connect to an address off the namespace's `lo` is
 *                  captured into the bridge's proxy port, everything else goes on as the command asked.
 */
#ifndef SBX_LANDLOCK_NET_H
#define SBX_LANDLOCK_NET_H
#include <stddef.h>
#include <stdint.h>

#define NET_MAX_PORTS 64

enum net_mode { NET_LANDLOCK, NET_NAMESPACE };

struct net_config {
	enum net_mode mode;
	uint16_t ports[NET_MAX_PORTS]; /* NET_LANDLOCK: 127.0.0.1:PORT the monitor connects for the command */
	size_t n_ports;
	/* 127.0.0.1:capture_port is sbx's HTTP proxy, where captured connections go (0: none, capture off) */
	uint16_t capture_port;
	/* NET_NAMESPACE: the pipe the bridge announces its HTTP proxy port on (read once, before the first capture) */
	int announce_fd;
};

/* In the child, under no_new_privs: installs the notifying filter for `mode`; its listener, or -1 with errno set. */
int net_install_filter(enum net_mode mode);
/* The listener crosses from the child to the monitor over a unix socketpair (SCM_RIGHTS). */
int net_send_fd(int sock, int fd);
int net_recv_fd(int sock);
/* In the monitor: judges every notification on a thread of its own, so a blocking connect never
 * delays reaping, and each capture on a thread of its own, so a slow upstream never delays another
 * connect; denials are written to status_fd, one JSON line each. 0, or an errno. */
int net_start_judge(int listener, const struct net_config *config, int status_fd);
/* Denials not written (past the cap), for the last status line. */
unsigned net_denials_dropped(void);
/* Whether this kernel and its seccomp and ptrace settings let the judge work: NULL, or the step that failed. */
const char *net_probe(char *why, size_t len);

#endif
