// `sbx mcp` and credentials: every call runs with the credentials of the profile the server started
// with (its GITHUB_TOKEN from the server's own environment), so a call's command sees the placeholder;
// no tool argument can name or change one (the input schema refuses the key, beside the control that
// the same call without it runs).
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { callRun, type Connected, connectSbx } from './client.js';

const TOKEN = `ghp_${'M'.repeat(8)}${'cp0'.repeat(9)}1`;

describe.skipIf(SKIP_INTEGRATION)("sbx mcp: a call's credentials are the started profile's", () => {
  let h: TestHost;
  let server: Connected;
  beforeAll(async () => {
    requireIntegrationPrerequisites();
    h = makeTestHost('mcp-cred');
    mkdirSync(join(h.configHome, 'sbx', 'profiles'), { recursive: true });
    writeFileSync(
      join(h.configHome, 'sbx', 'profiles', 'gh.yaml'),
      [
        'extends: default',
        'network:',
        '  allow: [api.github.com]',
        'credentials:',
        '  GITHUB_TOKEN:',
        '    from: { env: GITHUB_TOKEN }',
        '    hosts: [api.github.com]',
      ].join('\n'),
    );
    server = await connectSbx(['-p', 'gh', '--workspace', h.workspace], { ...h.env, GITHUB_TOKEN: TOKEN }, h.workspace);
  });
  afterAll(async () => {
    await server?.close();
    h?.cleanup();
  });

  it('the command sees a placeholder shaped like the token, never the token', async () => {
    // Told by its shape and a digest: the captured output redacts token-shaped text, and a call naming
    // the token itself would put the value on the sandbox's command line (refused: CREDENTIAL_EXPOSED).
    const r = await callRun(server, {
      shell: 'v=$GITHUB_TOKEN; echo "${v%%_*} ${#v}"; printf %s "$v" | sha256sum | cut -c1-16',
    });
    expect(r.report.error).toBeUndefined();
    const [shape, digest] = (r.report.captured?.stdout.text ?? '').trim().split('\n');
    expect(shape).toBe('ghp 40');
    expect(digest).toMatch(/^[0-9a-f]{16}$/);
    expect(digest).not.toBe(createHash('sha256').update(TOKEN).digest('hex').slice(0, 16));
    expect(JSON.stringify(r)).not.toContain(TOKEN);
  });

  it('a credentials argument is refused; the same call without it runs (control)', async () => {
    const refused = await server.client.callTool({
      name: 'run',
      arguments: {
        command: ['true'],
        credentials: { GITHUB_TOKEN: { from: { env: 'HOME' }, hosts: ['evil.example'] } },
      },
    });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toMatch(/credentials/);
    expect((await callRun(server, { command: ['true'] })).report.exitCode).toBe(0);
  });
});
