// A masked file is masked under every name (issue 18, sensitive/host/hard-links.ts): a sandboxed run links
// `.env` to other names, the user later writes a secret into `.env`, and the next run must not show
// it through any of them: beside it in the workspace, in a directory the scan prunes
// (node_modules), in a second mounted tree, or linked to a file inside a masked directory. End to
// end through real bwrap via bin/sbx.js; each probe has its unsandboxed control.
import { randomBytes } from 'node:crypto';
import { appendFileSync, chmodSync, linkSync, mkdirSync, writeFileSync } from 'node:fs';
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

const SECRET = `SBX-LINKED-${randomBytes(6).toString('hex')}`;

describe.skipIf(SKIP_INTEGRATION)('hard links to masked files (real bwrap via bin/sbx.js)', () => {
  let t: TestHost;
  const opts = (cwd = t.workspace) => ({ env: t.env, cwd });
  const sbx = (...args: string[]) => runSbx(args, opts());

  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('hardlink');
  });
  afterAll(() => t?.cleanup());

  it('links a sandbox made before the secret existed show nothing once it does', async () => {
    mkdirSync(join(t.workspace, 'node_modules', 'pkg'), { recursive: true });
    writeFileSync(join(t.workspace, 'plain.txt'), 'plain\n');
    const made = await sbx('--', 'sh', '-c', 'touch .env && ln .env notes.txt && ln .env node_modules/pkg/cache.txt');
    expect(made.err).toBe('');
    expect(made.code).toBe(0);
    // Later, the user puts a secret into .env (appending keeps the inode, and so the links).
    appendFileSync(join(t.workspace, '.env'), `API_KEY=${SECRET}\n`);
    const probe = ['sh', '-c', 'cat .env notes.txt node_modules/pkg/cache.txt plain.txt'];
    // Control: unsandboxed, every name shows the secret.
    const host = await runHost(probe, opts());
    expect(host.out).toBe(`API_KEY=${SECRET}\n`.repeat(3) + 'plain\n');
    const inside = await sbx('--', ...probe);
    expect(inside.out).toBe('plain\n');
    expect(inside.code).toBe(0);
  });

  it('a name in a directory the sandbox made unreadable stays hidden once it makes it readable again', async () => {
    const ws = join(t.root, 'ws-chmod');
    mkdirSync(join(ws, 'node_modules'), { recursive: true });
    const made = await runSbx(
      [
        '--',
        'sh',
        '-c',
        'touch .env.local && mkdir node_modules/d && ln .env.local node_modules/d/n && chmod 0 node_modules/d',
      ],
      opts(ws),
    );
    expect(made.code).toBe(0);
    appendFileSync(join(ws, '.env.local'), `${SECRET}\n`);
    chmodSync(join(ws, 'node_modules', 'd'), 0o755);
    expect((await runHost(['cat', 'node_modules/d/n'], opts(ws))).out).toBe(`${SECRET}\n`);
    chmodSync(join(ws, 'node_modules', 'd'), 0);
    // Unprivileged, sbx cannot list it and masks it whole; as root it finds the name and masks that.
    const inside = await runSbx(
      ['--', 'sh', '-c', 'chmod 755 node_modules/d 2>/dev/null; cat node_modules/d/n'],
      opts(ws),
    );
    expect(inside.out).not.toContain(SECRET);
    chmodSync(join(ws, 'node_modules', 'd'), 0o755);
  });

  it('a name in a second mounted tree (--ro-bind) is masked there', async () => {
    const other = join(t.root, 'other');
    mkdirSync(other);
    writeFileSync(join(t.workspace, '.env.prod'), `TOKEN=${SECRET}\n`);
    // Made on the host (a link between two mounts cannot be made from inside: EXDEV).
    linkSync(join(t.workspace, '.env.prod'), join(other, 'readme.txt'));
    writeFileSync(join(other, 'plain.txt'), 'plain\n');
    const probe = ['sh', '-c', `cat ${other}/readme.txt ${other}/plain.txt`];
    expect((await runHost(probe, opts())).out).toBe(`TOKEN=${SECRET}\nplain\n`);
    const inside = await sbx('--ro-bind', `${other}:${other}`, '--', ...probe);
    expect(inside.out).toBe('plain\n');
    expect(inside.code).toBe(0);
  });

  it('a name linked to a file inside a masked directory is masked', async () => {
    mkdirSync(join(t.configHome, 'sbx', 'profiles'), { recursive: true, mode: 0o700 });
    writeFileSync(
      join(t.configHome, 'sbx', 'profiles', 'vault.yaml'),
      'extends: default\nsensitive:\n  files: [vault/]\n',
    );
    mkdirSync(join(t.workspace, 'vault'));
    writeFileSync(join(t.workspace, 'vault', 'db'), `PASSWORD=${SECRET}\n`);
    linkSync(join(t.workspace, 'vault', 'db'), join(t.workspace, 'db-copy.txt'));
    const probe = ['sh', '-c', 'cat db-copy.txt; ls vault'];
    expect((await runHost(probe, opts())).out).toBe(`PASSWORD=${SECRET}\ndb\n`);
    const inside = await sbx('-p', 'vault', '--', ...probe);
    expect(inside.out).toBe('');
    expect(inside.code).toBe(0);
  });
});
