// `sbx mcp` answers a plain `initialize` itself, before the SDK is loaded (src/cli/mcp/mcp-initialize.ts):
// that answer must be the SDK server's own, byte for byte, for every request it takes, and every request
// it leaves alone must be one the SDK answers (or refuses) in its own way. The SDK's server here is
// the real one, serveMcp of src/cli/mcp/mcp-server.ts, on in-memory streams.
import { PassThrough, Writable } from 'node:stream';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { initializeAnswer, SUPPORTED_PROTOCOL_VERSIONS as OURS } from '../../../src/cli/mcp/mcp-initialize.js';
import { serveMcp } from '../../../src/cli/mcp/mcp-server.js';
import { SbxError } from '../../../src/errors.js';

/** The SDK server's output for `line`, fed alone to a fresh server: each line it wrote. */
async function sdkAnswer(line: string): Promise<string[]> {
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
  input.end(`${line}\n`);
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
    expect([ours!.text]).toEqual(await sdkAnswer(line));
  });

  it.each(LEFT)('is not given; the SDK answers instead: %s', (line) => {
    expect(initializeAnswer(line)).toBeUndefined();
  });
});
