// A config file's entries as git itself reads them (`git config --file --list`, run outside any
// repository so that git reads nothing but the file): what the config tests compare sbx's parsing with.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { makeTempDir } from './tmp.js';

export function gitConfigList(text: string): string[] {
  const dir = makeTempDir('sbx-gitcfg-');
  const file = join(dir, 'config');
  writeFileSync(file, text);
  const r = spawnSync('git', ['config', '--file', file, '--list'], { cwd: dir, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.split('\n').filter(Boolean);
}
