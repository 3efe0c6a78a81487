#!/bin/sh
":" //; if [ -n "${NODE_EXTRA_CA_CERTS+x}" ]; then SBX_HOST_NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS; export SBX_HOST_NODE_EXTRA_CA_CERTS; unset NODE_EXTRA_CA_CERTS; fi; f() { case $1 in ''|*[!0-9]*) ;; *) [ -e /proc/self/fd/$1 ] && ! [ /proc/self/fd/$1 -ef "$0" ] && SBX_CALLER_FDS="$SBX_CALLER_FDS $1";; esac; }; SBX_CALLER_FDS=; w=; for a; do if [ "$w" ]; then f "$a"; w=; else case $a in --) break;; --report-fd) w=1;; --report-fd=*) f "${a#*=}";; esac; fi; done; export SBX_CALLER_FDS; s=$0; if [ -L "$s" ]; then for r in /usr/bin/readlink /bin/readlink; do if [ -x "$r" ]; then s=$("$r" -f -- "$s"); break; fi; done; fi; case $s in */*) d=${s%/*};; *) d=.;; esac; n=; if [ -f "$d/../node-path" ]; then read -r n < "$d/../node-path"; fi; case $n in /*) [ -x "$n" ] || n=;; *) n=;; esac; [ "$n" ] || n=node; case $1 in hook|run) if [ -x "$d/../dist/sbx-warm" ]; then for a; do case $a in --) break;; --warm) exec "$d/../dist/sbx-warm" "$n" "$0" "$@";; esac; done; fi;; esac; exec "$n" "$0" "$@"
// The line above is both shell and JavaScript. As a shell script it takes NODE_EXTRA_CA_CERTS out of
// Node's way before starting it: Node parses that file at every start-up (tens of ms) and sbx makes
// no TLS connections; main() puts the value back into the environment it filters for the sandbox.
// It also checks each `--report-fd N` (before the first `--`): Node opens its own epoll, eventfd and
// pipes on the lowest free numbers at start-up and marks inherited low descriptors close-on-exec, so
// once Node runs, a descriptor the caller never opened cannot be told from one of Node's. The shell
// still has the caller's table: `[ -e /proc/self/fd/N ]` (a stat, which opens nothing), minus the
// shell's own descriptor on this script (-ef "$0"). SBX_CALLER_FDS lists the numbers found open and
// is always set here, so a value from the caller's environment never reaches Node; src/cli/run-command.ts
// accepts --report-fd N only when N is listed. A missed flag (it follows `--` as another flag's
// value) is refused, never confused.
// Last, which Node.js runs sbx: the one recorded at install in the package's `node-path`
// (bin/record-node.js), not the first `node` on PATH. PATH may hold a directory a sandbox can write
// (.venv/bin, node_modules/.bin, direnv's PATH_add, a CI GITHUB_PATH entry), and a `node` planted
// there would run with the user's rights at the next `sbx`, hook call or Action step (docs/SECURITY.md, "sbx's own launcher").
// The package root is found from this file's real path: `$0` is often a link (/usr/local/bin/sbx),
// resolved by readlink named by its absolute path, since any command looked up on PATH could be a
// planted one too; everything else here is a shell builtin. Without a record (npm --ignore-scripts)
// the PATH lookup remains, and sbx warns when PATH holds a directory the run can write.
// `sbx hook ... --warm`, and `sbx run` with --warm before the first `--`, exec the native client beside
// the bundle instead (native/sbx-warm.c), given that same Node.js: the warm server serves the call, or
// the client execs Node with the same arguments (the server, not this loop, decides what --warm is).
// As JavaScript it is a string and a comment. Beyond that this file stays thin: `sbx --version`
// answered without loading the CLI, the compile cache (Node 22.1+) kept in sbx's own cache
// directory (src/host/compile-cache.ts says why not Node's default), and the bundled CLI.
import module from 'node:module';

if (process.argv.length === 3 && (process.argv[2] === '--version' || process.argv[2] === '-V')) {
  // What commander prints for it (src/cli/program.ts); a reader that stopped reading is no error.
  process.stdout.on('error', (error) => {
    if (error.code !== 'EPIPE') throw error;
  });
  process.stdout.write(`${(await import('../dist/version.js')).VERSION}\n`);
} else {
  if (module.enableCompileCache) {
    const dir = (await import('../dist/compile-cache.js')).compileCacheDir(process.env);
    if (dir) module.enableCompileCache(dir);
  }
  const { main } = await import('../dist/cli.js');
  await main(process.argv);
}
