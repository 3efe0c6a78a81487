// The package as a user gets it: `npm pack` of this checkout, installed into a fresh project, then the
// `sbx` command and `import { run } from '<package name>'` from that installed copy (not from the
// checkout). Proves that package.json's "files" ship what a run needs (dist, bin, profiles) and that the
// published name is the one the README documents.
//
// The project installs with `npm ci --prefer-offline` against a lockfile cut from this repository's own
// (its production entries, same versions and integrity): it needs exactly the tarballs the repository's
// `npm ci` fetched, from the npm cache when that ran as this user, and never a registry metadata lookup.
import { createHash } from 'node:crypto';
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  SKIP_INTEGRATION,
  start,
  type Ran,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { REPO_ROOT } from '../../helpers/paths.js';

interface Manifest {
  name: string;
  version: string;
  bin: Record<string, string>;
  dependencies: Record<string, string>;
  engines?: Record<string, string>;
  license?: string;
}
interface LockEntry {
  dev?: boolean;
  devOptional?: boolean;
  [key: string]: unknown;
}

const MANIFEST = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as Manifest;
const LOCK = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, LockEntry>;
};
/** npm and its installs are slow on a loaded 2-core machine; this is a safety net, not a measurement. */
const NPM_MS = 120_000;

let t: TestHost;
let project: string;

/** npm runs with the runner's own environment: its cache (under HOME) lets the install skip the registry. */
function npm(args: readonly string[], cwd: string): Promise<Ran> {
  const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
  return start('npm', args, { cwd, env: { ...env, npm_config_update_notifier: 'false' }, timeoutMs: NPM_MS }).done;
}

/** The installed copy runs with the test host's private environment; `node` on PATH for bin/sbx.js's `exec node`. */
function exec(file: string, args: readonly string[], cwd: string): Promise<Ran> {
  const env = { ...t.env, PATH: `${dirname(process.execPath)}:${t.env.PATH}` };
  return start(file, args, { cwd, env, timeoutMs: NPM_MS }).done;
}

function ok(r: Ran, what: string): Ran {
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}: ${r.err.trim()}`);
  return r;
}

/** package-lock.json for a project whose only dependency is the packed tarball. */
function projectLock(tarball: string, integrity: string): object {
  const production = Object.entries(LOCK.packages).filter(
    ([path, e]) => path.startsWith('node_modules/') && !e.dev && !e.devOptional,
  );
  const { name, version, bin, dependencies, engines, license } = MANIFEST;
  return {
    name: 'pack-check',
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: 'pack-check', dependencies: { [name]: `file:${tarball}` } },
      [`node_modules/${name}`]: {
        version,
        resolved: `file:${tarball}`,
        integrity,
        license,
        dependencies,
        bin,
        engines,
      },
      ...Object.fromEntries(production),
    },
  };
}

describe.skipIf(SKIP_INTEGRATION)(`the packed package (${MANIFEST.name}), installed into a fresh project`, () => {
  beforeAll(async () => {
    requireIntegrationPrerequisites();
    t = makeTestHost('pack');
    project = t.root;
    const pack = ['pack', '--ignore-scripts', '--json', '--pack-destination', project];
    const packed = ok(await npm(pack, REPO_ROOT), 'npm pack');
    const [{ filename }] = JSON.parse(packed.out) as [{ filename: string }];
    const integrity = `sha512-${createHash('sha512')
      .update(readFileSync(join(project, filename)))
      .digest('base64')}`;
    const manifest = { name: 'pack-check', private: true, dependencies: { [MANIFEST.name]: `file:${filename}` } };
    writeFileSync(join(project, 'package.json'), JSON.stringify(manifest));
    writeFileSync(join(project, 'package-lock.json'), JSON.stringify(projectLock(filename, integrity)));
    const ci = ['ci', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund'];
    ok(await npm(ci, project), 'npm ci of the packed tarball');
  }, NPM_MS * 2);
  afterAll(() => t?.cleanup());

  it('the README names this package and the command stays `sbx`', () => {
    expect(MANIFEST.name).toBe('sbx-sandbox');
    expect(readFileSync(join(REPO_ROOT, 'README.md'), 'utf8')).toContain(`npm install -g ${MANIFEST.name}`);
    expect(Object.keys(MANIFEST.bin)).toEqual(['sbx']);
  });

  it('node_modules/.bin/sbx --version prints the package version', async () => {
    const r = await exec(join(project, 'node_modules', '.bin', 'sbx'), ['--version'], project);
    expect({ code: r.code, out: r.out, err: r.err }).toEqual({ code: 0, out: `${MANIFEST.version}\n`, err: '' });
  });

  it('the installed `sbx run` sandboxes a command with a built-in profile (shipped in "files")', async () => {
    const sbx = join(project, 'node_modules', '.bin', 'sbx');
    const r = await exec(sbx, ['run', '--', 'sh', '-c', 'echo "ran in $(pwd)"'], t.workspace);
    expect({ code: r.code, out: r.out }, r.err).toEqual({ code: 0, out: `ran in ${t.workspace}\n` });
  });

  it(`import { run } from '${MANIFEST.name}' resolves to the installed copy and runs \`true\` in bwrap`, async () => {
    const script = [
      `import { run } from '${MANIFEST.name}';`,
      `const o = await run({ command: ['true'], stdio: 'capture', cwd: process.argv[1], hostEnv: process.env });`,
      `const from = import.meta.resolve('${MANIFEST.name}');`,
      'console.log(JSON.stringify({ from, exitCode: o.exitCode, backend: o.backend, profile: o.profile.name }));',
    ].join('\n');
    const node = ['--input-type=module', '-e', script, t.workspace];
    const r = ok(await exec(process.execPath, node, project), 'the library import');
    expect(JSON.parse(r.out)).toEqual({
      from: `file://${join(realpathSync(project), 'node_modules', MANIFEST.name, 'dist', 'api.js')}`,
      exitCode: 0,
      backend: 'bwrap',
      profile: 'default',
    });
  });
});
