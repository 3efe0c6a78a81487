#!/usr/bin/env node
// What a tool call of `sbx mcp` costs over the library call it makes: one `sbx mcp` server (spawned by
// the SDK's own client over stdio, as an agent's client would) answering `run {command: ["true"]}`,
// against the library's run({ command: ['true'], stdio: 'capture' }) in this process, interleaved in
// the same run under the same profile and workspace. Also the server's start (spawn to initialize
// answered). A benchmark, not a test: it prints figures and never fails on a time.
//   node bench/mcp.mjs [--runs 40]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const runs = Number(argv[argv.indexOf('--runs') + 1]) || 40;
const work = mkdtempSync(join(tmpdir(), 'sbx-bench-mcp-'));
const env = { ...process.env, SBX_BENCH: '1' };
delete env.NODE_EXTRA_CA_CERTS;

const { run } = await import(join(root, 'dist', 'api.js'));
const libraryCall = () =>
  run({ command: ['true'], profile: 'agent', workspace: work, cwd: work, stdio: 'capture', hostEnv: env });

const startedAt = performance.now();
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [join(root, 'bin', 'sbx.js'), 'mcp', '-p', 'agent', '--workspace', work, '--no-audit'],
  env,
  cwd: work,
  stderr: 'ignore',
});
const client = new Client({ name: 'sbx-bench', version: '1' });
await client.connect(transport);
const startMs = performance.now() - startedAt;
await client.listTools();
const mcpCall = async () => {
  const r = await client.callTool({ name: 'run', arguments: { command: ['true'] } });
  if (r.isError) throw new Error(`run true failed: ${JSON.stringify(r.content)}`);
};

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { median: q(0.5), p95: q(0.95), min: s[0] };
};
const timed = async (f) => {
  const t = performance.now();
  await f();
  return performance.now() - t;
};

// One of each first (caches, compile cache, the server's lazy chunks), then interleaved.
await libraryCall();
await mcpCall();
const lib = [];
const mcp = [];
for (let i = 0; i < runs; i++) {
  lib.push(await timed(libraryCall));
  mcp.push(await timed(mcpCall));
}
await client.close();
rmSync(work, { recursive: true, force: true });

const fmt = (x) => x.toFixed(1);
const l = stats(lib);
const m = stats(mcp);
console.log(
  `\n### sbx mcp (${runs} interleaved calls per row, profile agent, node ${process.version}, uid ${process.getuid()})\n`,
);
console.log('| row | what | median ms | p95 ms | min ms |');
console.log('|---|---|--:|--:|--:|');
console.log(
  `| mcp-call | an MCP round trip per call: tools/call run {command: ["true"]} | ${fmt(m.median)} | ${fmt(m.p95)} | ${fmt(m.min)} |`,
);
console.log(
  `| lib-call | library run({ command: ['true'], stdio: 'capture' }) in-process | ${fmt(l.median)} | ${fmt(l.p95)} | ${fmt(l.min)} |`,
);
console.log(`| mcp-start | sbx mcp started until initialize answered | ${fmt(startMs)} | | |`);
console.log(`\nMCP over the library: ${fmt(m.median - l.median)} ms per call (x${(m.median / l.median).toFixed(2)})`);
