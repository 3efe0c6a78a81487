#!/usr/bin/env bash
# Installs sbx from this checkout: bubblewrap (through the system package manager, when missing),
# the npm dependencies, the build, and an `sbx` command on PATH; then runs a first sandboxed command.
# Needs Node.js 20.5 or newer. Safe to run again.
#
# Usage: ./install.sh [--force]
#   --force  replace an `sbx` already in the target directory that is not provably sbx's own (a link to
#            another checkout's bin/sbx.js is replaced without it; anything else, a dangling link
#            included, is left alone and the script stops).
# The target directory is /usr/local/bin (root, or when writable), else ~/.local/bin;
# SBX_INSTALL_BIN_DIR=DIR chooses another (the tests of this script use it).
set -euo pipefail
cd "$(dirname "$0")"

say() { printf 'install: %s\n' "$*"; }
die() { printf 'install: %s\n' "$*" >&2; exit 1; }

force=no
for arg in "$@"; do
  case "$arg" in
    --force) force=yes ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $arg (usage: ./install.sh [--force])" ;;
  esac
done

node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=5)?0:1)' 2>/dev/null ||
  die "Node.js 20.5 or newer is needed (found: $(node --version 2>/dev/null || echo none))"

if [ -n "${SBX_INSTALL_BIN_DIR:-}" ]; then bindir=$SBX_INSTALL_BIN_DIR
elif [ "$(id -u)" = 0 ] || [ -w /usr/local/bin ]; then bindir=/usr/local/bin
else bindir="$HOME/.local/bin"; fi
link="$bindir/sbx"
target="$PWD/bin/sbx.js"
# Checked before anything is installed: another program's `sbx` (npm's package of that name, an older
# copy from another checkout) is never replaced silently.
# A link to another checkout of this same package is an earlier install of sbx itself: it is replaced,
# and the script says so. Only a link proven to be one counts: its target is a regular file
# CHECKOUT/bin/sbx.js, and CHECKOUT/package.json parses with name "sbx-sandbox" and bin.sbx
# "bin/sbx.js". A dangling link proves nothing (whatever it named is gone), so it needs --force.
earlier_sbx() {
  [ -L "$link" ] || return 1
  local to; to=$(readlink "$link")
  # A relative link (npm's global bin: ../lib/node_modules/...) is relative to the link's directory.
  case "$to" in /*) ;; *) to="$(dirname "$link")/$to" ;; esac
  node -e '
    const fs = require("node:fs"), path = require("node:path");
    const to = path.resolve(process.argv[1]);
    const checkout = path.dirname(path.dirname(to));
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(checkout, "package.json"), "utf8"));
      const ours = pkg.name === "sbx-sandbox" && pkg.bin?.sbx === "bin/sbx.js";
      process.exit(ours && path.join(checkout, pkg.bin.sbx) === to && fs.lstatSync(to).isFile() ? 0 : 1);
    } catch {
      process.exit(1);
    }' "$to"
}
if [ -L "$link" ] && [ "$(readlink -f "$link")" = "$(readlink -f "$target")" ]; then
  linked=yes
elif earlier_sbx; then
  say "$link links to an earlier sbx install ($(readlink "$link")): it will link to this checkout"
  linked=no
elif [ -L "$link" ] && [ ! -e "$link" ]; then
  [ "$force" = yes ] || die "$link is a dangling link (to $(readlink "$link"), which no longer exists): nothing shows it was sbx's.
    Remove it (rm $link), or run ./install.sh --force to replace it with a link to $target"
  linked=no
elif [ -e "$link" ] || [ -L "$link" ]; then
  what=$( [ -L "$link" ] && echo "a link to $(readlink "$link")" || echo "$(stat -c %F "$link")" )
  [ "$force" = yes ] || die "$link already exists ($what) and is not a link to this checkout.
    Remove it, or run ./install.sh --force to replace it with a link to $target"
  linked=no
else
  linked=no
fi

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
# npm ci ran it already unless scripts are turned off (ignore-scripts): bin/sbx.js runs the Node.js
# recorded here, never the first `node` on PATH (docs/SECURITY.md, "sbx's own launcher").
node bin/record-node.js
say "bin/sbx.js runs $(cat node-path 2>/dev/null || echo "the first node on PATH (none recorded)")"

if [ "$linked" = yes ]; then
  say "$link already links to $target"
else
  if [ -e "$link" ] || [ -L "$link" ]; then say "replacing $link"; rm -f "$link"; fi
  mkdir -p "$bindir"
  ln -s "$target" "$link"
  say "linked $link -> $target"
fi
case ":$PATH:" in *":$bindir:"*) ;; *) say "note: $bindir is not on your PATH; add it: export PATH=\"$bindir:\$PATH\"" ;; esac

# The command as printed is the command as run: `sbx` when that name finds the link, else its full path.
sbx=$link
if [ "$(command -v sbx || true)" = "$link" ]; then sbx=sbx
elif command -v sbx >/dev/null; then say "note: \`sbx\` on your PATH is $(command -v sbx), not $link"; fi
first='echo "hello from $(hostname) as uid $(id -u); entries in HOME: $(ls -A ~ | wc -l), in /tmp: $(ls -A /tmp | wc -l)"'
# In an empty directory of its own: sbx refuses to sandbox, writable, a project that holds its own code.
demo=$(mktemp -d)
say "first sandboxed command, in the empty directory $demo: $sbx run -- sh -c '$first'"
(cd "$demo" && "$sbx" run -- sh -c "$first")
# sbx leaves an empty .sbx in a workspace that had none (held read-only during the run: docs/SECURITY.md).
if [ -d "$demo/.sbx" ]; then rmdir "$demo/.sbx"; fi
rmdir "$demo"
