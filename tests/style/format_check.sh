#!/usr/bin/env bash
# The house style holds by itself: every C++ source of the project that git
# tracks (probe/, daemon/, collector/, tests/, docs/man/) must be as the
# repository's .clang-format lays it out. Prints the files that differ and
# the first lines clang-format would change, and exits 1; 0 when all agree.
#
#   format_check.sh SOURCE_DIR [CLANG_FORMAT]
#
# To mend: clang-format --style=file -i FILE (a tree formatted once, in a
# commit of its own, keeps the history of real changes readable).
set -euo pipefail
src=${1:?usage: format_check.sh SOURCE_DIR [CLANG_FORMAT]}
clang_format=${2:-clang-format}
cd "$src"
command -v "$clang_format" >/dev/null || {
  echo "format_check: $clang_format not found (deploy/dev-setup.sh --tests installs clang-format)" >&2
  exit 1
}
# Tracked files only: a build tree or a scratch file is nobody's style.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cpp' '*.h' ':!:tests/fixtures/*')
else
  mapfile -t files < <(find probe daemon collector tests docs -name '*.cpp' -o -name '*.h' |
    grep -v '^tests/fixtures/' | sort)
fi
((${#files[@]})) || { echo "format_check: no sources found under $src" >&2; exit 1; }
bad=0
for f in "${files[@]}"; do
  if ! out=$("$clang_format" --style=file --dry-run -Werror "$f" 2>&1); then
    echo "$f: not formatted (clang-format --style=file -i $f):"
    printf '%s\n' "$out" | head -n 6
    bad=$((bad + 1))
  fi
done
echo "format_check: ${#files[@]} files, $bad not formatted"
((bad == 0))
