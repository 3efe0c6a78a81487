// `sbx mcp` answers a plain `initialize` and `tools/list` itself, before the SDK is loaded
// (src/cli/mcp/mcp-early.ts): each answer must be the SDK server's own, byte for byte, for every request
// it takes, and every request it leaves alone must be one the SDK answers (or refuses) in its own way.
// The SDK's server here is the real one, serveMcp of src/cli/mcp/mcp-server.ts, on in-memory streams;
// its tools/list answer ships as schema/mcp-tools.json (SBX_UPDATE_SCHEMA=1 rewrites it).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { earlyAnswer, initializeAnswer, SUPPORTED_PROTOCOL_VERSIONS as OURS } from '../../../src/cli/mcp/mcp-early.js';
import { serveMcp } from '../../../src/cli/mcp/mcp-server.js';
import { SbxError } from '../../../src/errors.js';
import { REPO_ROOT } from '../../helpers/paths.js';

/** The SDK server's output for `lines`, fed to a fresh server: each line it wrote. */
async function sdkAnswer(...lines: string[]): Promise<string[]> {
  const input = new PassThrough();
  const written: string[] = [];
  const output = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      written.push(chunk.toString('utf8'));
      callback();
    },
  });
  // A server with no sandbox: it answers the protocol as any other and runs nothing.
  const fixed = { profile: null, error: new SbxError('BWRAP_MISSING', 'no bwrap in this test', { hint: 'none' }) };
  const served = serveMcp(fixed, 1, { input, output });
  input.end(lines.map((l) => `${l}\n`).join(''));
  await served;
  return written;
}

const request = (params: unknown, id: unknown = 1, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params, ...extra });
const params = (over: Record<string, unknown> = {}) => ({
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'c', version: '1' },
  ...over,
});

/** Requests answered early: the answer must be the SDK's. */
const PLAIN = [
  ...SUPPORTED_PROTOCOL_VERSIONS.map((v) => request(params({ protocolVersion: v }))),
  request(params({ protocolVersion: '1999-01-01' })),
  request(params({ protocolVersion: '' })),
  request(params(), 'a string id'),
  request(params(), 0),
  request(params(), -7),
  request(params({ capabilities: { roots: { listChanged: true } } })),
  request(params({ capabilities: { roots: {}, sampling: {}, elicitation: {} } })),
  request(params({ clientInfo: { name: 'c', version: '1', title: 'C' } })),
  `${request(params())}\r`,
  ' {"params":{"clientInfo":{"version":"1","name":"c"},"capabilities":{},"protocolVersion":"2024-11-05"},"method":"initialize","id":9,"jsonrpc":"2.0"} ',
];

/** Requests left to the SDK: odd, richer or malformed. */
const LEFT = [
  'not json',
  '',
  request(params(), 1.5),
  request(params(), null),
  request(params(), 2 ** 60),
  request(params(), 1, { jsonrpc: '1.0' }),
  request(params(), 1, { extra: true }),
  request(params({ protocolVersion: 20250618 })),
  request(params({ capabilities: undefined })),
  request(params({ capabilities: { roots: { listChanged: 'yes' } } })),
  request(params({ capabilities: { experimental: { x: {} } } })),
  request(params({ capabilities: { sampling: { context: {} } } })),
  request(params({ clientInfo: { name: 'c' } })),
  request(params({ clientInfo: { name: 'c', version: '1', websiteUrl: 'https://example.com' } })),
  request(params({ _meta: { progressToken: 1 } })),
  request(params({ extra: 1 })),
  request(undefined),
  JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  JSON.stringify({ jsonrpc: '2.0', method: 'initialize', params: params() }),
];

describe('the early initialize answer', () => {
  it("offers the SDK's protocol versions, newest first", () => {
    expect(OURS).toEqual(SUPPORTED_PROTOCOL_VERSIONS);
    expect(OURS[0]).toBe(LATEST_PROTOCOL_VERSION);
  });

  it.each(PLAIN)("is the SDK server's answer, byte for byte: %s", async (line) => {
    const ours = initializeAnswer(line);
    expect(ours).toBeDefined();
    expect([ours]).toEqual(await sdkAnswer(line));
  });

  it.each(LEFT)('is not given; the SDK answers instead: %s', (line) => {
    expect(initializeAnswer(line)).toBeUndefined();
  });
});

const TOOLS_FILE = join(REPO_ROOT, 'schema', 'mcp-tools.json');
const INIT = request(params());
const list = (id: unknown = 2, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list', ...extra });
const INITIALIZED = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' });

describe('the early tools/list answer', () => {
  it("schema/mcp-tools.json is the SDK server's tools/list result (SBX_UPDATE_SCHEMA=1 rewrites it)", async () => {
    const [, listed] = await sdkAnswer(INIT, list());
    const generated = `${JSON.stringify((JSON.parse(listed!) as { result: unknown }).result, null, 2)}\n`;
    if (process.env.SBX_UPDATE_SCHEMA === '1') writeFileSync(TOOLS_FILE, generated);
    expect(readFileSync(TOOLS_FILE, 'utf8')).toBe(generated);
  });

  const tools = () => JSON.parse(readFileSync(TOOLS_FILE, 'utf8')) as unknown;

  it.each([list(), list('s'), list(0), list(2, { params: {} })])(
    "after initialize, is the SDK server's answer byte for byte: %s",
    async (line) => {
      const ours = earlyAnswer(line, false, tools());
      expect(ours?.kind).toBe('answer');
      const [, sdk] = await sdkAnswer(INIT, line);
      expect(ours?.kind === 'answer' && ours.text).toBe(sdk);
    },
  );

  it('takes notifications/initialized without an answer, as the SDK does', async () => {
    expect(earlyAnswer(INITIALIZED, false, tools())).toEqual({ kind: 'quiet' });
    expect(await sdkAnswer(INIT, INITIALIZED)).toHaveLength(1);
  });

  it.each([
    list(2, { params: { cursor: 'x' } }),
    list(2, { params: { _meta: {} } }),
    list(1.5),
    list(2, { extra: 1 }),
    JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'run', arguments: {} } }),
    JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ping' }),
    JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized', params: { x: 1 } }),
    INIT,
    'not json',
  ])('leaves to the SDK: %s', (line) => {
    expect(earlyAnswer(line, false, tools())).toBeUndefined();
  });

  it('without the shipped list, leaves tools/list to the SDK; the first line must be initialize', () => {
    expect(earlyAnswer(list(), false, undefined)).toBeUndefined();
    expect(earlyAnswer(list(), true, tools())).toBeUndefined();
    expect(earlyAnswer(INITIALIZED, true, tools())).toBeUndefined();
  });
});
