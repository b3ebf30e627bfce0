# dflash-tui run control, the launch (POSIX sh): sent ahead of control.sh, which defines what
# this uses (say, put, stat_of, verify, the lock) and runs the verb; see control.sh's head.
# The run directory and the room a launch checks for are docs/internals.md's contract.

cg_make() {  # NAME -> CG: a new cgroup v2 directory for a run, or '' where the host allows none
  CG=
  [ "${DFLASH_NO_CGROUP:-}" = 1 ] && return 0  # tests: the branch of a host without cgroups
  cg_m=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts 2>/dev/null)
  [ -n "$cg_m" ] && [ -d "$cg_m" ] || return 0
  cg_own=$(sed -n 's/^0:://p' /proc/self/cgroup 2>/dev/null)
  # The hierarchy's top (as root), else a child of our own cgroup (a delegated one).
  for cg_b in "$cg_m/dflash-tui" "$cg_m${cg_own%/}/dflash-tui"; do
    mkdir -p "$cg_b" 2>/dev/null && mkdir "$cg_b/$1" 2>/dev/null || continue
    [ -w "$cg_b/$1/cgroup.procs" ] && CG=$cg_b/$1 && return 0
    rmdir "$cg_b/$1" 2>/dev/null
  done
}

foreign() {  # ROOT: say which entries of the run root are no run of ours (they are ignored)
  for fo_e in "$1"/* "$1"/.[!.]*; do
    [ -e "$fo_e" ] || [ -L "$fo_e" ] || continue
    fo_n=${fo_e##*/}
    # ours beside the runs: the launch lock, the supervisor's files, the flight recorder's
    case $fo_n in .lock | .lock.break | .supervisor* | supervisor.* | .room.* | .record) continue ;; esac
    case $fo_n in $IDGLOB) [ -d "$fo_e" ] && [ ! -L "$fo_e" ] && continue ;; esac
    say "note ignoring $fo_n in the run root: not a run directory"
  done
}

new_id() {  # LATEST -> YYYYmmdd-HHMMSS-xxxx (UTC) that sorts after LATEST, whatever LATEST is
  ni_ts=$(date -u +%Y%m%d-%H%M%S)
  ni_sfx=$(od -An -N2 -tu2 /dev/urandom 2>/dev/null | tr -d ' \n')
  case $ni_sfx in '' | *[!0-9]*) ni_sfx=$$ ;; esac
  ni_sfx=$(printf '%04x' $((ni_sfx % 32768)))  # < 0x8000: room to count up within a second
  if [ -n "$1" ]; then
    ni_lts=${1%-*} ni_lsfx=${1##*-}
    if [ "$(printf '%s' "$ni_ts" | tr -d -)" -le "$(printf '%s' "$ni_lts" | tr -d -)" ]; then
      # Same second (or the clock went back, or a later name is there): count up from the
      # latest; past ffff the time part counts up instead, never wrapping below the latest.
      ni_ts=$ni_lts ni_sfx=$((0x$ni_lsfx + 1))
      if [ "$ni_sfx" -gt 65535 ]; then
        ni_n=$(printf '%s' "$ni_lts" | tr -d -)
        ni_n=$(printf '%s' "$ni_n" | sed 's/^0*//')
        ni_n=$((ni_n + 1))
        ni_ts=$(printf '%014d' "$ni_n" | sed 's/^\(........\)/\1-/')
        ni_sfx=0
      fi
      ni_sfx=$(printf '%04x' "$ni_sfx")
    fi
  fi
  printf '%s-%s' "$ni_ts" "$ni_sfx"
}

# The least room a run directory needs: about ten small files (a tmpfs takes a 4 KiB page for
# each) and the first part of its log.
ROOM_KIB=256
ROOM_INODES=32

