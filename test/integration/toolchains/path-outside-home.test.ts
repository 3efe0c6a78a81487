// PATH entries outside HOME through the real CLI: a runner's tool cache as setup-node and setup-python
// leave it (tool-cache.ts) runs inside under `untrusted` (toolchains: machine) and `default`, read-only,
// beside the unsandboxed control and a `toolchains: false` control (node resolves to the system's, python
// is 127); a directory every user may write is dropped and named once; inside a GitHub Actions job the
// runner's world-writable tool cache is the job's own and is bound.
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { buildToolCache, type ToolCache } from './tool-cache.js';

const TIMEOUT_MS = 120_000;

let t: TestHost;
let cache: ToolCache;

beforeAll(() => {
  if (SKIP_INTEGRATION) return;
  requireIntegrationPrerequisites();
  t = makeTestHost('outside-home');
  cache = buildToolCache(join(t.root, 'hostedtoolcache'));
  t.env.PATH = [...cache.path, t.env.PATH].join(':');
  t.env.RUNNER_TOOL_CACHE = cache.root;
  const profiles = join(t.configHome, 'sbx', 'profiles');
  mkdirSync(profiles, { recursive: true, mode: 0o700 });
  writeFileSync(join(profiles, 'notools.yaml'), 'extends: default\ntoolchains: false\n', { mode: 0o600 });
}, TIMEOUT_MS);
afterAll(() => t?.cleanup());

const opts = (env: Record<string, string> = t.env) => ({ env, cwd: t.workspace, timeoutMs: TIMEOUT_MS });
const NODE = ['node', '-e', 'console.log(process.execPath)'];
const sbx = (profile: string, command: string[], env?: Record<string, string>) =>
  runSbx(['-p', profile, '--', ...command], opts(env));

describe.skipIf(SKIP_INTEGRATION)("a runner's tool cache on PATH", () => {
  it.each(['untrusted', 'default'])(
    'under %s: the cached node and npm run, python is found, and the cache is read-only',
    async (profile) => {
      const host = await runHost(NODE, opts());
      expect(host.out.trim(), host.err).toBe(join(cache.node, 'bin', 'node'));
      const node = await sbx(profile, NODE);
      expect(node.code, node.err).toBe(0);
      expect(node.out.trim()).toBe(join(cache.node, 'bin', 'node'));
      // npm is a link into lib/: only the whole version directory makes it work.
      const npm = await sbx(profile, ['npm', '--version']);
      expect(npm.code, npm.err).toBe(0);
      const python = await sbx(profile, ['python', '-c', 'import sys; print(sys.executable)']);
      expect(python.code, python.err).toBe(0);
      expect(python.out.trim()).toBe(join(cache.python, 'bin', 'python'));
      const planted = join(cache.node, 'bin', 'planted');
      const write = await sbx(profile, ['sh', '-c', `touch ${planted}; echo "write:$?"`]);
      expect(write.out).toMatch(/write:[1-9]/);
      expect(existsSync(planted)).toBe(false);
    },
    TIMEOUT_MS,
  );

  it(
    "control: with toolchains: false node is the system's, another version, and python is 127",
    async () => {
      const node = await sbx('notools', NODE);
      expect(node.code, node.err).toBe(0);
      expect(node.out.trim()).not.toBe(join(cache.node, 'bin', 'node'));
      const python = await sbx('notools', ['python', '--version']);
      expect(python.code).toBe(127);
    },
    TIMEOUT_MS,
  );
});

describe.skipIf(SKIP_INTEGRATION)('a PATH entry outside HOME another user could write', () => {
  it(
    "is dropped and named once, with why; inside a GitHub Actions job the tool cache is the job's own",
    async () => {
      const shared = join(t.root, 'shared');
      mkdirSync(join(shared, 'bin'), { recursive: true });
      chmodSync(shared, 0o777);
      writeFileSync(join(shared, 'bin', 'shared-tool'), '#!/bin/sh\necho shared-ran\n', { mode: 0o755 });
      const env = { ...t.env, PATH: `${join(shared, 'bin')}:${t.env.PATH}` };
      const control = await runHost(['shared-tool'], opts(env));
      expect(control.out).toContain('shared-ran');
      const first = await sbx('untrusted', ['sh', '-c', 'shared-tool; echo "rc:$?"'], env);
      expect(first.out).toContain('rc:127');
      const named = `${join(shared, 'bin')} (${shared} is writable by every user)`;
      expect(first.err).toContain(`sbx: PATH entries not shown in the sandbox (\`sbx explain\` lists them): ${named}`);
      const second = await sbx('untrusted', ['true'], env);
      expect(second.code, second.err).toBe(0);
      expect(second.err).not.toContain('PATH entries not shown');

      // The runner image leaves its tool cache writable by everyone: refused outside a job...
      chmodSync(cache.root, 0o777);
      try {
        const outside = await sbx('untrusted', NODE);
        expect(outside.out.trim()).not.toBe(join(cache.node, 'bin', 'node'));
        expect(outside.err).toContain(`${cache.root} is writable by every user`);
        // ...and the job's own inside one, where every later step runs it unsandboxed anyway.
        const job = { ...t.env, GITHUB_ACTIONS: 'true' };
        const inJob = await sbx('untrusted', NODE, job);
        expect(inJob.code, inJob.err).toBe(0);
        expect(inJob.out).toContain(join(cache.node, 'bin', 'node'));
      } finally {
        chmodSync(cache.root, 0o755);
      }
    },
    TIMEOUT_MS,
  );
});
