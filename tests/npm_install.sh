# Sourced by the bash runners of the node tests.
#
# npm_install_once DIR NAME PACKAGE...: the packages under DIR/node_modules,
# installed once per DIR (a package counts as there when its folder is):
# into a temporary folder, then moved in place, under the lock DIR.lock, as
# CTest may start several runners at once. NAME names the package.json.
# Returns 1 when npm could not install them.
npm_install_once() {
  local dir=$1 name=$2
  shift 2
  mkdir -p "$(dirname "$dir")"
  (
    flock 9
    missing=0
    for p in "$@"; do
      folder=${p%@*}; [ -z "$folder" ] && folder=$p # a scoped name without a version
      [ -d "$dir/node_modules/$folder" ] || missing=1
    done
    [ "$missing" = 0 ] && exit 0
    tmp=$(mktemp -d)
    echo "{\"name\":\"$name\",\"private\":true}" >"$tmp/package.json"
    if ! npm install --prefix "$tmp" --no-audit --no-fund --loglevel=error "$@"; then
      rm -rf "$tmp"
      exit 1
    fi
    rm -rf "$dir"
    mv "$tmp" "$dir"
  ) 9>"$dir.lock"
}
