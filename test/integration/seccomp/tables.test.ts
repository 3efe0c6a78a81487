// Every syscall number in the sbx tables against the kernel headers installed on this machine
// (linux-libc-dev), read through the C preprocessor. Entries newer than the headers must be
// numbered above everything the headers know, or be listed here as known-newer.
import { execFileSync, spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { SYSCALLS_AARCH64 } from '../../../src/seccomp/syscalls-aarch64.js';
import { SYSCALLS_X86_64 } from '../../../src/seccomp/syscalls-x86_64.js';

const SKIP = process.env.SBX_SKIP_SECCOMP_INTEGRATION === '1';
/** x86-only syscalls added below the generic numbering's high-water mark (Linux 6.11, 6.16). */
const KNOWN_NEWER_X86_64 = ['uretprobe', 'uprobe'];

/** `#define __NR_x N` macros the preprocessor sees for `source`, following one level of aliasing. */
function headerNumbers(source: string, flags: string[] = []): Map<string, number> {
  const macros = execFileSync('gcc', ['-E', '-dM', ...flags, '-x', 'c', '-'], { input: source, encoding: 'utf8' });
  const raw = new Map<string, string>();
  for (const match of macros.matchAll(/^#define (__NR3264_\w+|__NR_\w+) (\S+)$/gm)) raw.set(match[1]!, match[2]!);
  const numbers = new Map<string, number>();
  for (const [macro, value] of raw) {
    if (!macro.startsWith('__NR_') || macro === '__NR_syscalls' || macro === '__NR_arch_specific_syscall') continue;
    const resolved = raw.get(value) ?? value;
    if (/^\d+$/.test(resolved)) numbers.set(macro.slice('__NR_'.length), Number(resolved));
  }
  return numbers;
}

function compare(table: Readonly<Record<string, number>>, headers: Map<string, number>, knownNewer: string[] = []) {
  expect(headers.size).toBeGreaterThan(250);
  for (const [name, nr] of headers) expect(table[name], `${name} in the headers`).toBe(nr);
  const highest = Math.max(...headers.values());
  for (const [name, nr] of Object.entries(table)) {
    if (headers.has(name) || knownNewer.includes(name)) continue;
    expect(nr, `${name} is not in the headers, so it must be newer than them`).toBeGreaterThan(highest);
  }
}

describe.skipIf(SKIP)('syscall tables against the installed kernel headers', () => {
  beforeAll(() => {
    if (spawnSync('gcc', ['--version'], { stdio: 'ignore' }).error) {
      throw new Error('gcc is required to read the kernel headers; install it or set SBX_SKIP_SECCOMP_INTEGRATION=1');
    }
  });

  // arm64's <asm/unistd.h> is asm-generic/unistd.h with these switches (arch/arm64/include/uapi/asm/unistd.h).
  it('aarch64 matches asm-generic/unistd.h as arm64 configures it', () => {
    const source = [
      '#define __BITS_PER_LONG 64',
      ...['RENAMEAT', 'NEW_STAT', 'SET_GET_RLIMIT', 'TIME32_SYSCALLS', 'SYS_CLONE3', 'MEMFD_SECRET'].map(
        (w) => `#define __ARCH_WANT_${w}`,
      ),
      '#include <asm-generic/unistd.h>',
    ].join('\n');
    compare(SYSCALLS_AARCH64, headerNumbers(source));
  });

  it.skipIf(process.arch !== 'x64')('x86_64 matches <asm/unistd_64.h>', () => {
    compare(SYSCALLS_X86_64, headerNumbers('#include <asm/unistd_64.h>\n'), KNOWN_NEWER_X86_64);
  });
});
