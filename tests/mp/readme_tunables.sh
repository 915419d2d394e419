#!/bin/sh
# readme_tunables.sh PTL_INFO README - every tunable of the one table
# (util/config.c, as ptl_info lists it) has its row in README.md's table, with
# the table's default, and README names no tunable the library lacks: the
# table lost three rows once, unnoticed (a read-only review found them).
info=$1 readme=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# "  PTL_X   = v   (default D, from ...)" -> "PTL_X D"
"$info" 2>/dev/null | sed -n 's/^  \(PTL_[A-Z0-9_]*\) *= .*(default \([^,]*\),.*/\1 \2/p' | sort >"$tmp/lib"
# "| `PTL_X` | D | ..." -> "PTL_X D"
sed -n 's/^| `\(PTL_[A-Z0-9_]*\)` | \([^|]*\) |.*/\1 \2/p' "$readme" | sed 's/ *$//' | sort >"$tmp/doc"
[ -s "$tmp/lib" ] || { echo "readme_tunables: FAIL: ptl_info listed no tunables"; exit 1; }
if ! diff "$tmp/lib" "$tmp/doc" >"$tmp/diff"; then
  echo "readme_tunables: FAIL: ptl_info (<) and README.md's table (>) differ:"
  grep '^[<>]' "$tmp/diff"
  exit 1
fi
echo "readme_tunables: OK ($(wc -l <"$tmp/lib") tunables)"
