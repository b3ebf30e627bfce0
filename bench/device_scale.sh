#!/usr/bin/env bash
# The app watching 8, 16 and 64 hosts (bench/hosts_cost.py) and `status --json` across them
# (bench/status_hosts.py) on the device machine's 16 cores, where no OpenSSH is installed: the
# loopback sshd is the carried one in .sshd/ (made here by bench/device_sshd_kit.sh), the
# supervisor's dependencies the carried wheels in .whl/ (bench/device_env.sh installs them).
# First one login (bench/sshd_check.py: what a session sees; the sshd's log if it fails).
#   OUT=/tmp/out [WHAT="check hosts status"] [HOSTS=8,16,64] [SECONDS_EACH=10] [REPEATS=2]
#   [WARMUP=12] [PER_HOST=0.5] [WINDOWS=1] [RUNS=3] [BASELINE=DIR] bash bench/device_scale.sh
# WINDOWS: hosts_cost's windows one after the other in each start of the app (--windows): with
# several, how its CPU and memory go on after the first minutes (raise HOSTS_LIMIT and
# VISIT_LIMIT, 360 s each, to hold them).
# WHAT may also name visit (not a default): hosts_cost at VISIT_HOSTS (default HOSTS) with
# every host shown VISIT (default 1) times in turn before the first window of each start
# (--visit); and profile: py-spy's raw stacks of the app at PROFILE_HOSTS (default 64) hosts
# for one window of SECONDS_EACH, the busy threads (profile_app.txt) and then the thread
# holding the GIL (profile_gil.txt), and the core path's cProfile at 16 hosts
# (host_sample_cost.prof).
# BASELINE: a checkout of another tree (e.g. `git archive REV | tar -x -C .before`, carried),
# which hosts_cost runs interleaved with this one (--baseline-dir).
# Defaults take about 5 minutes: hosts_cost 2 x (a start for each of the 3 host counts, one
# window of 10 s after 12 s + 0.5 s a host), status_hosts 1 warm-up + 3 runs of each count.
# Files back: device_scale.log (all output), hosts_cost.md, hosts_visit.md and
# status_hosts.md (the tables).
set -u
OUT=${OUT:-/tmp/dflash-scale-out}
HOSTS=${HOSTS:-8,16,64}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
LOG=$OUT/device_scale.log
source bench/device_env.sh
export PYTHONUNBUFFERED=1
if [ -z "${DFLASH_TUI_TEST_SSHD:-}" ] && [ -x .sshd/bin/sshd ]; then
  export DFLASH_TUI_TEST_SSHD=$PWD/.sshd/bin/sshd DFLASH_TUI_TEST_SSHD_LIBS=$PWD/.sshd/lib
fi
# The sessions' PATH is set by the sshd's config, not inherited: put this python3's folder
# first there, so the probe runs the interpreter this machine has (else /usr/bin/python3).
py_dir=$(dirname "$(command -v python3)")
export DFLASH_TUI_TEST_SESSION_PATH=${DFLASH_TUI_TEST_SESSION_PATH:-$py_dir}
{
  echo "== $(date -u +%FT%TZ) $(hostname) tree ${TREE:-$(git rev-parse --short HEAD 2>/dev/null)}"
  uname -a
  echo "nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
  grep -E '^(PRETTY_NAME)=' /etc/os-release
  python3 -c 'import sys, textual, asyncssh; print(sys.executable, sys.version.split()[0],
    "textual", textual.__version__, "asyncssh", asyncssh.__version__)'
  echo "sshd ${DFLASH_TUI_TEST_SSHD:-/usr/sbin/sshd}; sessions' PATH starts $DFLASH_TUI_TEST_SESSION_PATH"
  [ -f .sshd/VERSION ] && cat .sshd/VERSION
  getent passwd root sshd
  nvidia-smi -L 2>&1 | head -2
} 2>&1 | tee "$LOG"
for what in ${WHAT:-check hosts status}; do
  case $what in
    check)
      echo "== sshd_check.py" | tee -a "$LOG"
      timeout 60 python3 bench/sshd_check.py 2>&1 | tee -a "$LOG"
      ;;
    hosts)
      echo "== hosts_cost.py --hosts $HOSTS" | tee -a "$LOG"
      timeout "${HOSTS_LIMIT:-360}" python3 bench/hosts_cost.py --hosts "$HOSTS" \
        --seconds "${SECONDS_EACH:-10}" --repeats "${REPEATS:-2}" --warmup "${WARMUP:-12}" \
        --windows "${WINDOWS:-1}" --warmup-per-host "${PER_HOST:-0.5}" \
        ${BASELINE:+--baseline-dir "$BASELINE"} 2>&1 \
        | tee -a "$LOG" | tee "$OUT/hosts_cost.raw"
      sed -n '/^| tree /,$p' "$OUT/hosts_cost.raw" >"$OUT/hosts_cost.md"
      rm -f "$OUT/hosts_cost.raw"
      ;;
    visit)
      echo "== hosts_cost.py --hosts ${VISIT_HOSTS:-$HOSTS} --visit ${VISIT:-1}" | tee -a "$LOG"
      timeout "${VISIT_LIMIT:-360}" python3 bench/hosts_cost.py --hosts "${VISIT_HOSTS:-$HOSTS}" \
        --seconds "${SECONDS_EACH:-10}" --repeats "${REPEATS:-2}" --warmup "${WARMUP:-12}" \
        --windows "${WINDOWS:-1}" --warmup-per-host "${PER_HOST:-0.5}" --visit "${VISIT:-1}" \
        ${BASELINE:+--baseline-dir "$BASELINE"} 2>&1 \
        | tee -a "$LOG" | tee "$OUT/hosts_visit.raw"
      sed -n '/^| tree /,$p' "$OUT/hosts_visit.raw" >"$OUT/hosts_visit.md"
      rm -f "$OUT/hosts_visit.raw"
      ;;
    profile)
      export PATH=$DEVICE_SITE/bin:$PATH  # py-spy, from the carried wheels
      echo "== host_sample_cost.py --hosts 16 --profile" | tee -a "$LOG"
      timeout 200 python3 bench/host_sample_cost.py --hosts 16 --repeats 1 \
        --profile "$OUT/host_sample_cost.prof" 2>&1 | tee -a "$LOG"
      for gil in "" --gil; do
        echo "== hosts_cost.py --hosts ${PROFILE_HOSTS:-64} --profile $gil" | tee -a "$LOG"
        timeout "${PROFILE_LIMIT:-200}" python3 bench/hosts_cost.py --hosts "${PROFILE_HOSTS:-64}" \
          --seconds "${SECONDS_EACH:-10}" --warmup "${WARMUP:-12}" \
          --warmup-per-host "${PER_HOST:-0.5}" --profile "$OUT/profile_$([ -n "$gil" ] && echo gil || echo app).txt" \
          $gil 2>&1 | tee -a "$LOG"
      done
      ;;
    status)
      echo "== status_hosts.py --hosts $HOSTS" | tee -a "$LOG"
      timeout "${STATUS_LIMIT:-150}" python3 bench/status_hosts.py --hosts "$HOSTS" \
        --runs "${RUNS:-3}" 2>&1 | tee -a "$LOG" | tee "$OUT/status_hosts.raw"
      sed -n '/^| hosts /,$p' "$OUT/status_hosts.raw" >"$OUT/status_hosts.md"
      rm -f "$OUT/status_hosts.raw"
      ;;
    *) echo "unknown WHAT word: $what (check, hosts, visit, profile, status)" | tee -a "$LOG" ;;
  esac
done
