// A signal that comes before the launcher has named the command (backend/host/exec.ts): sbx ends the
// sandbox, and the run ends with the signal's status. bwrap, or a limits trampoline, whose child sbx
// killed exits 128+9 itself rather than dying of a signal: that too is the run ended by the signal sent,
// never "the sandbox could not be built". The launcher here is a shell standing in for one: it names no
// command on a status descriptor, ignores the SIGTERM sbx ends it with, and exits with its child's status.
import { EventEmitter } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { execLaunch } from '../../../src/backend/host/exec.js';

describe('a signal before the launcher names the command', () => {
  it('ends the run with that signal’s status when the launcher exits 137 of its own', async () => {
    const signals = new EventEmitter();
    const dir = mkdtempSync(join(tmpdir(), 'sbx-early-signal-'));
    const started = join(dir, 'started');
    const launch = {
      file: '/bin/sh',
      args: ['-c', `trap "" TERM; sleep 30 & touch '${started}'; wait $!; exit $?`],
      env: { PATH: '/usr/bin:/bin' },
      fds: [],
    };
    const ran = execLaunch(launch, {
      stdio: 'capture',
      forwardSignals: true,
      signals,
      tty: false,
      launcherKill: 'SIGTERM',
      graceMs: 100,
    });
    // Once the shell runs its child: the signal then finds a launcher that has named nothing.
    while (!existsSync(started)) await new Promise((resolve) => setTimeout(resolve, 20));
    signals.emit('SIGINT');
    const result = await ran;
    rmSync(dir, { recursive: true, force: true });
    expect(result).toMatchObject({ kind: 'ran', code: 130 });
  });
});
