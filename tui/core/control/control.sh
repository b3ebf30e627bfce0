# dflash-tui run control, POSIX sh (dash, bash, BusyBox ash); no python needed where it runs.
# Sent on stdin and run as `sh -s -- VERB ARGS...` (every ARG shell-quoted by the supervisor):
#   launch ROOT COMMAND WORKDIR ENVTEXT KEEP LOCK_MS      start a run (under ROOT/.lock)
#   state ROOT [ID] [LOG_LINES]                          read a run back
#   signal ROOT ID SIG                                   verify the group is the run's, then kill
#   clear-cache PATH ALLOWED                             remove the compile cache
# Output: one `key value` line per fact (parsed by tui/core/base/rundir.py parse_report), then
# `end`: an answer without it did not come from a whole run of this script, whatever the exit
# status (2 error, 3 refused: for people; the caller reads only the lines, so a shell's, a
# runtime's or a job's exit code is never taken for one of ours).
# The run directory is docs/internals.md's contract. Commands here never read stdin: the script
# itself arrives on it, and a child that read stdin would eat the rest of the script.
# POSIX sh has no local variables: each helper's names carry its own prefix (v_, pr_, lk_ ...)
# so that a helper never overwrites its caller's, e.g. the loop variable of a loop that removes.

# The C locale (glob order, ranges) and no CDPATH for this script only: the job gets the
# caller's values back (job_env), it must not run in an environment we made up.
[ "${LC_ALL+set}" = set ] && ORIG_LC_ALL=$LC_ALL
[ "${CDPATH+set}" = set ] && ORIG_CDPATH=$CDPATH
LC_ALL=C
unset CDPATH
NL='
'

say() { printf '%s\n' "$*"; }
die() { say "error $*"; say end; exit 2; }
nap() { sleep "${1:-0.05}" 2>/dev/null || sleep 1; }

now() {  # epoch seconds, with a fraction where date can give one
  t=$(date +%s.%N 2>/dev/null)
  case $t in '' | *[!0-9.]* | *.) t=$(date +%s) ;; esac
  printf '%s' "$t"
}

job_env() {
  if [ "${ORIG_LC_ALL+set}" = set ]; then LC_ALL=$ORIG_LC_ALL; else unset LC_ALL; fi
  if [ "${ORIG_CDPATH+set}" = set ]; then CDPATH=$ORIG_CDPATH && export CDPATH; fi
}

put() {  # FILE TEXT: one line, written whole (tmp + mv) so readers never see half of it
  printf '%s\n' "$2" >"$1.tmp.$$" && mv -f "$1.tmp.$$" "$1"
}

root_abs() {  # the run root: ~ or $HOME is the remote user's home; absolute, no trailing /
  r=$1
  # (some container execs set no HOME: ask the password database, as the probe's python does)
  [ -n "${HOME:-}" ] || HOME=$(awk -F: -v u="$(id -u)" '$3 == u { print $6; exit }' /etc/passwd)
  case $r in
    "~" | "\$HOME" | "\${HOME}") r=$HOME ;;
    "~/"* | "\$HOME/"* | "\${HOME}/"*) r=$HOME/${r#*/} ;;
  esac
  mkdir -p "$r" 2>&1 || return 1
  (cd "$r" && pwd)
}

