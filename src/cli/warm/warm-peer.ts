// Which process a warm call came from (cli/warm/warm-server.ts), and for a run, whether the command
// would inherit the same from the server as from it. Node cannot read a unix
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

function statusLines(pid: string, keys: readonly string[] = STATUS_LINES): Map<string, string> | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const lines = new Map<string, string>();
    for (const line of text.split('\n')) {
      const key = keys.find((k) => line.startsWith(k));
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

/**
 * What a command inherits from the process that spawns it, besides the environment and the working
 * directory (the call carries those): the umask, groups, capabilities, CPU and memory-node sets
 * (status lines); the resource limits, the cgroup, the OOM score adjustment, the audit login and
 * session, the LSM label (files of /proc/PID); the nice value.
 */
const INHERITED_STATUS = [
  'Umask:',
  'Gid:',
  'Groups:',
  'CapInh:',
  'CapPrm:',
  'CapEff:',
  'CapBnd:',
  'CapAmb:',
  'Cpus_allowed_list:',
  'Mems_allowed_list:',
];
const INHERITED_FILES = ['limits', 'cgroup', 'oom_score_adj', 'loginuid', 'sessionid', 'attr/current'];

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses). */
function statFields(pid: string): string[] | undefined {
  const text = read(`/proc/${pid}/stat`);
  const end = text?.lastIndexOf(')') ?? -1;
  return text === undefined || end < 0 ? undefined : text.slice(end + 2).split(' ');
}

/** Whether `pid` has a controlling terminal (stat's tty_nr): a command rule's question would be asked there. */
export function hasControllingTerminal(pid: number): boolean {
  const tty = statFields(String(pid))?.[4];
  return tty === undefined || tty !== '0';
}

/**
 * The first thing a command would inherit differently from this process than from `pid` (a proven
 * peer), or undefined when there is none: a run is served only then (cli/warm/warm-run.ts).
 */
export function inheritedDifference(pid: number): string | undefined {
  const id = String(pid);
  const mine = statusLines('self', INHERITED_STATUS);
  const theirs = statusLines(id, INHERITED_STATUS);
  if (!mine || !theirs) return 'status';
  for (const key of INHERITED_STATUS) if (mine.get(key) !== theirs.get(key)) return key.slice(0, -1);
  for (const file of INHERITED_FILES) if (read(`/proc/self/${file}`) !== read(`/proc/${id}/${file}`)) return file;
  // stat's 17th field after the name: the nice value.
  const nice = statFields(id)?.[16];
  if (nice === undefined || nice !== statFields('self')?.[16]) return 'nice';
  return undefined;
}
