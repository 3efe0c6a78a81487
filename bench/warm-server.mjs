// The warm server for the benches' --warm rows (bench/launch.mjs, bench/agents.mjs), started as the
// first --warm call would start it: with the flags sbx starts it with (src/cli/warm/warm-server.ts
// SERVER_NODE_FLAGS). undefined where dist/sbx-warm, the native client, was not built (no C compiler).
// It serves the rows' user; the caller stops it at the end.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export async function startWarmServer(root, env) {
  if (!existsSync(join(root, 'dist', 'sbx-warm'))) return undefined;
  const server = spawn(process.execPath, ['--max-semi-space-size=2', join(root, 'bin', 'sbx.js'), 'warm-server'], {
    env,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  await new Promise((resolve, reject) => {
    server.stdout.once('data', resolve);
    server.once('exit', (code) => reject(new Error(`sbx warm-server exited ${code}`)));
  });
  return server;
}
