#!/usr/bin/env bash
# Installs the Debian packages of the named footprints, only those missing
# (docs/testing.md, "What each target installs"):
#
#   build   the runner: abx-e2e and the cloud suite (`make build`, `make e2e`)
#   local   abx-local: its libraries, bubblewrap, the template builders
#           (`make deps-local`, which the local targets call)
#   gvisor  runsc, for RUNTIME=gvisor
#   test    all that `make test` runs: the above, the lints, the browser
#           for the HTML report's checks, node for the official-SDK runs
#   hosts   QEMU, for `make test-hosts`'s guests
#
# usage: scripts/deps.sh [GROUP...]        (no GROUP: test)
#        scripts/deps.sh --list [GROUP...] (the packages, one per line)
#
# Runs `apt-get update` once, and only when something must be installed.
# Not root: through passwordless sudo when there is one (said in one
# line), else it names the apt-get line to run and fails.
set -euo pipefail

build=(build-essential cmake pkg-config
       liblua5.4-dev libcurl4-openssl-dev libcjson-dev libssl-dev libedit-dev)
local_=(libmicrohttpd-dev libseccomp-dev zlib1g-dev
        libmnl-dev libnftables-dev  # abx-local's egress=fc (abx-local/server/sandbox/egress.c)
        bubblewrap
        mmdebstrap umoci skopeo  # template roots (abx-local/server/rootfs*.c)
        e2fsprogs  # mke2fs: each sandbox's disk (abx-local/server/sandbox/disk.c)
        python3 ca-certificates procps iproute2 util-linux)
gvisor=(runsc)  # abx-local serve --runtime gvisor (see below)
test=(lua5.4 curl
      xxd bsdextrautils  # guarantees.accidental: xxd, hexdump -C
      lua-check python3-yaml
      yamllint  # lint.ci_examples: examples/ci/*.yml
      chromium chromium-driver python3-selenium)
hosts=(qemu-system-x86)

list=0
[ "${1:-}" = --list ] && { list=1; shift; }
[ $# -eq 0 ] && set -- test
pkgs=()
node=0
for g in "$@"; do
  case $g in
    build) pkgs+=("${build[@]}") ;;
    local) pkgs+=("${build[@]}" "${local_[@]}") ;;
    gvisor) pkgs+=("${gvisor[@]}") ;;
    test) pkgs+=("${build[@]}" "${local_[@]}" "${gvisor[@]}" "${test[@]}"); node=1 ;;
    hosts) pkgs+=("${hosts[@]}") ;;
    *) echo "deps: unknown group '$g' (build, local, gvisor, test, hosts)" >&2; exit 2 ;;
  esac
done
mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | awk '!seen[$0]++')   # groups overlap
if [ $list = 1 ]; then
  printf '%s\n' "${pkgs[@]}"
  exit 0
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
# Node.js may come from elsewhere than Debian; only ask apt when absent.
if [ $node = 1 ]; then
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
fi

# gVisor: Debian 12's runsc (2022-12) refuses the statx() flags of
# Debian 12's own coreutils, so `ls` and `stat` fail in every sandbox under
# it. Debian 13's runsc (2024-07) works and depends on nothing: on Debian
# 12 it comes from Debian 13, pinned so that nothing else does
# (docs/security.md).
runsc_pin=()
if [[ " ${pkgs[*]} " == *" runsc "* ]]; then
  runsc_v=$(dpkg-query -W -f='${Version}' runsc 2>/dev/null || true)
  if [ "$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")" = bookworm ] &&
     { [ -z "$runsc_v" ] || dpkg --compare-versions "$runsc_v" lt 0.0~20240101; }; then
    runsc_pin=(/etc/apt/sources.list.d/abx-local-runsc.sources
               /etc/apt/preferences.d/abx-local-runsc)
    [[ " ${missing[*]} " == *" runsc "* ]] || missing+=(runsc)
  fi
fi

[ ${#missing[@]} -eq 0 ] && exit 0
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1 || ! sudo -n true 2>/dev/null; then
    echo "deps: missing Debian packages: ${missing[*]}" >&2
    [ ${#runsc_pin[@]} -gt 0 ] &&
      echo "deps: (runsc from Debian 13: run this script as root once to pin it)" >&2
    echo "deps: not root and no passwordless sudo; as root run:" \
         "apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  as_root=(sudo -n)
  echo "deps: not root: installing ${missing[*]} with sudo"
else
  echo "deps: installing ${missing[*]}"
fi
if [ ${#runsc_pin[@]} -gt 0 ]; then
  echo "deps: runsc from Debian 13 (trixie), pinned to that package alone"
  printf '%s\n' "Types: deb" "URIs: http://deb.debian.org/debian" "Suites: trixie" \
    "Components: main" "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" |
    "${as_root[@]}" tee "${runsc_pin[0]}" >/dev/null
  printf '%s\n' "Package: *" "Pin: release n=trixie" "Pin-Priority: 1" "" \
    "Package: runsc" "Pin: release n=trixie" "Pin-Priority: 990" |
    "${as_root[@]}" tee "${runsc_pin[1]}" >/dev/null
fi
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
