// `sbx mcp` asks through MCP elicitation: a command's connection to a destination the server's profile
// does not allow is put to the client's user (`elicitation/create`) while it waits, when the client
// declared it can answer; the SDK's own Client declares the capability and answers. A client that
// declared nothing gets the refusal it always got (the control). The destination is the test's own
// listener on 127.0.0.1, named by its literal (the server resolves with the system resolver), which
// allow_private lists for that one port.
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { ElicitRequestSchema, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { callRun, type Connected, connectSbx } from './client.js';

describe.skipIf(SKIP_INTEGRATION)('sbx mcp: a destination outside network.allow asked through elicitation', () => {
  let h: TestHost;
  let upstream: Server;
  let port: number;
  let ledger: string;
  let stateHome: string;
  let env: Record<string, string>;
  const servers: Connected[] = [];

  /** curl through the proxy (NO_PROXY lists 127.0.0.1, so the proxy is named), printing the status code. */
  const fetchStatus = (p: number) => ({
    shell: `curl -s -o /dev/null -w '%{http_code}' --noproxy '' --proxy "$HTTP_PROXY" http://127.0.0.1:${p}/`,
  });

  beforeAll(async () => {
    requireIntegrationPrerequisites();
    h = makeTestHost('mcp-ask');
    upstream = createServer((_req, res) => res.end('upstream\n'));
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    port = (upstream.address() as { port: number }).port;
    mkdirSync(join(h.configHome, 'sbx', 'profiles'), { recursive: true });
    writeFileSync(
      join(h.configHome, 'sbx', 'profiles', 'ask.yaml'),
      ['extends: default', 'network:', '  allow: [allowed.invalid]', `  allow_private: ["127.0.0.1:${port}"]`].join(
        '\n',
      ),
    );
    ledger = join(h.root, 'audit.jsonl');
    stateHome = join(h.root, 'state');
    env = { ...h.env, XDG_STATE_HOME: stateHome };
  });
  afterAll(async () => {
    for (const s of servers) await s.close();
    upstream?.close();
    h?.cleanup();
  });

  async function serve(
    answer?: (request: ElicitRequest) => { action: string; content?: Record<string, unknown> },
    elicitation: Record<string, unknown> = { form: {} },
  ) {
    const args = ['-p', 'ask', '--workspace', h.workspace, '--audit-file', ledger];
    const server = await connectSbx(
      args,
      env,
      h.workspace,
      answer
        ? {
            capabilities: { elicitation },
            setUp: (client) =>
              client.setRequestHandler(ElicitRequestSchema, async (request) => answer(request) as never),
          }
        : {},
    );
    servers.push(server);
    return server;
  }

  function approvals(): { decision: string; by: string; network?: { host: string; port: number } }[] {
    return readFileSync(ledger, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((r) => r.type === 'approval');
  }

  it('control: a client without elicitation gets the refusal, as before', async () => {
    const server = await serve();
    const r = await callRun(server, fetchStatus(port));
    expect(r.report.captured?.stdout.text).toBe('403');
    expect(r.report.violations).toEqual([
      expect.objectContaining({ rule: 'network.allow', detail: `127.0.0.1:${port} is not in network.allow` }),
    ]);
  });

  it('a client that answers: once lets the command through, decline refuses it; each answer in the ledger', async () => {
    const messages: string[] = [];
    const server = await serve((request) => {
      messages.push(String(request.params.message));
      const schema = request.params.requestedSchema as { properties: { answer: { enum: string[] } } } | undefined;
      expect(schema?.properties.answer.enum).toEqual(['once', 'always', 'deny']);
      return messages.length === 1 ? { action: 'accept', content: { answer: 'once' } } : { action: 'decline' };
    });
    const allowed = await callRun(server, fetchStatus(port));
    expect(allowed.report.captured?.stdout.text).toBe('200');
    expect(allowed.report.violations).toEqual([]);
    expect(messages[0]).toContain(`127.0.0.1:${port}`);
    expect(messages[0]).toContain('profile ask');

    // Another run is another question; declining it denies.
    const declined = await callRun(server, fetchStatus(port));
    expect(declined.report.captured?.stdout.text).toBe('403');
    expect(declined.report.violations[0]?.detail).toBe(
      `127.0.0.1:${port} is not in network.allow; asked, and denied for this run`,
    );
    expect(approvals().slice(-2)).toEqual([
      expect.objectContaining({ decision: 'once', by: 'user', network: { host: '127.0.0.1', port } }),
      expect.objectContaining({ decision: 'deny', by: 'user', network: { host: '127.0.0.1', port } }),
    ]);
  });

  it('a client that declared elicitation as the spec before modes did ({}) is asked a form too', async () => {
    const server = await serve(() => ({ action: 'accept', content: { answer: 'once' } }), {});
    expect((await callRun(server, fetchStatus(port))).report.captured?.stdout.text).toBe('200');
  });

  it('always is remembered in the user state (not the workspace); the next call is not asked', async () => {
    let asks = 0;
    const server = await serve(() => {
      asks++;
      return { action: 'accept', content: { answer: 'always' } };
    });
    expect((await callRun(server, fetchStatus(port))).report.captured?.stdout.text).toBe('200');
    expect((await callRun(server, fetchStatus(port))).report.captured?.stdout.text).toBe('200');
    expect(asks).toBe(1);
    const store = JSON.parse(readFileSync(join(stateHome, 'sbx', 'approvals.json'), 'utf8'));
    expect(store.decisions).toEqual([
      expect.objectContaining({ profile: 'ask', decision: 'always', network: { host: '127.0.0.1', port } }),
    ]);
  });
});
