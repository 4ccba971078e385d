#!/usr/bin/env bash
# Install the Debian packages privgen needs to build, test and benchmark.
# Idempotent and non-interactive: only missing packages are installed, and
# `apt-get update` runs only when something is missing. Uses sudo only when
# not already root. Everything comes from Debian's own archive.
#
#   scripts/deps.sh            build + test dependencies (R's modeldata tables
#                              included: README tutorial 3 exports `attrition`)
#   scripts/deps.sh --bench    also the Python peers used by `make bench`
#   scripts/deps.sh --browser  also Chromium + Node for the dashboard test
#   scripts/deps.sh --replicas also HAProxy, the balancer of scripts/replicas.sh
#                              (`make replicas`; bench/replicas.sh uses it too)
set -euo pipefail

build_pkgs=(
  build-essential cmake pkg-config git
  libopenblas-dev libmicrohttpd-dev libjansson-dev libpng-dev libsqlite3-dev
  libcurl4-openssl-dev zlib1g-dev check
  postgresql libpq-dev
  clang libclang-rt-14-dev
  dataset-fashion-mnist
  python3 python3-numpy python3-scipy python3-sklearn
  r-cran-modeldata
)
bench_pkgs=(python3 python3-numpy python3-pot python3-torch python3-sklearn wrk r-cran-modeldata)
browser_pkgs=(chromium)
replicas_pkgs=(haproxy)

want=("${build_pkgs[@]}")
for arg in "$@"; do
  case "$arg" in
    --bench) want+=("${bench_pkgs[@]}" "${replicas_pkgs[@]}") ;;
    --browser) want+=("${browser_pkgs[@]}") ;;
    --replicas) want+=("${replicas_pkgs[@]}") ;;
    --all) want+=("${bench_pkgs[@]}" "${browser_pkgs[@]}" "${replicas_pkgs[@]}") ;;
    *) echo "deps.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

# Node.js may come from elsewhere on the machine (its npm conflicts with
# Debian's); only ask Debian for it when no npm is on the PATH.
case " ${want[*]} " in
  *" chromium "*) command -v npm >/dev/null 2>&1 || want+=(nodejs npm) ;;
esac

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