room() {  # ROOT -> ROOM_WHY: why no run directory can be made there ('' when one can)
  ROOM_WHY=
  rm_df=$(df -Pk "$1" 2>/dev/null | awk 'NR == 2 { print $4, $6 }')
  rm_fs=${rm_df#* }
  rm_kib=${rm_df%% *}
  [ -n "$rm_fs" ] || rm_fs=$1
  case $rm_kib in '' | *[!0-9]*) ;; *)
    if [ "$rm_kib" -lt $ROOM_KIB ]; then
      ROOM_WHY="no space left on $rm_fs for the run directory: $rm_kib KiB free"
      return
    fi ;;
  esac
  rm_df=$(df -Pi "$1" 2>/dev/null | awk 'NR == 2 { print $2, $4 }')
  rm_ino=${rm_df#* }
  case ${rm_df%% *}$rm_ino in '' | *[!0-9]*) ;; *)
    # (0 inodes in all: the filesystem has no inode limit, as btrfs)
    if [ "${rm_df%% *}" -gt 0 ] && [ "$rm_ino" -lt $ROOM_INODES ]; then
      ROOM_WHY="no free inodes left on $rm_fs for the run directory: $rm_ino free"
      return
    fi ;;
  esac
  rm_t=$1/.room.$$
  if ! rm_e=$(mkdir "$rm_t" 2>&1 && printf 'x\n' 2>&1 >"$rm_t/x"); then
    rm -rf "$rm_t" 2>/dev/null
    case $rm_e in
      *[Rr]ead-only*) ROOM_WHY="the run root $1 is on a read-only filesystem ($rm_fs)" ;;
      *[Pp]ermission* | *[Aa]ccess*) ROOM_WHY="no write access to the run root $1" ;;
      *[Ss]pace*) ROOM_WHY="no space left on $rm_fs for the run directory" ;;
      *) ROOM_WHY="cannot write in the run root $1: $rm_e" ;;
    esac
    return
  fi
  rm -rf "$rm_t"
}

