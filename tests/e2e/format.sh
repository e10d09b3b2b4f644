#!/usr/bin/env bash
# Every C++ and CUDA source follows the checked-in style (.clang-format): a file that does not
# fails the suite, with the fix (clang-format -i FILE).
source "$(dirname "$0")/../e2e_lib.sh"
FORMAT=$(command -v clang-format-14 || command -v clang-format || true)
[ -n "$FORMAT" ] || { echo "SKIP: clang-format is not installed (scripts/install-deps.sh installs it)"; exit 77; }
cd "$SRC"
mapfile -t files < <(find base cli compare db estimator profiler bench fuzz tests -type f \
  \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' \) -not -path 'fuzz/corpus/*' | sort)
[ "${#files[@]}" -gt 100 ] || fail "found only ${#files[@]} sources: is this the source tree?"
bad=()
for f in "${files[@]}"; do
  "$FORMAT" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
[ "${#bad[@]}" = 0 ] || fail "${#bad[@]} files differ from .clang-format (run: clang-format -i ${bad[*]:0:5} ...)"
echo "format: ${#files[@]} files follow .clang-format"
