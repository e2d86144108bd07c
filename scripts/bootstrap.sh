#!/usr/bin/env bash
# Installs the system packages the build and tests need (idempotent).
# GDAL 3.6 and NetCDF 4.9 from Debian; bubblewrap for the Python sandbox's
# network namespace; Slurm and munge for the Slurm job-array test
# (scripts/slurm-local.sh starts a one-node cluster); Chromium and its
# WebDriver (chromium-driver) for the expert review page's browser test
# (crates/cli/tests/review_browser.rs) and the report check; the
# command-line runtimes of the scientific environments (crates/environments,
# Table 7 (b)): CDO, NCO and ncgen (netcdf-bin), NCL, R with evd, gfortran
# (about 30 s of apt on a fresh machine; Julia has no Debian package and is
# not installed). With --bench, also the benches' reference tools:
# ripgrep, gdal-bin, cdo and GNU time (benches/README.md).
set -euo pipefail
packages=(pkg-config libgdal-dev libnetcdf-dev bubblewrap slurm-wlm munge chromium chromium-driver
  cdo nco netcdf-bin ncl-ncarg r-base-core r-cran-evd gfortran)
if [ "${1:-}" = --bench ]; then
  packages+=(ripgrep gdal-bin cdo time)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