stat_of() {  # PID -> S_STATE S_PPID S_PGID S_SID S_FLAGS S_TICKS S_COMM; false when it is gone
  line=
  { IFS= read -r line <"/proc/$1/stat"; } 2>/dev/null
  [ -n "$line" ] || return 1
  S_COMM=${line#*"("}
  S_COMM=${S_COMM%")"*}
  # The name may hold spaces and parentheses: the fields start after the LAST ") ".
  set -f
  set -- ${line##*") "}
  set +f
  [ $# -ge 20 ] || return 1
  S_STATE=$1 S_PPID=$2 S_PGID=$3 S_SID=$4 S_FLAGS=$7 S_TICKS=${20}
}

carries() {  # PID DIR: 0 if its environment holds DFLASH_RUN_DIR=DIR, 1 if not, 2 unreadable
  ca_env=$(tr '\000' '\n' 2>/dev/null <"/proc/$1/environ") || return 2
  case "$NL$ca_env$NL" in *"${NL}DFLASH_RUN_DIR=$2$NL"*) return 0 ;; esac
  return 1
}

marked() {  # DIR: does a member carry DFLASH_RUN_DIR=DIR? (none readable: benefit of the doubt)
  mk_seen=0
  for mk_p in $(printf '%s' "$MEMBERS" | cut -d' ' -f1); do
    carries "$mk_p" "$1"
    case $? in 0) return 0 ;; 1) mk_seen=1 ;; esac
  done
  [ $mk_seen = 0 ]
}

verify() {  # DIR -> VERDICT (none|gone|ours|reused), PGID, MEMBERS (live, non-zombie)
  VERDICT=none PGID= TICKS= MEMBERS=
  [ -r "$1/pid" ] || return 0
  { read -r _ PGID TICKS <"$1/pid"; } 2>/dev/null
  case $PGID$TICKS in '' | *[!0-9]*) PGID= && return 0 ;; esac
  v_lead=0
  if stat_of "$PGID"; then
    # The kernel reuses a PGID only once its group is gone: a leader with another start time
    # is someone else's process, and nothing of that group may be signalled.
    [ "$S_TICKS" = "$TICKS" ] || { VERDICT=reused && return 0; }
    v_lead=1
  fi
  for v_e in /proc/[0-9]*; do
    v_p=${v_e#/proc/}
    stat_of "$v_p" || continue
    [ "$S_PGID" = "$PGID" ] && [ "$S_STATE" != Z ] || continue
    if [ $v_lead = 0 ]; then
      # Leader gone: members of our session, born after our leader, else not ours.
      [ "$S_SID" = "$PGID" ] && [ "$S_TICKS" -ge "$TICKS" ] || { VERDICT=reused && return 0; }
    fi
    MEMBERS="$MEMBERS$v_p $S_PPID $S_PGID $S_SID $S_STATE $S_TICKS $S_COMM$NL"
  done
  GROUP=$MEMBERS
  strays "$1"
  MEMBERS="$MEMBERS$STRAYS"
  if [ -z "$MEMBERS" ]; then VERDICT=gone && return 0; fi
  VERDICT=ours
  [ $v_lead = 1 ] || [ -z "$GROUP" ] || marked "$1" || VERDICT=reused
}

