# shellcheck shell=bash
# What the scripts that make Debian 12 roots and packages share (sourced):
# the fresh-machine check (tests/tools/fresh_machine_check.sh), the package
# test (tests/deploy/package_test.sh) and the packaged node
# (tests/deploy/packaged_node_test.sh). Functions only; each prints why it
# failed on stderr and returns non-zero, and the caller says what it means.

# This machine's Debian mirror (deb822 or one-line sources), else Debian's.
debian_mirror() {
  local mirror
  mirror=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
    grep -E '^(URIs:|deb )' | grep -o 'https\?://[^ ]*' | grep -v security | head -n1 || true)
  echo "${mirror:-http://deb.debian.org/debian}"
}

# debian_sources ROOT MIRROR: what a fresh machine has in ROOT: Debian's
# suites and security updates from this machine's sources (only Debian's:
# another repository's key is not in the root), else MIRROR's bookworm main;
# and name resolution: this machine's resolver, and the /etc/hosts that
# Debian's installer writes (debootstrap writes none). Without it every
# lookup of localhost or the host's name went to the DNS server: MPI's
# start-up took 5 s more a job, and 16 oversubscribed ranks 30 s instead of
# 0.7 (fresh_machine_check at 8bd9722).
debian_sources() {
  local root=$1 mirror=$2 f copied=0
  rm -f "$root/etc/apt/sources.list"
  for f in /etc/apt/sources.list.d/*.sources; do
    if [[ ! -f $f ]] || ! grep -q 'debian-archive-keyring' "$f"; then continue; fi
    cp "$f" "$root/etc/apt/sources.list.d/" && copied=1
  done
  ((copied)) || echo "deb $mirror bookworm main" >"$root/etc/apt/sources.list"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  cat >"$root/etc/hosts" <<EOF
127.0.0.1	localhost
127.0.1.1	$(hostname)

::1     localhost ip6-localhost ip6-loopback
ff02::1 ip6-allnodes
ff02::2 ip6-allrouters
EOF
}

# build_deb CPACK CPACK_CONFIG OUT VERSION: the package from a finished build
# folder into OUT; prints the .deb's path (cpack's log on failure goes to
# stderr).
build_deb() {
  local cpack=$1 config=$2 out=$3 version=$4 deb
  "$cpack" -G DEB --config "$config" -B "$out" >"$out.cpack.log" 2>&1 || {
    cat "$out.cpack.log" >&2
    echo "cpack failed" >&2
    return 1
  }
  deb="$(find "$out" -maxdepth 1 -name "corenoise_${version}_*.deb" -print -quit)"
  [[ -n "$deb" ]] || {
    echo "no corenoise_${version}_*.deb in $out" >&2
    return 1
  }
  echo "$deb"
}
