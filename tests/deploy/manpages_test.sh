#!/usr/bin/env bash
# The generated man pages (docs/man) against the programs they document;
# registered as ctest ManPages.* in tests/deploy/manpages.cmake.
#
#   manpages_test.sh options MANDIR CORENOISE CORENOISED
#       each page mentions exactly the options of the --help it documents,
#       as often (a dropped list entry shows even if the synopsis names the
#       option too): corenoise(1) per command, corenoised(8) up to its
#       closing sections, which may name only options that exist; and
#       corenoised.conf(5) lists the daemon's options without their dashes
#   manpages_test.sh render MANDIR
#       groff renders every page without a warning (-ww)
#   manpages_test.sh install CMAKE BUILD_DIR MANDIR
#       `cmake --install` (into a DESTDIR) puts the pages, compressed with
#       gzip -9n, into share/man/man1, man5 and man8
#
# Needs groff (Debian: groff-base) and gzip. Exit status 0 pass, 1 fail.
set -euo pipefail

status=0
fail() {
  echo "FAIL: $*" >&2
  status=1
}

command -v groff >/dev/null || { echo "groff not found: apt-get install groff-base" >&2; exit 1; }

# The page as a reader sees it: plain text (no bold or underline), every
# dash an ASCII one whatever groff's device maps \- to.
page_text() {
  zcat "$1" | groff -man -Tutf8 -P-cbou | sed 's/\xe2\x88\x92/-/g; s/\xe2\x80\x90/-/g'
}

# Every mention of an --option in a text, sorted (repeats kept).
options_in() {
  grep -oE -- '--[a-z][a-z0-9-]*' | sed 's/-*$//' | sort || true
}

# no_other_options WHAT HELP_TEXT TEXT: TEXT names only options of HELP_TEXT.
no_other_options() {
  local unknown
  unknown=$(comm -13 <(options_in <<<"$2" | uniq) <(options_in <<<"$3" | uniq))
  [ -z "$unknown" ] || fail "$1 names options no --help has: $unknown"
}

# same WHAT EXPECTED ACTUAL: fails with the difference.
same() {
  if [ "$2" != "$3" ]; then
    fail "$1:"$'\n'"$(diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") | sed -n 's/^[<>]/  &/p')"
    echo "  (< only in --help, > only in the man page)" >&2
  fi
}

check_options() {
  local mandir=$1 corenoise=$2 corenoised=$3
  local text section commands page_commands all_help

  # corenoise(1): the general part, then one subsection per command.
  text=$(page_text "$mandir/corenoise.1.gz")
  commands=$("$corenoise" --help | grep -oE '^  [a-z]+  ' | tr -d ' ')
  page_commands=$(grep -E '^   corenoise [a-z]+$' <<<"$text" | cut -d' ' -f5)
  same "corenoise(1): commands" "$commands" "$page_commands"
  [ -n "$commands" ] || fail "corenoise --help lists no commands"
  same "corenoise(1): options of corenoise --help" "$("$corenoise" --help | options_in)" \
    "$(sed -n '1,/^COMMANDS$/p' <<<"$text" | options_in)"
  all_help=$("$corenoise" --help)
  for command in $commands; do
    section=$(awk -v heading="   corenoise $command" '
      $0 == heading { inside = 1; next }
      inside && (/^   corenoise [a-z]+$/ || /^[A-Z]/) { exit }
      inside' <<<"$text")
    [ -n "$section" ] || fail "corenoise(1) has no section for $command"
    same "corenoise(1): options of corenoise $command --help" \
      "$("$corenoise" "$command" --help | options_in)" "$(options_in <<<"$section")"
    all_help+=$'\n'$("$corenoise" "$command" --help)
  done
  no_other_options "corenoise(1)" "$all_help" "$(sed -n '/^EXIT STATUS$/,$p' <<<"$text")"

  # corenoised(8): the page up to EXIT STATUS, then the closing sections.
  text=$(page_text "$mandir/corenoised.8.gz")
  same "corenoised(8): options of corenoised --help" "$("$corenoised" --help | options_in)" \
    "$(sed '/^EXIT STATUS$/,$d' <<<"$text" | options_in)"
  no_other_options "corenoised(8)" "$("$corenoised" --help)" "$(sed -n '/^EXIT STATUS$/,$p' <<<"$text")"

  # corenoised.conf(5): the entries of OPTIONS are the daemon's options
  # without dashes; --config, --check-config, --help and --version are for
  # the command line only.
  local config_options page_entries
  config_options=$("$corenoised" --help | options_in | uniq | sed 's/^--//' |
    grep -vxE 'config|check-config|help|version' || true)
  page_entries=$(page_text "$mandir/corenoised.conf.5.gz" | sed -n '/^OPTIONS$/,/^[A-Z]/p' |
    sed -nE 's/^       ([a-z][a-z0-9-]*) = .*/\1/p' | sort -u)
  same "corenoised.conf(5): options" "$config_options" "$page_entries"
  [ -n "$page_entries" ] || fail "corenoised.conf(5) lists no options"
}

check_render() {
  local mandir=$1 page warnings
  for page in corenoise.1 corenoised.8 corenoised.conf.5; do
    [ -s "$mandir/$page.gz" ] || { fail "$mandir/$page.gz is missing"; continue; }
    warnings=$(zcat "$mandir/$page.gz" | groff -man -Tutf8 -ww -z 2>&1) || fail "$page: groff failed"
    [ -z "$warnings" ] || fail "$page renders with warnings:"$'\n'"$warnings"
    grep -q '^NAME$' <<<"$(page_text "$mandir/$page.gz")" || fail "$page has no NAME section"
  done
}

check_install() {
  local cmake=$1 build=$2 mandir=$3 file header
  dest=$(mktemp -d)  # global: the trap runs after this function returns
  trap 'rm -rf "$dest"' EXIT
  DESTDIR=$dest "$cmake" --install "$build" --prefix /usr >/dev/null
  for file in man1/corenoise.1.gz man5/corenoised.conf.5.gz man8/corenoised.8.gz; do
    if [ ! -f "$dest/usr/share/man/$file" ]; then
      fail "not installed: /usr/share/man/$file"
      continue
    fi
    cmp -s "$dest/usr/share/man/$file" "$mandir/${file#*/}" || fail "$file differs from the build's"
    # gzip header: magic, deflate, no flags (no file name), mtime 0 (-n),
    # extra flags 2 (-9, maximum compression).
    header=$(od -An -tu1 -N9 "$dest/usr/share/man/$file" | tr -s ' ' | sed 's/^ //')
    [ "$header" = "31 139 8 0 0 0 0 0 2" ] || fail "$file: not gzip -9n (header $header)"
  done
}

case "${1:-}" in
  options) check_options "$2" "$3" "$4" ;;
  render) check_render "$2" ;;
  install) check_install "$2" "$3" "$4" ;;
  *)
    echo "usage: $0 options MANDIR CORENOISE CORENOISED | render MANDIR | install CMAKE BUILD MANDIR" >&2
    exit 1
    ;;
esac
[ "$status" -eq 0 ] && echo "PASS"
exit "$status"