strays() {  # DIR -> STRAYS: the job's processes that left its group (setsid, new group)
  # They still carry the wrapper's DFLASH_RUN_DIR=DIR and were born after the run's leader;
  # both are checked, so nothing else is ever picked (never a name).
  STRAYS=
  # One grep over every environ finds the few candidates; each is then checked exactly.
  for st_e in $(grep -lsF "DFLASH_RUN_DIR=$1" /proc/[0-9]*/environ 2>/dev/null); do
    st_p=${st_e#/proc/}
    st_p=${st_p%/environ}
    stat_of "$st_p" || continue
    [ "$S_PGID" != "$PGID" ] && [ "$S_STATE" != Z ] && [ "$S_TICKS" -ge "$TICKS" ] || continue
    carries "$st_p" "$1" || continue
    STRAYS="$STRAYS$st_p $S_PPID $S_PGID $S_SID $S_STATE $S_TICKS $S_COMM$NL"
  done
}

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

cg_of() {  # DIR -> CGP: the run's cgroup directory ('' when it has none)
  CGP=
  { IFS= read -r CGP <"$1/cgroup"; } 2>/dev/null
  case $CGP in /sys/fs/cgroup/*) [ -r "$CGP/cgroup.procs" ] || CGP= ;; *) CGP= ;; esac
}

member_of() {  # PID: is it in MEMBERS or OTHERS already?
  case "$NL$MEMBERS$OTHERS" in *"$NL$1 "*) return 0 ;; esac
  return 1
}

other() {  # PID WHY: add a live process to OTHERS (the job's, outside its group and marker)
  member_of "$1" && return 0
  stat_of "$1" && [ "$S_STATE" != Z ] || return 0
  OTHERS="$OTHERS$1 $S_PPID $S_PGID $S_SID $S_STATE $S_TICKS $S_COMM$NL"
}

others() {  # DIR -> OTHERS: the job's processes that neither its group nor its marker shows
  # (a child that dropped the marker and left the group): by the run's cgroup where it has one;
  # else the children of its members, recorded in DIR/detached so that they stay known once
  # orphaned (by PID and start time: a reused PID is never one of them).
  OTHERS=
  cg_of "$1"
  if [ -n "$CGP" ]; then
    while IFS= read -r ot_p; do
      case $ot_p in '' | 0 | *[!0-9]*) continue ;; esac
      other "$ot_p" cgroup
    done <"$CGP/cgroup.procs"
    return 0
  fi
  [ "$VERDICT" = ours ] && [ -n "$MEMBERS" ] && for ot_e in /proc/[0-9]*; do
    ot_p=${ot_e#/proc/}
    stat_of "$ot_p" && [ "$S_STATE" != Z ] || continue
    case "$NL$MEMBERS" in *"$NL$S_PPID "*) ;; *) continue ;; esac
    member_of "$ot_p" && continue
    [ -w "$1" ] && printf '%s %s\n' "$ot_p" "$S_TICKS" >>"$1/detached" 2>/dev/null
    other "$ot_p" child
  done
  [ -r "$1/detached" ] || return 0
  while read -r ot_p ot_t; do
    case $ot_p$ot_t in '' | *[!0-9]*) continue ;; esac
    stat_of "$ot_p" && [ "$S_TICKS" = "$ot_t" ] && other "$ot_p" detached
  done <"$1/detached"
}

IDGLOB='[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]-[0-9][0-9][0-9][0-9][0-9][0-9]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]'

latest_of() {  # ROOT -> the greatest run id (ids sort in launch order)
  lo_l=
  for lo_e in "$1"/$IDGLOB; do [ -d "$lo_e" ] && lo_l=${lo_e##*/}; done
  printf '%s' "$lo_l"
}

foreign() {  # ROOT: say which entries of the run root are no run of ours (they are ignored)
  for fo_e in "$1"/* "$1"/.[!.]*; do
    [ -e "$fo_e" ] || [ -L "$fo_e" ] || continue
    fo_n=${fo_e##*/}
    case $fo_n in .lock | .lock.break | .supervisor* | .room.*) continue ;; esac
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

lock_stale() {  # LOCKDIR: is its owner gone?
  if ! { read -r ls_p ls_t <"$1/pid"; } 2>/dev/null; then
    # The owner writes its pid right after mkdir: still missing a second later, it died.
    nap 1
    [ -d "$1" ] && [ ! -e "$1/pid" ]
    return
  fi
  ! { stat_of "$ls_p" && [ "$S_TICKS" = "$ls_t" ]; }
}

lock_owner() {  # LOCKDIR -> LK_OWNER: true when a live process holds it
  LK_OWNER=
  { read -r lo_p lo_t <"$1/pid"; } 2>/dev/null || return 1
  stat_of "$lo_p" && [ "$S_TICKS" = "$lo_t" ] && LK_OWNER=$lo_p
}

