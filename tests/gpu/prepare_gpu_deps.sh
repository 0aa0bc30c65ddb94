#!/usr/bin/env bash
# Collects, on a Debian 12 machine with apt-get, what the GPU machine's image
# lacks to build dtrain's GPU tests and benchmarks: the Debian packages of
# fmt, spdlog, CLI11, GoogleTest (as source), Gloo (+ the libraries libgloo
# loads) and zlib's headers, unpacked from their .debs into one folder that
# travels with the working tree (.gpu-deps/, ignored by git). Nothing is
# compiled here: what is compiled, is compiled there, by the image's own
# compiler; the only binaries carried are Debian's libgloo and its
# dependencies (built against glibc 2.34 at most) and a spare libz.so.1.
#
#   bash tests/gpu/prepare_gpu_deps.sh [DEST]      # DEST default: .gpu-deps
#
# Layout of DEST:
#   include/           fmt, spdlog, CLI, gloo, zlib.h, zconf.h
#   lib/libgloo.so.0   lib/gloo-runtime/ (hiredis, ibverbs, libnl)   lib/zlib/libz.so.1
#   lib/cmake/         package configs for find_package (tests/gpu/cmake/*.cmake)
#   src/googletest/    GoogleTest + GoogleMock sources (Debian's googletest)
#   licenses/          each package's copyright file
#   MANIFEST.txt       package versions
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dest="${1:-$repo/.gpu-deps}"

packages=(
  libfmt-dev libspdlog-dev libcli11-dev googletest
  libgloo-dev libgloo0 libhiredis0.14 libibverbs1 libnl-3-200 libnl-route-3-200
  zlib1g-dev zlib1g
)
# Runtime libraries of libgloo.so.0 (ldd on Debian 12), copied under their sonames.
gloo_runtime=(libhiredis.so.0.14 libibverbs.so.1 libnl-3.so.200 libnl-route-3.so.200)

log() { printf '[prepare_gpu_deps] %s\n' "$*" >&2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debs" "$work/root"
# apt's download user (_apt) must be able to write the folder.
chmod 1777 "$work/debs"

log "downloading ${#packages[@]} Debian packages"
(cd "$work/debs" && apt-get download -q "${packages[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
for pkg in "${packages[@]}"; do
  compgen -G "$work/debs/${pkg}_*.deb" >/dev/null ||
    { log "error: apt-get download $pkg failed (apt-get update? Debian 12 sources?)"; exit 1; }
done

rm -rf "$dest"
mkdir -p "$dest/include" "$dest/lib/gloo-runtime" "$dest/lib/zlib" "$dest/lib/cmake" \
  "$dest/src" "$dest/licenses"
{
  echo "# Debian packages unpacked by tests/gpu/prepare_gpu_deps.sh on $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "# from $(. /etc/os-release && echo "$PRETTY_NAME"), $(uname -m)"
} >"$dest/MANIFEST.txt"
for deb in "$work"/debs/*.deb; do
  dpkg-deb -x "$deb" "$work/root"
  pkg="$(dpkg-deb -f "$deb" Package)"
  echo "$pkg $(dpkg-deb -f "$deb" Version)" >>"$dest/MANIFEST.txt"
  [ -f "$work/root/usr/share/doc/$pkg/copyright" ] &&
    cp "$work/root/usr/share/doc/$pkg/copyright" "$dest/licenses/$pkg.copyright"
done

root="$work/root"
# A library's file, under /usr/lib or /lib (Debian 12 still ships some in /lib).
deb_lib() {
  local dir
  for dir in usr/lib/x86_64-linux-gnu lib/x86_64-linux-gnu usr/lib; do
    [ -e "$root/$dir/$1" ] && { echo "$root/$dir/$1"; return; }
  done
  log "error: $1 is in none of the unpacked packages"
  exit 1
}
cp -r "$root/usr/include/fmt" "$root/usr/include/spdlog" "$root/usr/include/CLI" \
  "$root/usr/include/gloo" "$root/usr/include/zlib.h" "$root/usr/include/zconf.h" \
  "$dest/include/"
# Plain files under their sonames: no symbolic links to travel.
cp -L "$(deb_lib libgloo.so.0)" "$dest/lib/libgloo.so.0"
for lib in "${gloo_runtime[@]}"; do
  cp -L "$(deb_lib "$lib")" "$dest/lib/gloo-runtime/$lib"
done
cp -L "$(deb_lib libz.so.1)" "$dest/lib/zlib/libz.so.1"
cp -r "$root/usr/src/googletest" "$dest/src/googletest"
rm -rf "$dest/src/googletest/docs" "$dest/src/googletest/googletest/docs" \
  "$dest/src/googletest/googlemock/docs"

declare -A config_dirs=([fmt]=fmt [spdlog]=spdlog [cli11]=CLI11 [gloo]=Gloo)
for name in "${!config_dirs[@]}"; do
  mkdir -p "$dest/lib/cmake/${config_dirs[$name]}"
  cp "$repo/tests/gpu/cmake/$name-config.cmake" "$dest/lib/cmake/${config_dirs[$name]}/"
done

# The carried libraries must load on an image with an older glibc than
# Debian 12's 2.36: say which symbol versions they need.
newest_glibc="$(find "$dest/lib" -name '*.so*' -type f -exec objdump -T {} + 2>/dev/null |
  grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1 || true)"
echo "# newest glibc symbol version the carried libraries need: ${newest_glibc:-unknown}" \
  >>"$dest/MANIFEST.txt"

log "wrote $dest ($(du -sh "$dest" | cut -f1); newest glibc symbol ${newest_glibc:-unknown})"
# Which source the tree is (tests/gpu/source_stamp.py): stamp again after
# any later change, right before the tree travels.
python3 "$repo/tests/gpu/source_stamp.py" write
