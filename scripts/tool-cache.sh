# Sourced by the setup scripts: a tool built once on this machine is kept outside the clone
# when $RBS_TEST_CACHE names a folder (.ci/run gives one), so a fresh clone copies it instead
# of building it again (inferno's cargo build and memtier's were minutes of each CI run).
#   tool_cache_fetch NAME DEST_BIN FILE...  copies the kept FILEs into DEST_BIN; 0 if all were kept
#   tool_cache_keep NAME SRC_BIN FILE...    keeps the FILEs of SRC_BIN under NAME (no-op without one)
# NAME carries the version where there is one. Copies go through a temporary name and a
# rename, so an interrupted copy never looks like a tool.
tool_cache_dir() { [ -n "${RBS_TEST_CACHE:-}" ] && echo "$RBS_TEST_CACHE/tools/$1/bin"; }

tool_cache_fetch() {
  local name="$1" dest="$2" dir file
  shift 2
  dir="$(tool_cache_dir "$name")" || return 1
  for file in "$@"; do [ -x "$dir/$file" ] || return 1; done
  mkdir -p "$dest"
  for file in "$@"; do
    cp "$dir/$file" "$dest/$file.tmp.$$" && mv "$dest/$file.tmp.$$" "$dest/$file"
  done
  echo "setup: $name from $dir (built before on this machine)"
}

tool_cache_keep() {
  local name="$1" src="$2" dir file
  shift 2
  dir="$(tool_cache_dir "$name")" || return 0
  mkdir -p "$dir"
  for file in "$@"; do
    cp "$src/$file" "$dir/$file.tmp.$$" && mv "$dir/$file.tmp.$$" "$dir/$file"
  done
}
