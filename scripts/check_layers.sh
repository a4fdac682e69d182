#!/bin/sh
# The include rules of src/, cli/ and include/:
#   - a folder includes its own headers and those of the folders below it,
#     never one above it or beside it (on the same line of LAYERS);
#   - never another folder's *_internal.h;
#   - include/sprout.h and its parts include/sprout/*.h, the public headers,
#     anywhere;
#   - inside a folder, no two files include each other's headers in a loop
#     (a.c or a.h includes b.h, b.c or b.h includes a.h; x_internal.h counts
#     as x's header).
# Prints "file:line: ..." for each break and exits non-zero if there is one.
#
# usage: scripts/check_layers.sh [SOURCE_ROOT]

# The folders, bottom to top: the one place the order lives. Folders on one
# line sit side by side. src/X is folder X; cli/ is cli.
LAYERS='
core
grammar
quant sampler
gguf
kernels
tokenizer template
model
runtime
pipeline quantize
store
json
server
cli
'

root=${1:-.}
cd "$root" || exit 2
[ -d src ] || { echo "check_layers: no src/ under $root" >&2; exit 2; }

files=$(find src cli include -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null | LC_ALL=C sort)
[ -n "$files" ] || { echo "check_layers: no sources under $root" >&2; exit 2; }

# shellcheck disable=SC2086 # one word per file (the tree's names have no spaces)
{
    printf '%s\n' $files | sed 's/^/FILE /'
    grep -nH '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' $files
} | awk -v layers="$LAYERS" '
function folder_of(path,    parts) {
    split(path, parts, "/")
    if (parts[1] == "src") return parts[2]
    return parts[1] # cli, include
}
function dir_of(path) { sub("/[^/]*$", "", path); return path }
function base_of(path) { sub(".*/", "", path); return path }
# A path with "x/../" and "./" folded away.
function normal(path,    n, parts, out, k, i) {
    n = split(path, parts, "/")
    k = 0
    for (i = 1; i <= n; i++) {
        if (parts[i] == "." || parts[i] == "") continue
        if (parts[i] == ".." && k > 0 && out[k] != "..") { k--; continue }
        out[++k] = parts[i]
    }
    path = ""
    for (i = 1; i <= k; i++) path = path (i > 1 ? "/" : "") out[i]
    return path
}
# What the build would open for "name" included from `from`: the folder of
# the including file first, then the include paths (src, include).
function resolve(name, from,    c) {
    c = normal(dir_of(from) "/" name); if (c in exists) return c
    c = normal("src/" name); if (c in exists) return c
    c = normal("include/" name); if (c in exists) return c
    return ""
}
# The unit a file belongs to inside its folder: a.c, a.h and a_internal.h are a.
function unit_of(path,    b) {
    b = base_of(path)
    sub("\\.[ch]$", "", b)
    sub("_internal$", "", b)
    return dir_of(path) "/" b
}
function fail(where, msg) { print where ": " msg; bad++ }
BEGIN {
    n = split(layers, lines, "\n")
    level_count = 0
    for (i = 1; i <= n; i++) {
        if (lines[i] ~ /^[[:space:]]*$/) continue
        level_count++
        m = split(lines[i], names, " ")
        for (j = 1; j <= m; j++) level[names[j]] = level_count
    }
}
$1 == "FILE" { exists[$2] = 1; next }
{
    # file:line:#include "name"
    file = $0; sub(":.*", "", file)
    rest = substr($0, length(file) + 2)
    line = rest; sub(":.*", "", line)
    name = rest; sub("^[^\"]*\"", "", name); sub("\".*", "", name)
    where = file ":" line
    target = resolve(name, file)
    from = folder_of(file)
    if (!(from in level) && from != "include") {
        if (!(from in unplaced)) fail(where, "folder " from " is in no layer of scripts/check_layers.sh")
        unplaced[from] = 1
        next
    }
    if (target == "") {
        fail(where, "includes \"" name "\", which is no file of src/, cli/ or include/")
        next
    }
    to = folder_of(target)
    if (to == "include") next # the public header: anywhere
    if (to == from) {
        if (unit_of(file) != unit_of(target) && !((unit_of(file), unit_of(target)) in edge)) {
            edge[unit_of(file), unit_of(target)] = where
            targets[unit_of(file)] = targets[unit_of(file)] " " unit_of(target)
        }
        next
    }
    if (base_of(target) ~ /_internal\.h$/) {
        fail(where, "folder " from " includes another folder\047s internal header " target)
        next
    }
    if (!(to in level)) {
        fail(where, "folder " from " includes folder " to ", which is in no layer of scripts/check_layers.sh")
        next
    }
    if (from == "include") {
        fail(where, "the public header includes folder " to)
        next
    }
    if (level[to] > level[from]) fail(where, "folder " from " includes folder " to " (above it)")
    else if (level[to] == level[from]) fail(where, "folder " from " includes folder " to " (beside it)")
}
# Depth-first search for a loop of units inside one folder.
function visit(u,    list, k, n, v) {
    state[u] = 1
    stack[++depth] = u
    n = split(targets[u], list, " ")
    for (k = 1; k <= n; k++) {
        v = list[k]
        if (state[v] == 1) report(v)
        else if (!state[v]) visit(v)
    }
    depth--
    state[u] = 2
}
function report(v,    k, start, path, msg) {
    for (k = depth; k >= 1; k--) if (stack[k] == v) start = k
    path = ""
    for (k = start; k <= depth; k++) path = path base_of(stack[k]) " -> "
    path = path base_of(v)
    msg = "files include each other in a loop: " path
    fail(edge[stack[depth], v], msg)
}
END {
    for (key in edge) {
        split(key, pair, SUBSEP)
        if (!state[pair[1]]) { depth = 0; visit(pair[1]) }
    }
    exit bad > 0
}'
status=$?
[ $status -eq 0 ] && echo "check_layers: every include goes down the layers" && exit 0
echo "check_layers: the includes above break the layers (order in scripts/check_layers.sh)"
exit 1
