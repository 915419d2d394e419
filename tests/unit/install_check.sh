#!/usr/bin/env bash
# install_check.sh BUILD_DIR SOURCE_DIR - install into a scratch prefix, then
# build the README's example program against it with pkg-config and with
# find_package(Portals3), and run both. Proves the install tree is usable.
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
awk '/^```c$/{f=1;next} /^```$/{if(f){exit}} f' "$src/README.md" > "$tmp/hello.c"
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
cc "$tmp/hello.c" $(pkg-config --cflags --libs portals3) -o "$tmp/hello_pc"
out=$(LD_LIBRARY_PATH="$tmp/prefix/lib" PTL_OFFLOAD=0 timeout 20 "$tmp/hello_pc")
[ "$out" = hello ] || { echo "pkg-config build printed '$out'"; exit 1; }
mkdir "$tmp/cm"
cp "$tmp/hello.c" "$tmp/cm/hello.c"
cat > "$tmp/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(hello C)
find_package(Portals3 REQUIRED)
add_executable(hello hello.c)
target_link_libraries(hello PRIVATE Portals3::portals)
CM
cmake -S "$tmp/cm" -B "$tmp/cm/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cm/b" >/dev/null
out=$(LD_LIBRARY_PATH="$tmp/prefix/lib" timeout 20 "$tmp/cm/b/hello")
[ "$out" = hello ] || { echo "CMake build printed '$out'"; exit 1; }
echo "install tree OK (pkg-config and find_package)"
