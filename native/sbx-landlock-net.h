/*
 * The network judge of sbx-landlock (sbx-landlock-net.c): under `net=filtered` the command's connect(),
 * listen() and non-TCP socket() calls are sent to the monitor by seccomp user notification, and the
 * monitor connects only to the loopback ports sbx named (its egress proxy, network.host_ports).
 */
#ifndef SBX_LANDLOCK_NET_H
#define SBX_LANDLOCK_NET_H
#include <stddef.h>
#include <stdint.h>

#define NET_MAX_PORTS 64

struct net_config {
	uint16_t ports[NET_MAX_PORTS]; /* 127.0.0.1:PORT the monitor connects for the command */
	size_t n_ports;
};

/* In the child, under no_new_privs: installs the notifying filter; its listener, or -1 with errno set. */
int net_install_filter(void);
/* The listener crosses from the child to the monitor over a unix socketpair (SCM_RIGHTS). */
int net_send_fd(int sock, int fd);
int net_recv_fd(int sock);
/* In the monitor: judges every notification on a thread of its own, so a blocking connect never
 * delays reaping; denials are written to status_fd, one JSON line each. 0, or an errno. */
int net_start_judge(int listener, const struct net_config *config, int status_fd);
/* Denials not written (past the cap), for the last status line. */
unsigned net_denials_dropped(void);
/* Whether this kernel and its seccomp and ptrace settings let the judge work: NULL, or the step that failed. */
const char *net_probe(char *why, size_t len);

#endif
