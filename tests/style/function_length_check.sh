#!/usr/bin/env bash
# Functions a reader can follow in one screen: no function of the product
# (probe/, daemon/, collector/) is longer than 60 lines, opening line to
# closing brace, but the option tables (each option's name, default, help
# and parser in one list, long by what it lists). universal-ctags finds the
# definitions and their ends. Prints each one over the limit and exits 1;
# 0 when none is.
#
#   function_length_check.sh SOURCE_DIR [LIMIT]
set -euo pipefail
cd "${1:?usage: function_length_check.sh SOURCE_DIR [LIMIT]}"
limit=${2:-60}
command -v ctags >/dev/null || {
  echo "function_length_check: ctags not found (deploy/dev-setup.sh --tests installs universal-ctags)" >&2
  exit 1
}
# The option tables: FILE:FUNCTION.
tables='^(daemon/config\.cpp:make_specs|probe/settings\.cpp:make_specs)$'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- 'probe/*.cpp' 'probe/*.h' 'daemon/*.cpp' 'daemon/*.h' \
    'collector/*.cpp' 'collector/*.h')
else
  mapfile -t files < <(find probe daemon collector -name '*.cpp' -o -name '*.h' | sort)
fi
((${#files[@]})) || { echo "function_length_check: no sources found" >&2; exit 1; }
bad=0
while read -r start end name file; do
  lines=$((end - start + 1))
  ((lines > limit)) || continue
  [[ $file:$name =~ $tables ]] && continue
  echo "$file:$start: $name is $lines lines (at most $limit: split it into steps with names)"
  bad=$((bad + 1))
done < <(ctags -x --language-force=C++ --kinds-C++=f --fields=+ne \
  --_xformat='%{line} %{end} %N %F' -o - "${files[@]}" 2>/dev/null)
echo "function_length_check: ${#files[@]} files, $bad functions over $limit lines"
((bad == 0))
