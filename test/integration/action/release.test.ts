// The Action as a workflow pins it: a release tag made by scripts/action-release.sh carries dist/, so
// its steps install and build nothing (an `npm` first on PATH that would fail is never called), and
// with setup-node's and setup-python's tool cache on PATH, as the runner image leaves it (mode 0777),
// the command runs the cached node, npm and python under the default `untrusted` profile. A commit
// without dist/ is built once, and npm's engine warnings stay out of the log. Runs the real npm ci
// (the npm registry) in throw-away clones.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../helpers/paths.js';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { buildToolCache, type ToolCache } from '../toolchains/tool-cache.js';
import { runAction } from './harness.js';

const TIMEOUT_MS = 300_000;
const TAG = 'v0.0.0-release-test';

let t: TestHost;
let cache: ToolCache;

function sh(cwd: string, command: string): string {
  const r = spawnSync('bash', ['-c', command], { cwd, encoding: 'utf8', env: { ...process.env, ...t.env } });
  if (r.status !== 0) throw new Error(`${command}: ${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** This checkout's HEAD, cloned (never linked: npm ci would empty a linked node_modules). */
function cloneHead(name: string): string {
  const dir = join(t.root, name);
  sh(t.root, `git clone -q --no-hardlinks ${REPO_ROOT} ${dir}`);
  return dir;
}

beforeAll(() => {
  if (SKIP_INTEGRATION) return;
  requireIntegrationPrerequisites();
  t = makeTestHost('action-release');
  cache = buildToolCache(join(t.root, 'hostedtoolcache'));
  chmodSync(cache.root, 0o777);
}, TIMEOUT_MS);
afterAll(() => t?.cleanup());

describe.skipIf(SKIP_INTEGRATION)('the Action from a release tag, after setup-node and setup-python', () => {
  it(
    'installs and builds nothing, and runs the cached node, npm and python',
    async () => {
      const source = cloneHead('source');
      const head = sh(source, 'git rev-parse HEAD').trim();
      sh(source, `git config user.email t@example.com && git config user.name t && scripts/action-release.sh ${TAG}`);
      // The branch is as it was; the tag names HEAD plus dist/.
      expect(sh(source, 'git rev-parse HEAD').trim()).toBe(head);
      expect(sh(source, `git rev-parse ${TAG}^{commit}^`).trim()).toBe(head);
      expect(sh(source, `git ls-tree -r --name-only ${TAG} dist`)).toContain('dist/cli.js\n');
      // What the runner downloads for `uses: OWNER/sbx@TAG`: the tag's tree.
      const release = join(t.root, 'release');
      mkdirSync(release);
      sh(source, `git archive ${TAG} | tar -x -C ${release}`);

      const fakeNpm = join(t.root, 'fake-npm');
      mkdirSync(fakeNpm);
      writeFileSync(join(fakeNpm, 'npm'), '#!/bin/sh\necho npm-ran "$@"\nexit 1\n', { mode: 0o755 });
      t.env.PATH = [fakeNpm, ...cache.path, '/usr/local/bin:/usr/bin:/bin'].join(':');
      t.env.RUNNER_TOOL_CACHE = cache.root;
      // The fake npm is on the sandbox's PATH too (bound like any directory outside HOME): the cached
      // one is called beside its node.
      const npm = '"$(dirname "$(command -v node)")/npm" --version >/dev/null && echo npm-ok';
      const command = `node -e "console.log(process.execPath)"; ${npm}; python --version`;
      const r = await runAction(t, 'release', { command }, 'merged', { path: release });
      expect(
        r.steps.map((s) => s.code),
        r.log,
      ).toEqual([0, 0, 0, 0, 0]);
      expect(r.log).not.toContain('npm-ran');
      expect(r.log).not.toContain('has no dist/');
      expect(r.log).toContain(`${join(cache.node, 'bin', 'node')}\n`);
      expect(r.log).toContain('npm-ok\n');
      expect(r.log).toMatch(/^Python 3\.\d+\.\d+$/m);
    },
    TIMEOUT_MS,
  );

  it(
    'a commit without dist/ is built once, with no npm warning in the log',
    async () => {
      const source = cloneHead('unreleased');
      t.env.PATH = '/usr/local/bin:/usr/bin:/bin';
      const r = await runAction(t, 'unreleased', { command: 'echo ran' }, 'merged', {
        path: source,
        stepSafetyMs: TIMEOUT_MS,
      });
      expect(
        r.steps.map((s) => s.code),
        r.log,
      ).toEqual([0, 0, 0, 0, 0]);
      expect(existsSync(join(source, 'dist', 'cli.js'))).toBe(true);
      expect(r.log).toContain('has no dist/: building it');
      expect(r.log).not.toMatch(/npm warn|EBADENGINE/i);
      expect(r.log).toContain('ran\n');
    },
    TIMEOUT_MS,
  );
});
