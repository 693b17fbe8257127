#!/usr/bin/env bash
# Installs the Debian packages the project needs, only those missing.
# Runs `apt-get update` once, and only when something must be installed.
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config
  lua5.4 liblua5.4-dev libcurl4-openssl-dev libcjson-dev libssl-dev
  libmicrohttpd-dev libseccomp-dev bubblewrap zlib1g-dev
  libmnl-dev libnftables-dev  # abx-local's egress=fc (abx-local/server/egress.c)
  runsc  # abx-local serve --runtime gvisor (see below)
  mmdebstrap umoci skopeo
  e2fsprogs  # mke2fs: each sandbox's disk (abx-local/server/disk.c)
  xxd bsdextrautils  # guarantees.accidental: xxd, hexdump -C
  python3 curl ca-certificates procps iproute2 util-linux
  libedit-dev
  lua-check python3-yaml
  yamllint  # lint.ci_examples: examples/ci/*.yml
  chromium chromium-driver python3-selenium
)

# make test-hosts (ABX_DEPS_HOSTS=1): QEMU boots each host kind's guest.
[ "${ABX_DEPS_HOSTS:-0}" = 1 ] && pkgs+=(qemu-system-x86)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
# Node.js may come from elsewhere than Debian; only ask apt when absent.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)

# gVisor: Debian 12's runsc (2022-12) refuses the statx() flags of
# Debian 12's own coreutils, so `ls` and `stat` fail in every sandbox under
# it. Debian 13's runsc (2024-07) works and depends on nothing: on Debian
# 12 it comes from Debian 13, pinned so that nothing else does
# (docs/security.md).
runsc_pin=()
runsc_v=$(dpkg-query -W -f='${Version}' runsc 2>/dev/null || true)
if [ "$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")" = bookworm ] &&
   { [ -z "$runsc_v" ] || dpkg --compare-versions "$runsc_v" lt 0.0~20240101; }; then
  runsc_pin=(/etc/apt/sources.list.d/abx-local-runsc.sources
             /etc/apt/preferences.d/abx-local-runsc)
  [[ " ${missing[*]} " == *" runsc "* ]] || missing+=(runsc)
fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing Debian packages: ${missing[*]}" >&2
    echo "deps: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if [ ${#runsc_pin[@]} -gt 0 ]; then
    echo "deps: runsc from Debian 13 (trixie), pinned to that package alone"
    printf '%s\n' "Types: deb" "URIs: http://deb.debian.org/debian" "Suites: trixie" \
      "Components: main" "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" \
      > "${runsc_pin[0]}"
    printf '%s\n' "Package: *" "Pin: release n=trixie" "Pin-Priority: 1" "" \
      "Package: runsc" "Pin: release n=trixie" "Pin-Priority: 990" > "${runsc_pin[1]}"
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
