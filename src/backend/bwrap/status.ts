// bwrap's --json-status-fd, read: one JSON object a line, `{"child-pid": N}` once the sandbox is built
// and `{"exit-code": N}` when the command ended (bwrap(1)). Pure. sbx-landlock writes the same two
// lines on its status descriptor (native/sbx-landlock.c), so backend/host/exec.ts supervises both alike.

/** A number from bwrap's JSON status lines (`child-pid`, `exit-code`), read as it streams in. */
function statusValue(statusText: string, key: 'child-pid' | 'exit-code'): number | undefined {
  const m = new RegExp(`"${key}"\\s*:\\s*(-?\\d+)`).exec(statusText);
  return m ? Number(m[1]) : undefined;
}

/** The pid (host view) of the sandbox's init: the sandbox is built once bwrap has said it. */
export function statusChildPid(statusText: string): number | undefined {
  return statusValue(statusText, 'child-pid');
}

/** The command's exit status, once it ended. */
export function statusExitCode(statusText: string): number | undefined {
  return statusValue(statusText, 'exit-code');
}
