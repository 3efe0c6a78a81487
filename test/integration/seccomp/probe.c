/* Calls syscalls the sbx seccomp sets deny, with arguments that are harmless even when the call is
 * allowed (bad pointers, bad fds, invalid flags), and prints "name result" per probe: 0 for success,
 * the errno for a failure, "sig<N>" if the probe was killed. Each probe runs in its own child so a
 * probe that succeeds (unshare, personality) or dies (x32, int 0x80) cannot affect the next one.
 * Usage: probe NAME... ; "probe list" prints the probe names available on this arch. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

/* Numbers newer than some distributions' headers; identical on x86_64 and aarch64. */
#ifndef SYS_open_tree_attr
#define SYS_open_tree_attr 467
#endif

#define BAD ((long)1) /* an unmapped address: every copy from it faults */

static long raw_clone(unsigned long flags) {
  long pid = syscall(SYS_clone, flags, 0, 0, 0, 0);
  if (pid == 0) _exit(0);
  if (pid > 0) waitpid((pid_t)pid, NULL, 0);
  return pid < 0 ? -1 : 0;
}

static long ioctl_on(int fd, unsigned long request) {
  char c = ' ';
  /* syscall(), not ioctl(): glibc's prototype would truncate the request to int. */
  return syscall(SYS_ioctl, fd, request, &c);
}

#if defined(__x86_64__)
static long i386_getpid(void) {
  long ret = 20; /* __NR_getpid in the i386 table */
  __asm__ volatile("int $0x80" : "+a"(ret) : : "memory");
  return ret < 0 ? (errno = (int)-ret, -1) : 0;
}
#endif

struct probe {
  const char *name;
  long (*run)(void);
};

#define P(name, expr) static long probe_##name(void) { return (expr); }
P(getpid, syscall(SYS_getpid) > 0 ? 0 : -1)
P(mount, syscall(SYS_mount, 0, 0, 0, 0, 0))
P(umount2, syscall(SYS_umount2, 0, -1))
P(pivot_root, syscall(SYS_pivot_root, 0, 0))
P(move_mount, syscall(SYS_move_mount, -1, BAD, -1, BAD, -1))
P(open_tree, syscall(SYS_open_tree, -1, BAD, -1))
P(open_tree_attr, syscall(SYS_open_tree_attr, -1, BAD, -1, BAD, 0))
P(fsopen, syscall(SYS_fsopen, BAD, -1))
P(fsconfig, syscall(SYS_fsconfig, -1, -1, 0, 0, 0))
P(fsmount, syscall(SYS_fsmount, -1, -1, 0))
P(fspick, syscall(SYS_fspick, -1, BAD, -1))
P(mount_setattr, syscall(SYS_mount_setattr, -1, BAD, -1, BAD, 0))
P(ptrace, syscall(SYS_ptrace, 2 /* PTRACE_PEEKDATA */, 0x7fffffff, 0, 0))
P(process_vm_readv, syscall(SYS_process_vm_readv, getpid(), 0, 0, 0, 0, 1))
P(process_vm_writev, syscall(SYS_process_vm_writev, getpid(), 0, 0, 0, 0, 1))
P(kexec_load, syscall(SYS_kexec_load, 0, 0, 0, -1))
P(kexec_file_load, syscall(SYS_kexec_file_load, -1, -1, 0, BAD, -1))
P(init_module, syscall(SYS_init_module, BAD, 0, BAD))
P(finit_module, syscall(SYS_finit_module, -1, BAD, -1))
P(delete_module, syscall(SYS_delete_module, BAD, -1))
P(bpf, syscall(SYS_bpf, -1, BAD, 0))
P(perf_event_open, syscall(SYS_perf_event_open, BAD, 0, -1, -1, 0))
P(userfaultfd, syscall(SYS_userfaultfd, -1))
P(keyctl, syscall(SYS_keyctl, -1, 0, 0, 0, 0))
P(add_key, syscall(SYS_add_key, BAD, BAD, 0, 0, 0))
P(request_key, syscall(SYS_request_key, BAD, BAD, 0, 0))
P(setns, syscall(SYS_setns, -1, 0))
P(unshare_newuser, syscall(SYS_unshare, CLONE_NEWUSER))
P(unshare_newns, syscall(SYS_unshare, CLONE_NEWNS))
P(unshare_files, syscall(SYS_unshare, CLONE_FILES))
P(clone_newuser, raw_clone(CLONE_NEWUSER | SIGCHLD))
P(clone_plain, raw_clone(SIGCHLD))
P(clone3, syscall(SYS_clone3, 0, 64))
P(personality_norandom, syscall(SYS_personality, ADDR_NO_RANDOMIZE) < 0 ? -1 : 0)
P(personality_query, syscall(SYS_personality, 0xffffffff) < 0 ? -1 : 0)
P(ioctl_tiocsti, ioctl_on(-1, TIOCSTI))
P(ioctl_tiocsti_high, ioctl_on(-1, 0x100000000UL | TIOCSTI))
P(ioctl_tioclinux, ioctl_on(-1, TIOCLINUX))
P(ioctl_tcgets, ioctl_on(-1, TCGETS))
P(ioctl_tiocsti_tty, ioctl_on(0, TIOCSTI))
P(swapon, syscall(SYS_swapon, BAD, 0))
P(swapoff, syscall(SYS_swapoff, BAD))
P(reboot, syscall(SYS_reboot, 0, 0, 0, 0))
P(acct, syscall(SYS_acct, BAD))
P(quotactl, syscall(SYS_quotactl, 0, BAD, 0, 0))
P(quotactl_fd, syscall(SYS_quotactl_fd, -1, 0, 0, 0))
P(open_by_handle_at, syscall(SYS_open_by_handle_at, -1, BAD, -1))
P(name_to_handle_at, syscall(SYS_name_to_handle_at, -1, BAD, BAD, BAD, -1))
P(syslog, syscall(SYS_syslog, 10 /* SYSLOG_ACTION_SIZE_BUFFER */, 0, 0))
P(io_uring_setup, syscall(SYS_io_uring_setup, 0, BAD))
P(io_uring_enter, syscall(SYS_io_uring_enter, -1, 0, 0, 0, 0, 0))
P(io_uring_register, syscall(SYS_io_uring_register, -1, 0, 0, 0))
P(chroot, syscall(SYS_chroot, BAD))
P(socket_inet, socket(AF_INET, SOCK_STREAM, 0) < 0 ? -1 : 0)
P(socket_packet, socket(AF_PACKET, SOCK_RAW, 0) < 0 ? -1 : 0)
P(pkey_alloc, syscall(SYS_pkey_alloc, -1, 0))
#if defined(__x86_64__)
P(uselib, syscall(SYS_uselib, BAD))
P(_sysctl, syscall(SYS__sysctl, BAD))
P(nfsservctl, syscall(SYS_nfsservctl, 0, 0, 0))
P(lookup_dcookie, syscall(SYS_lookup_dcookie, 0, 0, 0))
P(iopl, syscall(SYS_iopl, 99))
P(ioperm, syscall(SYS_ioperm, ~0UL, 1, 0))
P(create_module, syscall(SYS_create_module, 0, 0))
P(get_kernel_syms, syscall(SYS_get_kernel_syms, 0))
P(query_module, syscall(SYS_query_module, 0, 0, 0, 0, 0))
P(afs_syscall, syscall(SYS_afs_syscall))
P(modify_ldt, syscall(SYS_modify_ldt, 99, 0, 0))
P(x32_getpid, syscall(0x40000000 | SYS_getpid) < 0 ? -1 : 0)
P(i386_getpid, i386_getpid())
#endif

