// A virtualenv in HOME (virtualenvwrapper's ~/.virtualenvs, Poetry's, Pipenv's) made by the real
// `python3 -m venv`, a package installed into it by its own pip from a local wheel (no network), then
// run through the real CLI on the bwrap and landlock backends: the package imports inside and its
// console script runs, VIRTUAL_ENV is kept, the environment is read-only; beside the unsandboxed
// control and the control of what binding bin/ alone did (python falls back to the base interpreter,
// the script dies with ModuleNotFoundError).
import { spawnSync } from 'node:child_process';
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

const TIMEOUT_MS = 120_000;
const PYTHON = '/usr/bin/python3';

let t: TestHost;
let venv: string;

/** A wheel of one module and a console script, as a build backend would write it (PEP 427). */
const WHEEL_SCRIPT = `
import sys, zipfile
files = {
    'tinypkg/__init__.py': 'def main():\\n    import sys\\n    print("tinypkg-ran", sys.prefix)\\n',
    'tinypkg-1.0.dist-info/METADATA': 'Metadata-Version: 2.1\\nName: tinypkg\\nVersion: 1.0\\n',
    'tinypkg-1.0.dist-info/WHEEL': 'Wheel-Version: 1.0\\nGenerator: sbx-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n',
    'tinypkg-1.0.dist-info/entry_points.txt': '[console_scripts]\\ntinytool = tinypkg:main\\n',
}
names = list(files) + ['tinypkg-1.0.dist-info/RECORD']
with zipfile.ZipFile(sys.argv[1], 'w') as z:
    for name, text in files.items():
        z.writestr(name, text)
    z.writestr('tinypkg-1.0.dist-info/RECORD', ''.join(n + ',,\\n' for n in names))
`;

function run(command: string, args: string[]): void {
  const r = spawnSync(command, args, { encoding: 'utf8', env: t.env });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')}: ${r.stderr}`);
}

beforeAll(() => {
  if (SKIP_INTEGRATION) return;
  requireIntegrationPrerequisites();
  t = makeTestHost('venv');
  chmodSync(t.home, 0o755);
  venv = join(t.home, '.virtualenvs', 'proj');
  mkdirSync(join(t.home, '.virtualenvs'));
  run(PYTHON, ['-m', 'venv', venv]);
  const wheel = join(t.root, 'tinypkg-1.0-py3-none-any.whl');
  run(PYTHON, ['-c', WHEEL_SCRIPT, wheel]);
  run(join(venv, 'bin', 'pip'), ['install', '--no-index', '--no-cache-dir', '--disable-pip-version-check', wheel]);
  // As `workon proj` (or `poetry shell`) leaves the shell.
  t.env.PATH = `${join(venv, 'bin')}:${t.env.PATH}`;
  t.env.VIRTUAL_ENV = venv;
  const profiles = join(t.configHome, 'sbx', 'profiles');
  mkdirSync(profiles, { recursive: true, mode: 0o700 });
  // What sbx did before: bin/ alone, as an unknown directory in HOME.
  const binOnly = `extends: default\ntoolchains: false\nread_only: [${join(venv, 'bin')}]\n`;
  writeFileSync(join(profiles, 'binonly.yaml'), binOnly, { mode: 0o600 });
}, TIMEOUT_MS);
afterAll(() => t?.cleanup());

const opts = () => ({ env: t.env, cwd: t.workspace, timeoutMs: TIMEOUT_MS });
const PROBE = ['python', '-c', 'import os, sys, tinypkg; print(sys.prefix, os.environ.get("VIRTUAL_ENV"))'];

describe.skipIf(SKIP_INTEGRATION).each(['bwrap', 'landlock'])('a virtualenv in HOME under --backend %s', (backend) => {
  const sbx = (command: string[], profile = 'default') =>
    runSbx(['--backend', backend, '-p', profile, '--', ...command], opts());

  it(
    'imports what its pip installed, runs its console script, and keeps VIRTUAL_ENV',
    async () => {
      const host = await runHost(PROBE, opts());
      expect(host.out.trim(), host.err).toBe(`${venv} ${venv}`);
      const ran = await sbx(PROBE);
      expect(ran.code, ran.err).toBe(0);
      expect(ran.out.trim()).toBe(`${venv} ${venv}`);
      const tool = await sbx(['tinytool']);
      expect(tool.code, tool.err).toBe(0);
      expect(tool.out.trim()).toBe(`tinypkg-ran ${venv}`);
    },
    TIMEOUT_MS,
  );

  it(
    'control: with bin/ alone python misses its packages, the script dies, VIRTUAL_ENV is dropped',
    async () => {
      // Under bwrap python sees no pyvenv.cfg and falls back; under landlock, which has no mount
      // namespace, the file is there but not granted, and python stops at start-up.
      const failure =
        backend === 'bwrap' ? /ModuleNotFoundError: No module named 'tinypkg'/ : /PermissionError: .*pyvenv\.cfg/;
      const ran = await sbx(PROBE, 'binonly');
      expect(ran.code).toBe(1);
      expect(ran.err).toMatch(failure);
      const tool = await sbx(['tinytool'], 'binonly');
      expect(tool.code).toBe(1);
      expect(tool.err).toMatch(failure);
      const env = await sbx(['sh', '-c', 'echo "venv:${VIRTUAL_ENV:-none}"'], 'binonly');
      expect(env.out.trim()).toBe('venv:none');
    },
    TIMEOUT_MS,
  );

  it(
    'the environment is read-only: its pip cannot install into it, nothing lands on the host',
    async () => {
      const planted = join(venv, 'lib', 'planted.py');
      const write = await sbx(['sh', '-c', `echo x > ${planted}; echo "write:$?"`]);
      expect(write.out).toMatch(/write:[1-9]/);
      const pip = await sbx(['pip', 'install', '--no-index', '--disable-pip-version-check', 'tinypkg==2.0']);
      expect(pip.code).not.toBe(0);
      expect(existsSync(planted)).toBe(false);
    },
    TIMEOUT_MS,
  );
});
