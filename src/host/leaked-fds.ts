// Descriptors this process holds without close-on-exec: inherited from whoever started it (a job
// server's pipe, a test harness's, a caller's stdout dup'd high). libuv closes no descriptor in a
// child, and leaves one it is told to 'ignore' above 2 as it is, so each is overlaid with /dev/null in
// the child's table instead: the sandbox's launch (backend/host/exec.ts), and the warm server started
// detached (cli/warm/warm-server.ts), which would otherwise hold its first caller's pipes open for as
// long as it lives.
import { readdirSync, readFileSync } from 'node:fs';
import type { StdioOptions } from 'node:child_process';

/** This process's descriptors above 2 without close-on-exec. */
export function leakedDescriptors(): number[] {
  const leaked: number[] = [];
  let fds: string[];
  try {
    fds = readdirSync('/proc/self/fd');
  } catch {
    return leaked;
  }
  for (const name of fds) {
    const fd = Number(name);
    if (fd <= 2) continue;
    try {
      const flags = /flags:\s+([0-7]+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1];
      // O_CLOEXEC is 02000000 in fdinfo's octal flags.
      if (flags !== undefined && (parseInt(flags, 8) & 0o2000000) === 0) leaked.push(fd);
    } catch {
      // closed meanwhile (readdir's own fd)
    }
  }
  return leaked;
}

/** Puts `devNull` at each of `leaked` in a spawn's stdio (the slots between them stay as they are). */
export function overlayLeaked(stdio: Exclude<StdioOptions, string>, leaked: readonly number[], devNull: number): void {
  for (const fd of leaked) {
    while (stdio.length < fd) stdio.push('ignore');
    stdio[fd] = devNull;
  }
}
