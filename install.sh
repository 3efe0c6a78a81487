#!/usr/bin/env bash
# Installs sbx from this checkout: bubblewrap (through the system package manager, when missing),
# the npm dependencies, the build, and an `sbx` command on PATH; then runs a first sandboxed command.
# Needs Node.js 20.5 or newer. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")"

say() { printf 'install: %s\n' "$*"; }
die() { printf 'install: %s\n' "$*" >&2; exit 1; }

node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=5)?0:1)' 2>/dev/null ||
  die "Node.js 20.5 or newer is needed (found: $(node --version 2>/dev/null || echo none))"

if ! command -v bwrap >/dev/null 2>&1; then
  if command -v apt-get >/dev/null; then cmd="apt-get update && apt-get install -y bubblewrap"
  elif command -v dnf >/dev/null; then cmd="dnf install -y bubblewrap"
  elif command -v pacman >/dev/null; then cmd="pacman -S --noconfirm bubblewrap"
  elif command -v zypper >/dev/null; then cmd="zypper --non-interactive install bubblewrap"
  else die "no known package manager: install bubblewrap (bwrap) yourself, then run ./install.sh again"; fi
  if [ "$(id -u)" = 0 ]; then
    say "installing bubblewrap: $cmd"; sh -c "$cmd" >/dev/null
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    say "installing bubblewrap with sudo: $cmd"; sudo sh -c "$cmd" >/dev/null
  else
    die "bubblewrap is missing. Run this as root (or with sudo), then ./install.sh again:
    sudo sh -c '$cmd'"
  fi
fi

say "installing npm dependencies and building"
npm ci --no-audit --no-fund --loglevel=error >/dev/null
npm run build --silent >/dev/null

if [ "$(id -u)" = 0 ] || [ -w /usr/local/bin ]; then bindir=/usr/local/bin; else bindir="$HOME/.local/bin"; fi
mkdir -p "$bindir"
ln -sf "$PWD/bin/sbx.js" "$bindir/sbx"
say "linked $bindir/sbx -> $PWD/bin/sbx.js"
case ":$PATH:" in *":$bindir:"*) ;; *) say "note: $bindir is not on your PATH; add it: export PATH=\"$bindir:\$PATH\"" ;; esac

say "first sandboxed command: sbx run -- sh -c 'echo hello from \$(hostname) as uid \$(id -u); ls ~ /tmp | wc -l'"
"$bindir/sbx" run -- sh -c 'echo "hello from $(hostname) as uid $(id -u); HOME and /tmp hold $(ls -A ~ /tmp | grep -vc :) entries"'
