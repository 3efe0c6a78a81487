#!/usr/bin/env bash
# Installs sbx from this checkout: bubblewrap (through the system package manager, when missing),
# the npm dependencies, the build, and an `sbx` command on PATH; then runs a first sandboxed command.
# Needs Node.js 20.5 or newer. Safe to run again.
#
# Usage: ./install.sh [--force]
#   --force  replace an `sbx` already in the target directory that is not sbx's own (a link to another
#            checkout of sbx is replaced without it; anything else is left alone and the script stops).
set -euo pipefail
cd "$(dirname "$0")"

say() { printf 'install: %s\n' "$*"; }
die() { printf 'install: %s\n' "$*" >&2; exit 1; }

force=no
for arg in "$@"; do
  case "$arg" in
    --force) force=yes ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $arg (usage: ./install.sh [--force])" ;;
  esac
done

if [ "$(id -u)" = 0 ] || [ -w /usr/local/bin ]; then bindir=/usr/local/bin; else bindir="$HOME/.local/bin"; fi
link="$bindir/sbx"
target="$PWD/bin/sbx.js"
# Checked before anything is installed: another program's `sbx` (npm's package of that name, an older
# copy from another checkout) is never replaced silently.
# A link to another checkout of this same package (or a dangling link to one that was deleted) is an
# earlier install of sbx itself: it is replaced, and the script says so.
earlier_sbx() {
  [ -L "$link" ] || return 1
  local to; to=$(readlink "$link")
  # A relative link (npm's global bin: ../lib/node_modules/...) is relative to the link's directory.
  case "$to" in /*) ;; *) to="$(dirname "$link")/$to" ;; esac
  case "$to" in */bin/sbx.js) ;; *) return 1 ;; esac
  [ -e "$to" ] || return 0
  grep -q '"name": *"sbx-sandbox"' "$(dirname "$(dirname "$to")")/package.json" 2>/dev/null
}
if [ -L "$link" ] && [ "$(readlink -f "$link")" = "$(readlink -f "$target")" ]; then
  linked=yes
elif earlier_sbx; then
  say "$link links to an earlier sbx install ($(readlink "$link")): it will link to this checkout"
  linked=no
elif [ -e "$link" ] || [ -L "$link" ]; then
  what=$( [ -L "$link" ] && echo "a link to $(readlink "$link")" || echo "$(stat -c %F "$link")" )
  [ "$force" = yes ] || die "$link already exists ($what) and is not a link to this checkout.
    Remove it, or run ./install.sh --force to replace it with a link to $target"
  linked=no
else
  linked=no
fi

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
say "first sandboxed command: $sbx run -- sh -c '$first'"
"$sbx" run -- sh -c "$first"
