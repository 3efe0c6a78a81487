// Which process a warm hook call came from (cli/warm/warm-server.ts). Node cannot read a unix
// socket's peer credentials, so the client proves its pid: the server sends a nonce, the client sets
// it as its own comm (prctl PR_SET_NAME: only a process can set its own), and the server reads it
// back from /proc/PID/comm. A process inside a bwrap or nsjail sandbox that reached the socket could
// claim any pid, but can set the comm of none outside its sandbox; the pid it can prove has other
// namespaces, and is refused. native/sbx-warm.c checks the server the same way, with SO_PEERCRED.
import { readFileSync, readlinkSync } from 'node:fs';

const NAMESPACES = ['mnt', 'user', 'net', 'pid', 'ipc', 'uts', 'cgroup'];
/** The status lines that must match: the same user, under the same seccomp filters and no_new_privs. */
const STATUS_LINES = ['Uid:', 'Seccomp:', 'Seccomp_filters:', 'NoNewPrivs:'];

function link(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}

function statusLines(pid: string): Map<string, string> | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const lines = new Map<string, string>();
    for (const line of text.split('\n')) {
      const key = STATUS_LINES.find((k) => line.startsWith(k));
      if (key) lines.set(key, line.slice(key.length));
    }
    return lines;
  } catch {
    return undefined;
  }
}

/**
 * Whether `pid` is a process that shows `nonce` as its comm and is where this process is: the same
 * namespaces (a kernel without one has it for neither), uid, seccomp filters and no_new_privs.
 */
export function isProvenPeer(pid: number, nonce: string): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  const id = String(pid);
  let comm: string;
  try {
    comm = readFileSync(`/proc/${id}/comm`, 'utf8');
  } catch {
    return false;
  }
  if (comm !== `${nonce}\n`) return false;
  for (const ns of NAMESPACES) if (link(`/proc/self/ns/${ns}`) !== link(`/proc/${id}/ns/${ns}`)) return false;
  const mine = statusLines('self');
  const theirs = statusLines(id);
  if (!mine || !theirs) return false;
  return STATUS_LINES.every((key) => mine.get(key) === theirs.get(key));
}