lock_take() {  # LOCKDIR WAIT_MS [QUIET]: mkdir lock; a stale one is broken once, under LOCKDIR.break
  lk_n=0
  lk_max=$(($2 / 50 + 1))
  while ! mkdir "$1" 2>/dev/null; do
    if lock_stale "$1" && mkdir "$1.break" 2>/dev/null; then
      lock_stale "$1" && rm -rf "$1"
      rmdir "$1.break"
      continue
    fi
    lk_n=$((lk_n + 1))
    if [ $lk_n -ge $lk_max ]; then
      [ -n "${3:-}" ] || say "error another launch holds the lock $1 (owner: $(cat "$1/pid" 2>/dev/null))"
      return 1
    fi
    nap 0.05
  done
  stat_of $$
  put "$1/pid" "$$ $S_TICKS"
}

report() {  # DIR LOG_LINES: the run's files, its verdict and members
  say "now $(now)"
  say "id ${1##*/}"
  say "dir $1"
  # The processes first, the files after: a job that ends in between then reads as alive
  # with its exit file (ended, judged at the next look), never as gone without one (killed).
  verify "$1"
  others "$1"
  # A run directory still without a pid file: is its launcher still at work? (else, past the
  # start window, it was abandoned: the reader says launch-failed)
  say "born $(date -r "$1" +%s 2>/dev/null)"
  if [ ! -e "$1/pid" ]; then lock_owner "${1%/*}/.lock"; say "launcher ${LK_OWNER:-0}"; fi
  for rp_f in pid started_at exit kill_requested workdir command; do
    rp_v=
    [ -r "$1/$rp_f" ] && { IFS= read -r rp_v <"$1/$rp_f" || [ -n "$rp_v" ]; } && say "file $rp_f $rp_v"
  done
  if [ -r "$1/launch_error" ]; then
    while IFS= read -r rp_v || [ -n "$rp_v" ]; do say "launch_error $rp_v"; done <"$1/launch_error"
  fi
  say "verdict $VERDICT"
  printf '%s' "$MEMBERS" | while IFS= read -r rp_m; do say "member $rp_m"; done
  printf '%s' "$OTHERS" | while IFS= read -r rp_m; do say "other $rp_m"; done
  cg_of "$1"
  [ -n "$CGP" ] && say "cgroup $CGP"
  # An empty cgroup of a run that is over is removed (rmdir refuses a non-empty one).
  [ -n "$CGP" ] && [ -z "$MEMBERS$OTHERS" ] && [ -e "$1/pid" ] && rmdir "$CGP" 2>/dev/null
  if [ "${2:-0}" -gt 0 ] 2>/dev/null && [ -r "$1/output.log" ]; then
    tail -n "$2" "$1/output.log" | while IFS= read -r rp_v || [ -n "$rp_v" ]; do
      say "log $rp_v"
    done
  fi
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
sh -c "$cmd"
rc=$?
put exit "$rc $(now)"
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

do_launch() {  # ROOT COMMAND WORKDIR ENVTEXT KEEP LOCK_MS
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

do_state() {  # ROOT [ID] [LOG_LINES]
  root=$(root_abs "$1") || die "cannot read the run root $1"
  id=${2:-$(latest_of "$root")}
  if [ -z "$id" ]; then
    say "now $(now)"
    say "none"
    return
  fi
  case $id in */* | .*) die "bad run id $id" ;; esac
  [ -d "$root/$id" ] || die "no run $id under $root"
  report "$root/$id" "${3:-0}"
}

sig_lock() {  # ROOT WAIT_MS -> SG_LOCKED: take the launch lock, or leave a kill for its holder
  # A launch holds the lock from before its run directory exists until its job has a pid file:
  # with the lock, no job can be half-started. A holder still at work after WAIT_MS finds
  # ROOT/.lock/kill when it looks (before the start, after it) and stops its own job.
  SG_LOCKED=0 sl_n=0
  while [ $sl_n -lt 3 ]; do
    lock_take "$1/.lock" "$2" quiet && SG_LOCKED=1 && return 0
    sl_n=$((sl_n + 1))
    lock_owner "$1/.lock" || continue
    put "$1/.lock/kill" "$(now)" 2>/dev/null && say "kill_pending $LK_OWNER" && return 0
  done
  say "note the launch lock $1/.lock could not be taken: signalling without it"
}

do_signal() {  # ROOT ID SIG [LOCK_MS]: verify, then signal the whole group (never a name)
  root=$(root_abs "$1") || die "cannot read the run root $1"
  case $2 in */* | .*) die "bad run id $2" ;; esac
  case $3 in TERM | KILL | INT | HUP) ;; *) die "bad signal $3" ;; esac
  sig_lock "$root" "${4:-2000}"
  id=${2:-$(latest_of "$root")}
  if [ -z "$id" ]; then
    [ $SG_LOCKED = 0 ] || rm -rf "$root/.lock"
    say "now $(now)"
    say none
    return
  fi
  d=$root/$id
  [ -d "$d" ] || { [ $SG_LOCKED = 0 ] || rm -rf "$root/.lock"; die "no run $id under $root"; }
  verify "$d"
  others "$d"
  [ "$VERDICT" != reused ] || OTHERS=  # (a group that is someone else's: nothing is sent)
  # Asked before the job has a pid file: the wrapper sees this and never starts it.
  if [ "$VERDICT" = ours ] || [ -n "$OTHERS" ] || { [ ! -e "$d/pid" ] && [ ! -e "$d/launch_error" ]; }; then
    [ -e "$d/kill_requested" ] || put "$d/kill_requested" "$(now)" 2>/dev/null
  fi
  if [ "$VERDICT" = ours ] && [ -n "$GROUP" ]; then
    # `kill -SIG -PGID`: dash and BusyBox reject `kill -- -PGID`.
    if out=$(kill -"$3" -"$PGID" 2>&1); then say "signalled $3 $PGID"; else
      say "signal_error $out"
    fi
  fi
  # Processes of the job outside its group (verified by verify/strays/others above), each by
  # PID; with a cgroup, SIGKILL goes to the whole cgroup at once (nothing forks away).
  [ "$VERDICT" = ours ] || STRAYS=
  for sg_p in $(printf '%s%s' "$STRAYS" "$OTHERS" | cut -d' ' -f1); do
    kill -"$3" "$sg_p" 2>/dev/null && say "signalled $3 $sg_p"
  done
  if [ "$3" = KILL ] && [ -n "$CGP" ] && [ -e "$CGP/cgroup.kill" ]; then
    { echo 1 >"$CGP/cgroup.kill"; } 2>/dev/null && say "signalled KILL cgroup"
  fi
  [ $SG_LOCKED = 0 ] || rm -rf "$root/.lock"
  report "$d" 0
}

