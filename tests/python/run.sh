#!/bin/sh
# Installs python/ into a fresh venv the way a user without PyPI would
# (Debian's setuptools, pip --no-build-isolation --no-index) and runs the
# package's pytest suite against the build's libsprout.so.
#
# usage: run.sh SOURCE_DIR WORK_DIR LIBSPROUT_SO SPROUT_CLI MODEL
# Python: $SPROUT_PYTHON, else Debian's /usr/bin/python3 (where
# python3-pytest, -venv and -setuptools install), else python3.
set -eu
src=$1 work=$2 lib=$3 cli=$4 model=$5
python=${SPROUT_PYTHON:-}
[ -n "$python" ] || { [ -x /usr/bin/python3 ] && python=/usr/bin/python3; } || python=python3
for module in venv pytest setuptools pip; do
    "$python" -c "import $module" 2>/dev/null ||
        { echo "python: $python has no '$module' module: run scripts/deps.sh --test"; exit 1; }
done

rm -rf "$work"
mkdir -p "$work"
# pip builds in the source folder: build a copy, not the tree
cp -r "$src/python" "$work/src"
rm -rf "$work/src/build" "$work/src/"*.egg-info
# the system's site-packages give pytest; pip comes from there too
"$python" -m venv --system-site-packages --without-pip "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir --no-build-isolation --no-index \
    "$work/src"
cd "$work"  # away from python/, so the installed copy is the one imported
SPROUT_LIBRARY=$lib SPROUT_CLI=$cli SPROUT_MODEL=$model SPROUT_SOURCE_DIR=$src \
    "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$src/tests/python"
