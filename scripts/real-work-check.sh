#!/usr/bin/env bash
# Real work, unharmed: a real third-party package's own test suite runs inside `sbx run -p untrusted`,
# at the profile's default limits, with the same result as outside.
#
# The package is zod (its npm tarball ships its vitest suite under src/); its test dependencies are
# installed outside, from the npm registry, at pinned versions; then the suite runs outside and inside
# the sandbox, each writing vitest's JSON report, and every test's status must match (and pass).
# vitest loads WebAssembly (vite's module lexer), the kind of program an RLIMIT_AS "memory limit"
# broke. Run it as the user the check is about, e.g. the unprivileged one on a host without a
# writable cgroup:
#   su sbxtest -s /bin/bash -c 'HOME=/home/sbxtest scripts/real-work-check.sh'
# Needs the npm registry: without it the check fails, unless SBX_REAL_WORK_OFFLINE=1 says to skip it.
# SBX_REAL_WORK_DIR keeps the work directory (default: a temp dir, removed at the end).
set -euo pipefail

PACKAGE=zod@4.6.7
TESTS=src/v4
# What zod's suite imports besides itself (its repository's devDependencies for these tests).
TEST_DEPS=(vitest@4.1.12 esbuild@0.28.2 @web-std/file@3.0.3 recheck@4.5.0 @seriousme/openapi-schema-validator@2.11.0)

here=$(cd "$(dirname "$0")/.." && pwd)
sbx=("$(command -v node)" "$here/bin/sbx.js")
[ -f "$here/dist/cli.js" ] || { echo "real-work-check: $here/dist is missing: run npm run build" >&2; exit 1; }

if [ "${SBX_REAL_WORK_OFFLINE:-}" = 1 ]; then
  echo "real-work-check: SKIPPED (SBX_REAL_WORK_OFFLINE=1)"
  exit 0
fi

work=${SBX_REAL_WORK_DIR:-$(mktemp -d -t sbx-real-work-XXXXXX)}
[ -n "${SBX_REAL_WORK_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
cd "$work"

echo "real-work-check: $PACKAGE as uid $(id -u), in $work"
if ! npm pack --silent "$PACKAGE" >pack.log 2>&1; then
  cat pack.log >&2
  echo "real-work-check: npm pack failed (offline? SBX_REAL_WORK_OFFLINE=1 skips)" >&2
  exit 1
fi
rm -rf package && tar xzf ./*.tgz
cd package
if ! npm install --no-save --no-audit --no-fund --loglevel=error "${TEST_DEPS[@]}" >../install.log 2>&1; then
  cat ../install.log >&2
  exit 1
fi

vitest=(node node_modules/vitest/vitest.mjs run "$TESTS" --reporter=json)

echo "real-work-check: outside"
set +e
"${vitest[@]}" --outputFile=real-work-outside.json >../outside.log 2>&1
outside_code=$?
echo "real-work-check: inside sbx run -p untrusted"
"${sbx[@]}" run -p untrusted --report-file ../sbx-report.json -- \
  "${vitest[@]}" --outputFile=real-work-inside.json >../inside.log 2>../inside.err
inside_code=$?
set -e
grep '^sbx:' ../inside.err || true

node - "$outside_code" "$inside_code" <<'EOF'
const { readFileSync, existsSync } = require('node:fs');
const [outsideCode, insideCode] = process.argv.slice(2).map(Number);
const load = (name) => {
  // Inside the package directory: the workspace is all the sandbox may write.
  const file = `real-work-${name}.json`;
  if (!existsSync(file)) {
    const log = readFileSync(`../${name}.log`, 'utf8').slice(-3000);
    console.error(`real-work-check: ${name}: vitest wrote no report; its output:\n${log}`);
    process.exit(1);
  }
  const r = JSON.parse(readFileSync(file, 'utf8'));
  const tests = new Map();
  for (const f of r.testResults) {
    const file = f.name.replace(/^.*\/package\//, '');
    for (const t of f.assertionResults) tests.set(`${file} > ${t.fullName}`, t.status);
  }
  return { r, tests };
};
const out = load('outside');
const ins = load('inside');
const line = (name, { r }, code) => {
  const counts = `${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests} skipped`;
  console.log(`real-work-check: ${name}: ${counts} (${r.testResults.length} files), exit ${code}`);
};
line('outside', out, outsideCode);
line('inside ', ins, insideCode);
const names = new Set([...out.tests.keys(), ...ins.tests.keys()]);
const differ = [...names].filter((k) => out.tests.get(k) !== ins.tests.get(k));
for (const k of differ.slice(0, 20)) {
  console.log(`real-work-check: differs: ${k}: outside ${out.tests.get(k)}, inside ${ins.tests.get(k)}`);
}
const report = JSON.parse(readFileSync('../sbx-report.json', 'utf8'));
const memory = report.limits.find((l) => l.name === 'memory');
const how = memory.enforced ? `enforced by ${memory.mechanism}` : `not enforced (${memory.reason})`;
console.log(`real-work-check: sbx: memory ${memory.value} ${how}`);
const same = differ.length === 0 && outsideCode === insideCode;
const allPass = ins.r.numFailedTests === 0 && ins.r.numTotalTests > 0 && insideCode === 0;
console.log(`real-work-check: ${same && allPass ? 'OK: the same result inside and outside' : 'FAILED'}`);
console.log(`${ins.r.numPassedTests} passed, ${ins.r.numFailedTests} failed`);
process.exit(same && allPass ? 0 : 1);
EOF