live_scan() {  # ROOT -> LIVE (pid id comm): a live process carrying a marker of this root, or ''
  # Every job's processes carry DFLASH_RUN_DIR=ROOT/ID from the wrapper on: whatever became of
  # the run directories, a process that still carries one is a job of this root.
  LIVE=
  for ls_e in $(grep -lsF "DFLASH_RUN_DIR=$1/" /proc/[0-9]*/environ 2>/dev/null); do
    ls_p=${ls_e#/proc/}
    ls_p=${ls_p%/environ}
    [ "$ls_p" != $$ ] || continue
    stat_of "$ls_p" && [ "$S_STATE" != Z ] || continue
    ls_v=$({ tr '\000' '\n' <"$ls_e"; } 2>/dev/null | sed -n 's/^DFLASH_RUN_DIR=//p')
    ls_id=${ls_v#"$1"/}
    case $ls_id in '' | */* | "$ls_v") continue ;; esac
    LIVE="$ls_p $ls_id $S_COMM"
    return 0
  done
  return 1
}

pause_at() {  # POINT: tests stop the launcher here (DFLASH_CONTROL_PAUSE), to make a race real
  [ "${DFLASH_CONTROL_PAUSE:-}" = "$1" ] && kill -STOP $$
  return 0
}

write_wrapper() {  # FILE: the job's session leader; it records the job's exit code
  cat >"$1" <<'EOF'
# dflash-tui run wrapper (written by the launcher, see docs/internals.md). Started as
# `setsid sh run.sh DIR` with stdout+stderr appended to DIR/output.log and stdin /dev/null.
d=$1
now() {
  t=$(date +%s.%N 2>/dev/null)
  case $t in '' | *[!0-9.]* | *.) t=$(date +%s) ;; esac
  printf '%s' "$t"
}
put() { printf '%s\n' "$2" >"$d/$1.tmp" && mv -f "$d/$1.tmp" "$d/$1"; }
fail() {
  put launch_error "$1"
  printf 'dflash-tui: launch failed: %s\n' "$1"
  exit 1
}
# A TERM meant for the job reaches this shell too (same group). Catch it and keep waiting, so
# the job's own exit code is recorded; a caught signal is reset in the job, an ignored one not.
trap : TERM INT HUP
{ IFS= read -r st </proc/$$/stat; } 2>/dev/null || fail "cannot read /proc/$$/stat"
set -f
set -- ${st##*") "}
set +f
# Its own cgroup first, where the launcher made one: whatever the job does then (setsid, a
# dropped marker, a double fork), kill finds it there. Not joined: no cgroup claimed.
cg=
if [ -s "$d/cgroup" ]; then
  IFS= read -r cg <"$d/cgroup"
  { echo $$ >"$cg/cgroup.procs"; } 2>/dev/null || { rm -f "$d/cgroup"; rmdir "$cg" 2>/dev/null; }
fi
IFS= read -r wd <"$d/workdir"
case $wd in "~" | "~/"*) wd=$HOME${wd#"~"} ;; esac
if [ -n "$wd" ]; then
  err=$(cd "$wd" 2>&1) || fail "$err"
  cd "$wd" || fail "cd $wd"
fi
. "$d/env"
DFLASH_RUN_DIR=$d
DFLASH_EVENTS=$d/events.jsonl
export DFLASH_RUN_DIR DFLASH_EVENTS
cmd=$(cat "$d/command")
# A plain first word that names no command: report the shell's own words, run nothing else.
w=${cmd%%[$IFS]*}
case $w in '' | -* | *[!A-Za-z0-9_./+-]*) ;; *)
  if ! command -v "$w" >/dev/null 2>&1; then
    err=$(sh -c "$w" 2>&1 </dev/null)
    fail "${err:-$w: not found}"
  fi ;;
esac
# The launcher gave up waiting (a very slow start) and reported a failure: keep its word.
[ -e "$d/launch_error" ] && exit 1
# A kill came while the launcher was still at work: the job is never started.
[ -e "$d/kill_requested" ] && fail "not started: a kill came during the launch"
# No pid file, no job: a job that runs is always one that kill can find.
put pid "$$ $3 ${20}" || fail "cannot write $d/pid (is the run root full?)"
put started_at "$(now)"
# Room for the exit file, kept from the start: a job that dies of a full disk must still read
# as exited with its code, not as gone without one (killed).
put exit.room "                                                                "
sh -c "$cmd"
rc=$?
if ! put exit "$rc $(now)" 2>/dev/null; then
  rm -f "$d/exit.tmp"
  { printf '%s %s\n' "$rc" "$(now)" 1<>"$d/exit.room"; } 2>/dev/null && mv -f "$d/exit.room" "$d/exit"
fi
rm -f "$d/exit.room"
# The job is over: leave its cgroup for the one above and remove it, unless something of the
# job is still in it (rmdir refuses then, and kill or the next reading finds it there).
if [ -n "${cg:-}" ] && [ -e "$d/cgroup" ]; then
  { echo $$ >"${cg%/*}/cgroup.procs"; } 2>/dev/null && rmdir "$cg" 2>/dev/null
fi
EOF
}

lfail() {  # DIR WHY: the launch failed before any job: remove what was made, say why, stop
  [ -n "$CG" ] && rmdir "$CG" 2>/dev/null
  rm -rf "$1"
  rm -rf "$root/.lock"
  room "$root"
  die "${ROOM_WHY:-$2}"
}

refuse_live() {  # the lock is ours and a job of this root is alive: name it, start nothing
  rl_id=${LIVE#* }
  rl_id=${rl_id%% *}
  rm -rf "$root/.lock"
  if [ -d "$root/$rl_id" ]; then
    say "alive $rl_id"
    report "$root/$rl_id" 0
    say end
    exit 3
  fi
  die "run $rl_id is alive (pid ${LIVE%% *}, ${LIVE#* * }) but its directory $root/$rl_id is gone: kill it first (nothing was started)"
}

killed_in_launch() {  # DIR: a kill came during this launch (kill could not take the lock)
  [ -e "$root/.lock/kill" ] || return 1
  [ -e "$1/kill_requested" ] || put "$1/kill_requested" "$(now)"
}

spawn() {  # DIR: start the wrapper in its own session and wait for its pid file
  (job_env && DFLASH_RUN_DIR=$1 && export DFLASH_RUN_DIR && exec setsid sh "$1/run.sh" "$1") \
    </dev/null >>"$1/output.log" 2>&1 &
  child=$!
  la_n=0
  # Hold the lock until the job has a pid file: a second launch must then see it alive.
  while [ ! -e "$1/pid" ] && [ ! -e "$1/launch_error" ] && [ $la_n -lt 200 ]; do
    if ! stat_of $child || [ "$S_STATE" = Z ]; then
      # (setsid may have forked: give the real wrapper one more second)
      [ $la_n -ge 180 ] || la_n=180
    fi
    la_n=$((la_n + 1))
    nap 0.05
  done
  if [ ! -e "$1/pid" ] && [ ! -e "$1/launch_error" ]; then
    sp_why="the job did not start: $(tail -n 5 "$1/output.log" 2>/dev/null)"
    # The file may be what cannot be written (a full disk): then it is said here, never lost.
    put "$1/launch_error" "$sp_why" 2>/dev/null || SAID_ERROR=$sp_why
  fi
}

stop_started() {  # DIR: kill the job this launch just started (a kill came during it)
  verify "$1"
  others "$1"
  [ "$VERDICT" = ours ] && [ -n "$GROUP" ] && kill -KILL -"$PGID" 2>/dev/null
  for ss_p in $(printf '%s%s' "$STRAYS" "$OTHERS" | cut -d' ' -f1); do kill -KILL "$ss_p" 2>/dev/null; done
  cg_of "$1"
  [ -n "$CGP" ] && [ -e "$CGP/cgroup.kill" ] && { echo 1 >"$CGP/cgroup.kill"; } 2>/dev/null
  return 0
}

do_launch() {  # ROOT COMMAND WORKDIR ENVTEXT KEEP LOCK_MS [JOB]
  CG= SAID_ERROR=
  root=$(root_abs "$1") || die "cannot create the run root $1: $root"
  # Room first: a full or read-only root fails here with its cause, before anything is made.
  room "$root"
  [ -z "$ROOM_WHY" ] || die "$ROOM_WHY"
  lock_take "$root/.lock" "${6:-10000}" || { say end; exit 2; }
  foreign "$root"
  # Any live process of a job of this root blocks, whatever became of its directory.
  live_scan "$root" && refuse_live
  latest=$(latest_of "$root")
  if [ -n "$latest" ]; then
    verify "$root/$latest"
    # Alive means its group: strays left by a dead run do not block a new launch.
    if [ "$VERDICT" = ours ] && [ -n "$GROUP" ]; then
      LIVE="$PGID $latest ?"
      refuse_live
    fi
  fi
  id=$(new_id "$latest")
  while ! mkdir "$root/$id" 2>/dev/null; do
    [ -d "$root/$id" ] || lfail "$root/$id" "cannot create $root/$id"
    id=$(new_id "$id")
  done
  d=$root/$id
  pause_at run-dir
  # First the log: whatever fails next has a log to be told in. Every write is checked: a run
  # directory is whole or it is not there.
  { : >>"$d/output.log"; } 2>/dev/null || lfail "$d" "cannot write $d/output.log"
  { printf '%s' "$2" >"$d/command"; } 2>/dev/null || lfail "$d" "cannot write $d/command"
  wd=$3
  [ -n "$wd" ] || wd=$(pwd)
  { printf '%s\n' "$wd" >"$d/workdir"; } 2>/dev/null || lfail "$d" "cannot write $d/workdir"
  { printf '%s' "$4" >"$d/env"; } 2>/dev/null || lfail "$d" "cannot write $d/env"
  # A job member's run names its job: "NAME NODE_RANK NNODES" (docs/supervise.md).
  if [ -n "${7:-}" ]; then
    { printf '%s\n' "$7" >"$d/job"; } 2>/dev/null || lfail "$d" "cannot write $d/job"
  fi
  { write_wrapper "$d/run.sh"; } 2>/dev/null && [ -s "$d/run.sh" ] || lfail "$d" "cannot write $d/run.sh"
  cg_make "dflash-$id-$$"
  if [ -n "$CG" ]; then
    { printf '%s\n' "$CG" >"$d/cgroup"; } 2>/dev/null || lfail "$d" "cannot write $d/cgroup"
  fi
  if ! command -v setsid >/dev/null 2>&1; then
    put "$d/launch_error" "setsid: not found (it comes with util-linux or BusyBox)"
    say "dflash-tui: launch failed: setsid: not found" >>"$d/output.log"
  elif killed_in_launch "$d"; then
    put "$d/launch_error" "not started: a kill came during the launch"
  else
    spawn "$d"
    pause_at started
    # A kill that came while we held the lock: the job it could not reach is stopped here.
    killed_in_launch "$d" && stop_started "$d"
  fi
  [ "${5:-0}" -gt 0 ] 2>/dev/null && prune "$root" "$5" "$id"
  rm -rf "$root/.lock"
  say "launched $id"
  [ -z "$SAID_ERROR" ] || say "launch_error $SAID_ERROR"
  report "$d" 20
}

prune() {  # ROOT KEEP NEWEST: remove the oldest runs beyond KEEP; never NEWEST or a live one
  pr_n=0
  for pr_e in "$1"/$IDGLOB; do [ -d "$pr_e" ] && pr_n=$((pr_n + 1)); done
  pr_x=$((pr_n - $2))
  for pr_e in "$1"/$IDGLOB; do
    [ $pr_x -gt 0 ] || break
    pr_id=${pr_e##*/}
    # Only ROOT/<run id>, a directory, not the newest, not alive: nothing else is ever removed.
    case $pr_id in $IDGLOB) ;; *) continue ;; esac
    [ -d "$1/$pr_id" ] && [ ! -L "$1/$pr_id" ] && [ "$pr_id" != "$3" ] || continue
    verify "$1/$pr_id"
    [ "$VERDICT" != ours ] || continue
    rm -rf "${1:?}/$pr_id" && pr_x=$((pr_x - 1)) && say "pruned $pr_id"
  done
}