#define E(name) {#name, probe_##name}
static const struct probe probes[] = {
  E(getpid), E(mount), E(umount2), E(pivot_root), E(move_mount), E(open_tree), E(open_tree_attr),
  E(fsopen), E(fsconfig), E(fsmount), E(fspick), E(mount_setattr), E(ptrace), E(process_vm_readv),
  E(process_vm_writev), E(kexec_load), E(kexec_file_load), E(init_module), E(finit_module),
  E(delete_module), E(bpf), E(perf_event_open), E(userfaultfd), E(keyctl), E(add_key), E(request_key),
  E(setns), E(unshare_newuser), E(unshare_newns), E(unshare_files), E(clone_newuser), E(clone_plain),
  E(clone3), E(personality_norandom), E(personality_query), E(ioctl_tiocsti), E(ioctl_tiocsti_high),
  E(ioctl_tioclinux), E(ioctl_tcgets), E(ioctl_tiocsti_tty), E(swapon), E(swapoff), E(reboot), E(acct),
  E(quotactl), E(quotactl_fd), E(open_by_handle_at), E(name_to_handle_at), E(syslog),
  E(io_uring_setup), E(io_uring_enter), E(io_uring_register), E(chroot), E(socket_inet),
  E(socket_packet), E(pkey_alloc),
#if defined(__x86_64__)
  E(uselib), E(_sysctl), E(nfsservctl), E(lookup_dcookie), E(iopl), E(ioperm), E(create_module),
  E(get_kernel_syms), E(query_module), E(afs_syscall), E(modify_ldt), E(x32_getpid), E(i386_getpid),
#endif
};

static int run(const struct probe *p) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    errno = 0;
    long ret = p->run();
    _exit(ret < 0 ? (errno == 0 ? 255 : errno) : 0);
  }
  int status;
  if (waitpid(pid, &status, 0) < 0) return -1;
  if (WIFSIGNALED(status)) printf("%s sig%d\n", p->name, WTERMSIG(status));
  else printf("%s %d\n", p->name, WEXITSTATUS(status));
  return 0;
}

int main(int argc, char **argv) {
  size_t count = sizeof probes / sizeof probes[0];
  for (int i = 1; i < argc; i++) {
    int found = 0;
    for (size_t j = 0; j < count; j++) {
      if (strcmp(argv[i], "list") == 0) printf("%s\n", probes[j].name);
      else if (strcmp(argv[i], probes[j].name) == 0) found = 1, run(&probes[j]);
    }
    if (!found && strcmp(argv[i], "list") != 0) printf("%s unknown\n", argv[i]);
  }
  return 0;
}
