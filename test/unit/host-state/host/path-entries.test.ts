// host-state/host/path-entries.ts on a real temp directory: which PATH entries lie in a tree the run binds
// writable, by real path, including entries that do not exist yet (the sandbox can create them),
// relative and empty ones (the cwd); none in danger mode.
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Policy } from '../../../../src/policy/types.js';
import { pathWarning, writablePathEntries } from '../../../../src/host-state/host/path-entries.js';
import { makeTempDir } from '../../../helpers/tmp.js';

function policyWith(ws: string, mode: Policy['mode'] = 'workspace-write'): Policy {
  const bind = {
    kind: 'bind',
    source: ws,
    target: ws,
    access: 'rw',
    optional: false,
    reason: 'workspace',
    role: 'workspace',
  };
  return { mode, mounts: [bind] } as unknown as Policy;
}

function layout() {
  const root = makeTempDir('sbx-path-entries-');
  const ws = join(root, 'ws');
  mkdirSync(join(ws, '.venv', 'bin'), { recursive: true });
  mkdirSync(join(root, 'tools'));
  symlinkSync(join(ws, '.venv', 'bin'), join(root, 'venv-link'));
  return { root, ws };
}

describe('writablePathEntries', () => {
  it('names the entries inside the writable tree, however they are spelled', () => {
    const { root, ws } = layout();
    const path = [
      join(ws, '.venv', 'bin'),
      join(ws, 'node_modules', '.bin'), // not there yet: the sandbox can create it
      join(root, 'venv-link'),
      join(root, 'tools'),
      '/usr/bin',
      'bin',
      '',
    ].join(':');
    expect(writablePathEntries(path, ws, policyWith(ws))).toEqual([
      join(ws, '.venv', 'bin'),
      join(ws, 'node_modules', '.bin'),
      join(root, 'venv-link'),
      'bin',
      '',
    ]);
    expect(writablePathEntries(path, root, policyWith(ws))).toEqual([
      join(ws, '.venv', 'bin'),
      join(ws, 'node_modules', '.bin'),
      join(root, 'venv-link'),
    ]);
  });

  it('nothing in danger mode, nothing without PATH', () => {
    const { ws } = layout();
    expect(writablePathEntries(join(ws, 'bin'), ws, policyWith(ws, 'danger'))).toEqual([]);
    expect(writablePathEntries(undefined, ws, policyWith(ws))).toEqual([]);
  });

  it('one warning line naming every entry', () => {
    expect(pathWarning([])).toEqual([]);
    expect(pathWarning(['/w/.venv/bin', ''])).toEqual([
      'PATH holds /w/.venv/bin, (empty: the cwd), which this run can write: a program the command plants there runs outside the sandbox when you next call it by name',
    ]);
  });
});
