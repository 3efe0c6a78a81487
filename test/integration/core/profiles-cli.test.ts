// `sbx profiles list|show` end to end through bin/sbx.js: every built-in is listed with its origin, a
// merged profile prints as YAML with where each value came from, and an unknown name suggests one.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { makeTestHost, runSbxRaw, SKIP_INTEGRATION, type TestHost } from '../../helpers/sbx-cli.js';

let t: TestHost;
const opts = () => ({ env: t.env, cwd: t.workspace });

describe.skipIf(SKIP_INTEGRATION)('sbx profiles (bin/sbx.js)', () => {
  beforeAll(() => {
    t = makeTestHost('profiles');
    mkdirSync(join(t.workspace, '.sbx', 'profiles'), { recursive: true });
    writeFileSync(
      join(t.workspace, '.sbx', 'profiles', 'ci.yaml'),
      'description: project CI\nextends: agent\ncommands:\n  allow: { cargo: }\n',
    );
  });
  afterAll(() => t?.cleanup());

  it('list: the built-ins and the project profile, with their origin', async () => {
    const r = await runSbxRaw(['profiles', 'list', '--json'], opts());
    expect(r.code).toBe(0);
    const listed = JSON.parse(r.out) as { name: string; source: string }[];
    for (const name of ['default', 'read-only', 'untrusted', 'agent', 'network', 'danger'])
      expect(listed).toContainEqual(expect.objectContaining({ name, source: 'builtin' }));
    expect(listed).toContainEqual(expect.objectContaining({ name: 'ci', source: 'project' }));
  });

  it('show: the merged profile as YAML, and which profile set each value', async () => {
    const r = await runSbxRaw(['profiles', 'show', 'ci'], opts());
    expect(r.code).toBe(0);
    expect(r.out).toMatch(
      /^# ci: merged from default \(builtin: .*\) <- agent \(builtin: .*\) <- ci \(project: .*\)$/m,
    );
    expect(r.out).toMatch(/^# {3}commands\.default +agent$/m);
    const merged = parse(r.out) as {
      commands: { default: string; allow: Record<string, unknown> };
      env: { keep: string[] };
    };
    expect(merged.commands.default).toBe('ask');
    expect(Object.keys(merged.commands.allow)).toEqual(expect.arrayContaining(['git', 'npm', 'cargo']));
    expect(merged.env.keep).toContain('PATH');
  });

  it('show: an unknown name lists the known ones and suggests the closest (125)', async () => {
    const r = await runSbxRaw(['profiles', 'show', 'agnet'], opts());
    expect(r.code).toBe(125);
    expect(r.err).toContain('agent');
  });
});
