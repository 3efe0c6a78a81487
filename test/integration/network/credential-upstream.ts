// The far side of the credentials integration tests: an HTTPS server on 127.0.0.1 with its own test
// CA (fixtures/credentials-*.pem: api., other. and third.sbx-cred.test, valid to 2126), and a plain
// HTTP one. Each records what arrived, so a test can see the value reach the server while the sandbox
// held only the placeholder. /git/ serves a repository through `git http-backend` (CGI), behind HTTP
// basic auth whose password must be the value: git's credential-helper flow end to end.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

const FIXTURES = new URL('./fixtures/', import.meta.url);
export const CREDENTIALS_CA_PATH = new URL('credentials-ca.pem', FIXTURES).pathname;

export interface Arrived {
  scheme: 'http' | 'https';
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  alpn?: string;
}

export interface CredentialUpstream {
  httpsPort: number;
  httpPort: number;
  arrived: Arrived[];
  close(): Promise<void>;
}

/** `git http-backend` for one request: CGI variables in, its status and headers parsed from its output. */
function gitBackend(req: IncomingMessage, res: ServerResponse, body: Buffer, projectRoot: string): void {
  const url = new URL(req.url ?? '/', 'https://x');
  const child = spawn('git', ['http-backend'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GIT_PROJECT_ROOT: projectRoot,
      GIT_HTTP_EXPORT_ALL: '1',
      PATH_INFO: url.pathname.replace(/^\/git/, ''),
      QUERY_STRING: url.search.slice(1),
      REQUEST_METHOD: req.method ?? 'GET',
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      CONTENT_LENGTH: String(body.length),
      REMOTE_USER: 'x-access-token',
    },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  child.stdin.end(body);
  const chunks: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => chunks.push(c));
  child.on('close', () => {
    const out = Buffer.concat(chunks);
    const split = out.indexOf('\r\n\r\n');
    const head = out.subarray(0, split).toString('latin1').split('\r\n');
    let status = 200;
    const headers: Record<string, string> = {};
    for (const line of head) {
      const [name, ...rest] = line.split(':');
      const value = rest.join(':').trim();
      if (name?.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
      else if (name) headers[name] = value;
    }
    res.writeHead(status, headers);
    res.end(out.subarray(split + 4));
  });
}

/** `token`: the value a request must carry (bearer, basic password) for /git/ and /auth to let it in. */
export async function startCredentialUpstream(token: string, gitRoot: string): Promise<CredentialUpstream> {
  const arrived: Arrived[] = [];
  const handler = (scheme: Arrived['scheme']) => (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const alpn = 'alpnProtocol' in req.socket ? String(req.socket.alpnProtocol) : undefined;
      arrived.push({
        scheme,
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: body.toString('latin1'),
        ...(alpn ? { alpn } : {}),
      });
      const auth = req.headers.authorization ?? '';
      const basic = /^Basic (.*)$/.exec(auth);
      const password = basic
        ? Buffer.from(basic[1] as string, 'base64')
            .toString()
            .split(':')
            .slice(1)
            .join(':')
        : undefined;
      const authorised = auth === `Bearer ${token}` || auth === `token ${token}` || password === token;
      if (req.url?.startsWith('/git/') || req.url?.startsWith('/auth')) {
        if (!authorised) {
          res.writeHead(401, { 'www-authenticate': 'Basic realm="sbx test"', 'content-type': 'text/plain' });
          res.end('unauthorised\n');
          return;
        }
        if (req.url.startsWith('/git/')) return gitBackend(req, res, body, gitRoot);
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      // Never the request's own headers: a server that echoed the value would hand it to the sandbox.
      res.end(`${scheme} ok ${authorised ? 'authorised' : 'anonymous'}\n`);
    });
  };
  const https = createHttpsServer(
    {
      cert: readFileSync(new URL('credentials-server.pem', FIXTURES)),
      key: readFileSync(new URL('credentials-server-key.pem', FIXTURES)),
      ALPNProtocols: ['http/1.1'],
    },
    handler('https'),
  );
  const http = createHttpServer(handler('http'));
  const listen = async (s: Server) => {
    s.listen(0, '127.0.0.1');
    await once(s, 'listening');
    return (s.address() as AddressInfo).port;
  };
  const [httpsPort, httpPort] = [await listen(https), await listen(http)];
  return {
    httpsPort,
    httpPort,
    arrived,
    async close() {
      for (const s of [https, http]) s.closeAllConnections();
      await Promise.all([https, http].map((s) => new Promise((r) => s.close(r))));
    },
  };
}
