// MCP's `initialize`, answered by `sbx mcp` itself (mcp.ts) before the SDK and zod are loaded: they
// take most of a server's start, and an agent waits for this answer before it lists the tools. Only a
// plain request is answered here, one whose every field the SDK's own schema (its types.ts,
// InitializeRequestSchema) accepts for certain; anything else is left to the SDK, which answers it as
// it always did. The SDK then sees the same request replayed, so its state is what it would have been.
// test/unit/cli/mcp-initialize.test.ts holds this answer equal to the SDK server's, byte for byte.
import { VERSION } from '../../version.js';

/** The server's name and version, as McpServer is given them (mcp-server.ts). */
export const MCP_SERVER_INFO = { name: 'sbx', version: VERSION };

/** The SDK's SUPPORTED_PROTOCOL_VERSIONS, newest first (the first is its LATEST_PROTOCOL_VERSION); the test keeps them equal. */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = [
  '2025-11-25',
  '2025-06-18',
  '2025-03-26',
  '2024-11-05',
  '2024-10-07',
];

/** What McpServer declares once tools are registered (mcp-server.ts registers them). */
const CAPABILITIES = { tools: { listChanged: true } };

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const isObject = (v: Json | undefined): v is { [key: string]: Json } =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** An object with only `keys`, each passing its check, and every one of `required`. */
function hasOnly(
  v: Json | undefined,
  keys: Record<string, (x: Json) => boolean>,
  required: readonly string[] = [],
): boolean {
  if (!isObject(v)) return false;
  return (
    required.every((k) => Object.hasOwn(v, k)) &&
    Object.entries(v).every(([k, x]) => Object.hasOwn(keys, k) && keys[k]!(x))
  );
}

const isString = (x: Json) => typeof x === 'string';
const isEmpty = (x: Json) => hasOnly(x, {});

/**
 * The client capabilities answered here: none, roots (with or without listChanged), an empty sampling
 * or elicitation. Richer ones (tasks, experimental, extensions, sampling's context) go to the SDK.
 */
const isPlainCapabilities = (x: Json) =>
  hasOnly(x, {
    roots: (r) => hasOnly(r, { listChanged: (b) => typeof b === 'boolean' }),
    sampling: isEmpty,
    elicitation: isEmpty,
  });

/** A request id the SDK takes (a string, or an integer it writes back as it read it). */
const isPlainId = (x: Json) => typeof x === 'string' || (typeof x === 'number' && Number.isSafeInteger(x));

/**
 * The answer to one line of input when it is a plain `initialize` request, as the SDK would write it
 * (its Protocol sends `{ result, jsonrpc, id }`, then a newline); undefined for anything else.
 */
export function initializeAnswer(line: string): { id: string | number; text: string } | undefined {
  let message: Json;
  try {
    message = JSON.parse(line.replace(/\r$/, '')) as Json;
  } catch {
    return undefined;
  }
  const clientInfo = (c: Json) =>
    hasOnly(c, { name: isString, version: isString, title: isString }, ['name', 'version']);
  const params = (p: Json) =>
    hasOnly(p, { protocolVersion: isString, capabilities: isPlainCapabilities, clientInfo }, [
      'protocolVersion',
      'capabilities',
      'clientInfo',
    ]);
  const request = { jsonrpc: (x: Json) => x === '2.0', id: isPlainId, method: (x: Json) => x === 'initialize', params };
  if (!hasOnly(message, request, ['jsonrpc', 'id', 'method', 'params']) || !isObject(message)) return undefined;
  const asked = (message.params as { protocolVersion: string }).protocolVersion;
  const protocolVersion = SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : SUPPORTED_PROTOCOL_VERSIONS[0];
  const id = message.id as string | number;
  const result = { protocolVersion, capabilities: CAPABILITIES, serverInfo: MCP_SERVER_INFO };
  return { id, text: `${JSON.stringify({ result, jsonrpc: '2.0', id })}\n` };
}
