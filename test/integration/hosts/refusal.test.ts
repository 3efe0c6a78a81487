// sbx run's refusal when bwrap cannot build the sandbox, end to end through bin/sbx.js: a stand-in bwrap
// (SBX_BWRAP) fails the way a blocked user namespace makes the real one fail; the hint is the host
// diagnosis (here: an outer sbx session), and a failure about something else keeps the generic hint.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTestHost, SBX_BIN } from '../../helpers/sbx-cli.js';

const host = makeTestHost('hosts-refusal');
afterAll(() => host.cleanup());

/** A bwrap that knows its version and fails every sandbox with `message` on stderr. */
function fakeBwrap(name: string, message: string): string {
  const path = join(host.root, name);
  const version = `[ "$1" = --version ] && { echo 'bubblewrap 0.8.0'; exit 0; }`;
  const script = ['#!/bin/sh', version, "cat >&2 <<'EOF'", message, 'EOF', 'exit 1'];
  writeFileSync(path, `${script.join('\n')}\n`, { mode: 0o755 });
  return path;
}

function sbxRun(bwrap: string, extra: Record<string, string>) {
  const r = spawnSync(process.execPath, [SBX_BIN, 'run', '--capture', '--', 'true'], {
    cwd: host.workspace,
    env: { ...host.env, SBX_BWRAP: bwrap, ...extra },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: r.status, error: (JSON.parse(r.stdout) as { error: Record<string, string> }).error };
}

describe('sbx run: a sandbox bwrap could not build', () => {
  it('a namespace failure inside an sbx session: the hint names the outer session and what to do', () => {
    const bwrap = fakeBwrap('bwrap-userns', 'bwrap: setting up uid map: Permission denied');
    const r = sbxRun(bwrap, { SBX_SESSION_ID: 'outer-42' });
    expect(r.status).toBe(125);
    expect(r.error).toEqual({
      code: 'SANDBOX_SETUP',
      message: 'bwrap could not build the sandbox (exit 1): bwrap: setting up uid map: Permission denied',
      hint:
        'this is already inside an sbx sandbox (session outer-42), which forbids new user namespaces; fix: run the ' +
        'command directly (the outer sbx sandbox already confines it), or run sbx outside that sandbox; or, ' +
        'changing nothing: sbx run --backend auto (the landlock backend: Linux 6.12+, less isolation, see the README)',
    });
  });

  it('a failure about something else keeps the generic hint, even inside an sbx session', () => {
    const message = "bwrap: Can't find source path /nope: No such file or directory";
    const r = sbxRun(fakeBwrap('bwrap-source', message), { SBX_SESSION_ID: 'outer-42' });
    expect(r.status).toBe(125);
    expect(r.error).toEqual({
      code: 'SANDBOX_SETUP',
      message: `bwrap could not build the sandbox (exit 1): ${message}`,
      hint: 'run `sbx doctor`, and `sbx explain -- CMD` to see the exact bwrap command',
    });
  });
});
