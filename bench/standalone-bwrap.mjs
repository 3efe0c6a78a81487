// The exact bwrap argv sbx would launch for `true` in `work`, made standalone for the benchmarks
// (bench/launch.mjs, bench/agents.mjs): its session dir (mask source) is recreated under `work`, the
// generated files are written there, the status descriptor it reads is dropped (nothing listens on fd 3), the descriptors sbx pins are named
// by the paths they hold, and the seccomp filter is written to a file that each launch opens afresh
// as fd 5, as sbx passes it.
import { execFileSync } from 'node:child_process';
import { mkdirSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function standaloneBwrap(sbx, work, env) {
  const explained = JSON.parse(
    execFileSync(process.execPath, [sbx, 'explain', '--json', '--', 'true'], { cwd: work, env, encoding: 'utf8' }),
  );
  const sessionDir = explained.launch.argv.find((a) => a.endsWith('/empty'))?.replace(/\/empty$/, '');
  const benchSession = join(work, 'session');
  mkdirSync(benchSession, { recursive: true });
  writeFileSync(join(benchSession, 'empty'), '', { mode: 0o444 });
  // Generated files (the sanitized ~/.gitconfig view, ...): file-N holds the N-th `file` mount's
  // content (src/backend/launch.ts, dataFilePath).
  const files = explained.policy.mounts.filter((m) => m.kind === 'file');
  for (const [n, m] of files.entries()) writeFileSync(join(benchSession, `file-${n}`), m.content, { mode: m.mode });
  const args = [];
  for (let i = 0; i < explained.launch.argv.length; i++) {
    const a = explained.launch.argv[i];
    if (a === '--json-status-fd') {
      i++;
      continue;
    }
    const pinned =
      a === '--ro-bind-fd' || a === '--bind-fd'
        ? explained.launch.fds[Number(explained.launch.argv[i + 1]) - 3]
        : undefined;
    if (pinned?.source) {
      args.push(a === '--bind-fd' ? '--bind' : '--ro-bind', pinned.source);
      i++;
      continue;
    }
    args.push(sessionDir ? a.replace(sessionDir, benchSession) : a);
  }
  const seccompFd = explained.launch.fds.find((f) => f.purpose === 'seccomp');
  const filterFile = join(work, 'seccomp.bpf');
  if (seccompFd) writeFileSync(filterFile, Buffer.from(seccompFd.base64, 'base64'));
  /** stdio for one launch: the filter opened afresh as fd 5 (the caller closes stdio[5] after). */
  const withFilter = (stdio) => (seccompFd ? [...stdio, 'ignore', 'ignore', openSync(filterFile, 'r')] : stdio);
  return { file: explained.launch.file, args, seccomp: Boolean(seccompFd), filterFile, withFilter };
}