do_clear() {  # PATH ALLOWED: remove the compile cache if under /tmp or the configured path
  p=${1:-/tmp/torchinductor_$(id -un)}
  case $p in /*) ;; *) die "refusing to remove $p: not an absolute path" ;; esac
  case $p/ in */../* | */./* | *//*) die "refusing to remove $p: . or .. or // in the path" ;; esac
  case $p in
    /tmp/?*) ;;
    *) [ -n "$2" ] && [ "$p" = "$2" ] || die "refusing to remove $p: not under /tmp or the configured compile_cache" ;;
  esac
  if [ ! -e "$p" ] && [ ! -L "$p" ]; then
    say "absent $p"
    return
  fi
  [ -L "$p" ] || [ -O "$p" ] || die "refusing to remove $p: it belongs to another user"
  out=$(rm -rf "$p" 2>&1) || die "rm $p: $out"
  say "cleared $p"
}

pd_kthread() {  # PID: a kernel thread? (the PF_KTHREAD flag; where the flags cannot be read,
  # no command line and no executable. Not both always: an exiting process or another
  # user's can show neither, and is no kernel thread.)
  stat_of "$1" || return 1
  case $S_FLAGS in
    '' | *[!0-9]*) ;;
    *) [ $((S_FLAGS / 2097152 % 2)) = 1 ] && return 0 || return 1 ;;
  esac
  pk_cmd=$({ tr -d '\000' <"/proc/$1/cmdline"; } 2>/dev/null)
  [ -z "$pk_cmd" ] && [ ! -e "/proc/$1/exe" ]
}

pd_refusal() {  # PID -> PD_WHY: why it must never be signalled from here ('' when it may be)
  PD_WHY=
  pr_t=$1
  if [ "$pr_t" = 1 ]; then
    PD_WHY="PID 1 is init: killing it takes the whole machine (or container) down"
    return
  fi
  # Kernel threads: kthreadd (PID 2) and its children, where PID 2 is kthreadd (in a container's
  # PID namespace PID 2 is an ordinary process, and so are its children).
  if pd_kthread "$pr_t"; then
    PD_WHY="PID $pr_t is a kernel thread"
    return
  fi
  stat_of "$pr_t" || return
  pr_comm=$S_COMM
  if { [ "$pr_t" = 2 ] || [ "$S_PPID" = 2 ]; } && pd_kthread 2; then
    PD_WHY="PID $pr_t is a kernel thread (kthreadd or its child)"
    return
  fi
  # This script, then every ancestor up to PID 1: the supervisor itself when it runs here, the
  # sshd session and login shell over SSH, the container runtime's exec under a container.
  pr_p=$$ pr_n=0 pr_leads=' '
  while [ "$pr_n" -lt 512 ]; do
    case $pr_p in '' | 0 | *[!0-9]*) break ;; esac
    stat_of "$pr_p" || break
    if [ "$pr_p" = "$pr_t" ]; then
      if [ "$pr_p" = $$ ]; then
        PD_WHY="PID $pr_t is this control script itself"
      else
        PD_WHY="PID $pr_t ($pr_comm) is an ancestor of the dflash-tui control command (the app, its shell, sshd or the terminal that carries it): killing it cuts the supervisor off"
      fi
      return
    fi
    pr_leads="$pr_leads$S_PGID $S_SID "
    [ "$pr_p" = 1 ] && break
    pr_p=$S_PPID pr_n=$((pr_n + 1))
  done
  # The leader of a group or session of that chain (the app's terminal shell, an SSH session),
  # even when it is no ancestor any more.
  case $pr_leads in
    *" $pr_t "*) PD_WHY="PID $pr_t ($pr_comm) leads the process group or session of the dflash-tui control command (the app's terminal or SSH session)" ;;
  esac
}

do_pid() {  # PID TICKS SIG: one process, verified by its start time, never by its name
  case $1$2 in '' | *[!0-9]*) die "bad pid $1 or start ticks $2" ;; esac
  case $1 in 0*) die "bad pid $1" ;; esac  # (kill 0 is our own group; /proc/01 is no PID)
  case $3 in TERM | KILL | 0) ;; *) die "bad signal $3" ;; esac
  if ! stat_of "$1" || [ "$S_STATE" = Z ]; then
    say "pid_gone $1"
  elif [ "$S_TICKS" != "$2" ]; then
    say "pid_reused $1 $S_TICKS"
  elif [ "$3" = 0 ]; then
    say "pid_alive $1 $S_STATE"
  elif pd_refusal "$1" && [ -n "$PD_WHY" ]; then
    say "pid_refused $PD_WHY"  # nothing is sent
    return 3
  elif out=$(kill -"$3" "$1" 2>&1); then
    say "pid_signalled $3 $1"
  else
    say "pid_error $out"
  fi
}

verb=$1
shift
case $verb in
  launch) do_launch "$@" ;;
  state) do_state "$@" ;;
  signal) do_signal "$@" ;;
  clear-cache) do_clear "$@" ;;
  pid) do_pid "$@" ;;
  *) die "unknown verb $verb" ;;
esac
rc=$?
say end
exit $rc
