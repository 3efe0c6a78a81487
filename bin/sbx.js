#!/bin/sh
":" //; if [ -n "${NODE_EXTRA_CA_CERTS+x}" ]; then SBX_HOST_NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS; export SBX_HOST_NODE_EXTRA_CA_CERTS; unset NODE_EXTRA_CA_CERTS; fi; exec node "$0" "$@"
// The line above is both shell and JavaScript. As a shell script it takes NODE_EXTRA_CA_CERTS out of
// Node's way before starting it: Node parses that file at every start-up (tens of ms) and sbx makes
// no TLS connections; main() puts the value back into the environment it filters for the sandbox.
// As JavaScript it is a string and a comment. Beyond that this file stays thin: the compile cache
// (Node 22.1+) and the bundled CLI.
import module from 'node:module';

module.enableCompileCache?.();
const { main } = await import('../dist/cli.js');
await main(process.argv);
