// A TCP port free on the host's loopback right now: the test binds it again at once (a narrow, harmless
// race with whatever else picks ports on this machine).
import { once } from 'node:events';
import { type AddressInfo, createServer } from 'node:net';

export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
