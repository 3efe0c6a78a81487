/*
 * Host-global state a command without an IPC namespace (or with the host's /proc and /sys) could
 * reach, for test/integration/landlock/host-state.test.ts. Each probe prints one line: "NAME ok" (and
 * what it made) when the thing worked, else "NAME STEP:ERRNO" naming the step that failed.
 *
 *   shm KEY          shmget(KEY, 1 MiB, IPC_CREAT|IPC_EXCL): a SysV segment, left in place (the test
 *                    removes it with ipcrm); prints "shm ok ID"
 *   msg KEY          msgget(KEY, IPC_CREAT|IPC_EXCL): a SysV message queue, left in place
 *   sem KEY          semget(KEY, 1, IPC_CREAT|IPC_EXCL): a SysV semaphore set, left in place
 *   shmat ID         shmat(ID) of an existing segment (a stranger's, by the id /proc/sysvipc/shm shows)
 *   mq NAME          mq_open(NAME, O_CREAT|O_EXCL|O_RDWR): a POSIX message queue, left in place
 *   mq-unlink NAME   mq_unlink(NAME): how the test removes the queue its control made
 *   shm-open NAME    shm_open(NAME, O_CREAT|O_EXCL|O_RDWR): POSIX shared memory in /dev/shm, left in place
 *   open-wronly PATH open(PATH, O_WRONLY) and close it at once. NOTHING is ever written: the test opens
 *                    /proc/sysrq-trigger and /proc/sys/kernel/core_pattern with it
 *
 * Raw libc calls only: built with gcc at test time (-lrt for mq_open on older glibc).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <unistd.h>

static const char *name;

static int fail(const char *step) {
	printf("%s %s:%s\n", name, step, strerrorname_np(errno));
	return 0;
}

static int made(long id) {
	printf("%s ok %ld\n", name, id);
	return 0;
}

int main(int argc, char **argv) {
	if (argc != 3) return fprintf(stderr, "usage: host-state-probe PROBE ARG\n"), 2;
	name = argv[1];
	const char *arg = argv[2];
	key_t key = (key_t)strtol(arg, NULL, 0);
	if (!strcmp(name, "shm")) {
		int id = shmget(key, 1 << 20, IPC_CREAT | IPC_EXCL | 0600);
		return id < 0 ? fail("shmget") : made(id);
	}
	if (!strcmp(name, "msg")) {
		int id = msgget(key, IPC_CREAT | IPC_EXCL | 0600);
		return id < 0 ? fail("msgget") : made(id);
	}
	if (!strcmp(name, "sem")) {
		int id = semget(key, 1, IPC_CREAT | IPC_EXCL | 0600);
		return id < 0 ? fail("semget") : made(id);
	}
	if (!strcmp(name, "shmat")) {
		void *at = shmat(atoi(arg), NULL, SHM_RDONLY);
		if (at == (void *)-1) return fail("shmat");
		shmdt(at);
		return made(atoi(arg));
	}
	if (!strcmp(name, "mq")) {
		mqd_t q = mq_open(arg, O_CREAT | O_EXCL | O_RDWR, 0600, NULL);
		return q == (mqd_t)-1 ? fail("mq_open") : made(0);
	}
	if (!strcmp(name, "mq-unlink")) return mq_unlink(arg) < 0 ? fail("mq_unlink") : made(0);
	if (!strcmp(name, "shm-open")) {
		int fd = shm_open(arg, O_CREAT | O_EXCL | O_RDWR, 0600);
		return fd < 0 ? fail("shm_open") : made(0);
	}
	if (!strcmp(name, "open-wronly")) {
		int fd = open(arg, O_WRONLY | O_CLOEXEC);
		if (fd < 0) return fail("open");
		close(fd);
		return made(0);
	}
	return fprintf(stderr, "host-state-probe: unknown probe %s\n", name), 2;
}
