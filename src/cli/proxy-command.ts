// `sbx proxy`: the egress proxy of `sbx run` as a long-running command of its own, on one TCP port, for
// clients that are not a sandbox of this host (a Kubernetes workload: `sbx export k8s`). The rules are
// a profile's network lists and the flags (network/proxy-rules.ts); each refusal and connection is one
// line on stdout, naming host and port only; SIGTERM or SIGINT closes it and exits 0.
import { profileSearch, SbxError } from '../api.js';
import { canonicalIp, classifyAddress } from '../network/egress.js';
import { DEFAULT_PROXY_PORT, proxyRulesOf } from '../network/proxy-rules.js';
import { loadProfile } from '../profile/host/load.js';
import type { EgressEvent } from '../network/host/index.js';
import { VERSION } from '../version.js';

export interface ProxyFlags {
  profile?: string;
  allowDomain?: string[];
  denyDomain?: string[];
  allowPrivate?: string[];
  listen?: string;
  allowRemote?: boolean;
  jsonLog?: boolean;
  trustProfile?: string;
}

export const DEFAULT_LISTEN = `127.0.0.1:${DEFAULT_PROXY_PORT}`;

/** `ADDR:PORT` or `[V6]:PORT`, ADDR an IP literal (a name could resolve to an address nobody meant). */
export function parseListen(text: string): { host: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):([0-9]{1,5})$/.exec(text);
  const host = m ? canonicalIp((m[1] ?? m[2]) as string) : undefined;
  const port = m ? Number(m[3]) : NaN;
  if (host === undefined || !(port >= 0 && port <= 65535))
    throw new SbxError('USAGE', `--listen ${JSON.stringify(text)} is not ADDRESS:PORT with an IP address`, {
      hint: `e.g. --listen ${DEFAULT_LISTEN}, --listen [::1]:${DEFAULT_PROXY_PORT}, or --listen 0.0.0.0:${DEFAULT_PROXY_PORT} --allow-remote`,
    });
  return { host, port };
}

/** Whether only this host's own processes can connect to `host` (so no flag is needed to serve it). */
export function isLoopbackListen(host: string): boolean {
  return classifyAddress(host) === 'loopback';
}

type LogRecord = Record<string, string | number>;

/** One event as the log record: host and port only (EgressEvent never carries a path, query or header). */
export function logRecordOf(event: EgressEvent): LogRecord {
  switch (event.kind) {
    case 'refused': {
      const v = event.violation;
      return {
        event: 'refused',
        via: event.via,
        host: v.host ?? '',
        port: v.port ?? 0,
        rule: v.rule,
        detail: v.detail,
      };
    }
    case 'failed':
      return { event: 'failed', via: event.via, host: event.host, port: event.port, reason: event.reason };
    case 'open':
      return { event: 'open', via: event.via, host: event.host, port: event.port, address: event.address };
    case 'close':
      return {
        event: 'close',
        via: event.via,
        host: event.host,
        port: event.port,
        bytesIn: event.bytesIn,
        bytesOut: event.bytesOut,
      };
  }
}

/** `--json-log`: one JSON object a line, `time` first; else `sbx proxy: EVENT key=value ...`. */
export function formatLogLine(record: LogRecord, json: boolean, time: Date): string {
  if (json) return `${JSON.stringify({ time: time.toISOString(), ...record })}\n`;
  const { event, ...rest } = record;
  const fields = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === 'number' ? v : JSON.stringify(v)}`);
  return `sbx proxy: ${event} ${fields.join(' ')}\n`;
}

export async function proxyCommand(flags: ProxyFlags): Promise<void> {
  const listenText = flags.listen ?? DEFAULT_LISTEN;
  const listen = parseListen(listenText);
  if (!isLoopbackListen(listen.host) && !flags.allowRemote)
    throw new SbxError('USAGE', `--listen ${listenText} serves every host that can reach this address`, {
      hint: 'add --allow-remote if that is meant (a pod, behind a NetworkPolicy), or listen on 127.0.0.1',
    });
  let network: Parameters<typeof proxyRulesOf>[0];
  if (flags.profile !== undefined) {
    const trust = flags.trustProfile?.split(',').filter(Boolean) ?? [];
    // The profile's trust as `sbx run` judges it: a project profile needs its pin or its hash named here.
    const resolved = await loadProfile(
      flags.profile,
      profileSearch(process.cwd(), process.env, process.getuid?.() ?? 0, { trustProfiles: trust }),
      VERSION,
    );
    network = resolved.profile.network ?? 'none';
  }
  const rules = proxyRulesOf(network, flags.profile, {
    allowDomains: flags.allowDomain ?? [],
    denyDomains: flags.denyDomain ?? [],
    allowPrivate: flags.allowPrivate ?? [],
  });
  const log = (record: LogRecord): void => {
    process.stdout.write(formatLogLine(record, flags.jsonLog ?? false, new Date()));
  };
  // Listened for before the port opens: from then on a signal closes the proxy rather than killing it.
  const stop = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  const { listenEgressProxy } = await import('../network/host/index.js');
  const proxy = await listenEgressProxy({ rules, ...listen, onEvent: (e) => log(logRecordOf(e)) });
  if (!isLoopbackListen(listen.host))
    process.stderr.write(
      `sbx proxy: warning: listening on ${listenText}: anyone who can reach it may use the allow-list (--allow-remote)\n`,
    );
  // The 'listening' line is the ready signal (a test, a supervisor): the port is bound when it is written.
  log({
    event: 'listening',
    address: listen.host,
    port: proxy.port,
    allow: rules.allow.length,
    deny: rules.deny.length,
    allowPrivate: rules.allowPrivate.length,
  });
  const signal = await stop;
  await proxy.close();
  const stats = proxy.stats();
  log({
    event: 'stopped',
    signal,
    connections: stats.connections.reduce((n, d) => n + d.count, 0),
    refused: stats.violations.length + stats.violationsDropped,
  });
}
