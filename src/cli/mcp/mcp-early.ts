// What `sbx mcp` answers itself (mcp.ts) before the SDK and zod are loaded, which take most of a
// server's start: `initialize`, which an agent waits for before anything else, then the
// `notifications/initialized` that follows it and `tools/list`. Only a plain message is taken here, one
// whose every field the SDK's own schemas (its types.ts) accept for certain; anything else is left to the
// SDK, which answers it as it always did. The SDK then sees the same messages replayed, so its state is
// what it would have been. test/unit/cli/mcp-early.test.ts holds each answer equal to the SDK server's,
// byte for byte; the tools/list answer is schema/mcp-tools.json, generated from mcp-server.ts.
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

/** A JSON-RPC message as one line of input, or undefined when it is no JSON. */
function parse(line: string): Json | undefined {
  try {
    return JSON.parse(line.replace(/\r$/, '')) as Json;
  } catch {
    return undefined;
  }
}

/** The SDK's Protocol writes a result as `{ result, jsonrpc, id }`, then a newline. */
const resultText = (id: string | number, result: unknown) => `${JSON.stringify({ result, jsonrpc: '2.0', id })}\n`;

/** The answer to a plain `initialize` request, as the SDK would write it; undefined for anything else. */
export function initializeAnswer(line: string): string | undefined {
  const message = parse(line);
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
  const result = { protocolVersion, capabilities: CAPABILITIES, serverInfo: MCP_SERVER_INFO };
  return resultText(message.id as string | number, result);
}

/** `notifications/initialized` as a client sends it, with no params or empty ones: the SDK answers no notification. */
function isPlainInitialized(message: Json | undefined): boolean {
  const keys = {
    jsonrpc: (x: Json) => x === '2.0',
    method: (x: Json) => x === 'notifications/initialized',
    params: isEmpty,
  };
  return hasOnly(message, keys, ['jsonrpc', 'method']);
}

/** `tools/list` with no params (a cursor would page, and the SDK answers it). */
function isPlainToolsList(message: Json | undefined): boolean {
  const keys = {
    jsonrpc: (x: Json) => x === '2.0',
    id: isPlainId,
    method: (x: Json) => x === 'tools/list',
    params: isEmpty,
  };
  return hasOnly(message, keys, ['jsonrpc', 'id', 'method']);
}

/** What the early reader does with one line: answer it, take it without an answer, or leave it (and all after it) to the SDK. */
export type Early = { kind: 'answer'; text: string } | { kind: 'quiet' } | undefined;

/**
 * One line of input (`first`: the first, which must be a plain `initialize`; every line before this one
 * was taken here): what the SDK would write for it, when it is plain. `tools` is the SDK's tools/list
 * result (schema/mcp-tools.json); without it tools/list is left to the SDK.
 */
export function earlyAnswer(line: string, first: boolean, tools: unknown): Early {
  if (first) {
    const text = initializeAnswer(line);
    return text === undefined ? undefined : { kind: 'answer', text };
  }
  const message = parse(line);
  if (isPlainInitialized(message)) return { kind: 'quiet' };
  if (tools === undefined || !isPlainToolsList(message) || !isObject(message)) return undefined;
  return { kind: 'answer', text: resultText(message.id as string | number, tools) };
}
