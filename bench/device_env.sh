#!/usr/bin/env bash
# Sourced by the device scripts (bench/device_*.sh) from the repo root: makes the repo's import
# names (dflash_tui from tui/, dflash_train from dflash/; pyproject's package-dir) importable
# without installing it, and installs the carried wheels (.whl/, when carried) into /tmp/site
# if the machine lacks the supervisor's light dependencies. Nothing is installed system-wide.
# DEVICE_PY and DEVICE_SITE move those two folders (a rehearsal on a shared machine).
DEVICE_PY=${DEVICE_PY:-/tmp/dflash-py}
DEVICE_SITE=${DEVICE_SITE:-/tmp/site}
mkdir -p "$DEVICE_PY"
ln -sfn "$PWD/tui" "$DEVICE_PY/dflash_tui"
ln -sfn "$PWD/dflash" "$DEVICE_PY/dflash_train"
# The carried wheels this python can install: pure ones, abi3 ones and its own cpXY (the wheel
# folder is filled on a machine with another Python; one wrong tag fails the whole install).
device_wheels() {
  local tag w
  tag=$(python3 -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
  for w in .whl/*.whl; do
    case $w in
      *-cp3*-cp3*) [[ $w == *-"$tag"-* ]] && echo "$w" ;;
      *) echo "$w" ;;
    esac
  done
}
if ! python3 -c 'import rich, textual' 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  device_wheels | xargs python3 -m pip install -q --upgrade --no-index --no-deps --target "$DEVICE_SITE"
  export PYTHONPATH=$DEVICE_SITE${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$DEVICE_PY${PYTHONPATH:+:$PYTHONPATH}
