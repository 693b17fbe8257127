#!/usr/bin/env bash
# Installs the Debian packages the project needs, only those missing.
# Runs `apt-get update` once, and only when something must be installed.
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config
  lua5.4 liblua5.4-dev libcurl4-openssl-dev libcjson-dev libssl-dev
  libmicrohttpd-dev libseccomp-dev bubblewrap zlib1g-dev
  mmdebstrap umoci skopeo
  python3 curl ca-certificates procps iproute2 util-linux
  libedit-dev
  lua-check python3-yaml
  yamllint  # lint.ci_examples: examples/ci/*.yml
  chromium chromium-driver python3-selenium
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
# Node.js may come from elsewhere than Debian; only ask apt when absent.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing Debian packages: ${missing[*]}" >&2
    echo "deps: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
