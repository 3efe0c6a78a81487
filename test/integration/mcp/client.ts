// The MCP side of the sbx mcp tests: the SDK's own Client over StdioClientTransport, spawning
// `node bin/sbx.js mcp ARGS` with a test host's environment, as an agent's client would.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { existsSync, watch } from 'node:fs';
import { join } from 'node:path';
import { SBX_BIN } from '../../helpers/sbx-cli.js';

export interface Connected {
  client: Client;
  /** What the server wrote on stderr so far. */
  stderr(): string;
  /** Resolves once the server's stderr matches `pattern` (at once if it already does). */
  stderrMatches(pattern: RegExp): Promise<void>;
  close(): Promise<void>;
}

/**
 * A connected client; listTools is called once so the client checks every structuredContent against its
 * outputSchema. `configure`: declare capabilities and set handlers (an elicitation answerer) before it connects.
 */
export async function connectSbx(
  args: readonly string[],
  env: Record<string, string>,
  cwd: string,
  configure: { capabilities?: ClientCapabilities; setUp?: (client: Client) => void } = {},
): Promise<Connected> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SBX_BIN, 'mcp', ...args],
    env,
    cwd,
    stderr: 'pipe',
  });
  let err = '';
  const watchers = new Set<() => void>();
  transport.stderr?.on('data', (c: Buffer) => {
    err += c.toString();
    for (const check of watchers) check();
  });
  const stderrMatches = (pattern: RegExp) =>
    new Promise<void>((done) => {
      const check = () => {
        if (!pattern.test(err)) return;
        watchers.delete(check);
        done();
      };
      watchers.add(check);
      check();
    });
  const client = new Client(
    { name: 'sbx-test', version: '1' },
    configure.capabilities ? { capabilities: configure.capabilities } : {},
  );
  configure.setUp?.(client);
  await client.connect(transport);
  await client.listTools();
  return { client, stderr: () => err, stderrMatches, close: () => client.close() };
}

/** A run result as the tests read it. */
export interface RunResult {
  isError: boolean;
  text: string;
  report: {
    exitCode: number;
    setBy: 'child' | 'sbx';
    signal?: string;
    violations: { kind: string; rule: string; detail: string; source?: unknown }[];
    captured?: { stdout: { text: string; droppedBytes: number }; stderr: { text: string; droppedBytes: number } };
    error?: { code: string; message: string; hint?: string };
  };
}

export async function callRun(c: Connected, args: Record<string, unknown>): Promise<RunResult> {
  const r = await c.client.callTool({ name: 'run', arguments: args });
  const content = r.content as { type: string; text: string }[];
  return {
    isError: r.isError === true,
    text: content.map((p) => p.text).join('\n'),
    report: r.structuredContent as RunResult['report'],
  };
}

/** Resolves once `name` exists in `dir` (watched, no polling). */
export function fileAppears(dir: string, name: string): Promise<void> {
  return new Promise((done) => {
    const check = () => {
      if (!existsSync(join(dir, name))) return;
      watcher.close();
      done();
    };
    const watcher = watch(dir, check);
    check();
  });
}
