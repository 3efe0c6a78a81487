#!/usr/bin/env bash
# Tags a release of the GitHub Action: a commit that is HEAD plus dist/, built from HEAD's lock file,
# so a workflow that pins the tag (uses: OWNER/sbx@v1.2.0) runs sbx at once instead of installing the
# dev dependencies and building it in every job (action.yml, "Install sbx"). HEAD and the branch are
# left as they are: the release commit is made beside them, through a temporary index, and only the
# tag names it. Anyone can check a release: check out its parent, build it the same way, compare dist/
# (the build is reproducible: esbuild, the same lock file, no timestamps).
#
# Usage: scripts/action-release.sh TAG      (then: git push origin TAG)
set -euo pipefail
cd "$(dirname "$0")/.."

die() { printf 'action-release: %s\n' "$*" >&2; exit 1; }

tag=${1:-}
[ -n "$tag" ] || die 'usage: scripts/action-release.sh TAG'
git check-ref-format "refs/tags/$tag" || die "$tag is not a valid tag name"
git rev-parse -q --verify "refs/tags/$tag" >/dev/null && die "tag $tag exists already"
# What is built must be what is committed: no local change may slip into dist/.
[ -z "$(git status --porcelain --untracked-files=no)" ] || die 'the work tree has changes: commit or drop them first'

head=$(git rev-parse HEAD)
npm ci --no-audit --no-fund
npm run build

index=$(mktemp)
trap 'rm -f "$index"' EXIT
export GIT_INDEX_FILE=$index
git read-tree "$head"
# dist/ is ignored on the branches (.gitignore): only a release commit carries it.
git add --force dist
tree=$(git write-tree)
unset GIT_INDEX_FILE
commit=$(git commit-tree "$tree" -p "$head" -m "release $tag: dist/ built from $head")
git tag -a "$tag" "$commit" -m "sbx $tag (the GitHub Action runs dist/ as built here)"
printf 'action-release: tagged %s (%s: %s plus dist/)\n' "$tag" "$commit" "$head"
