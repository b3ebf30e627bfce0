# dflash-tui run control, POSIX sh (dash, bash, BusyBox ash); no python needed where it runs.
# Sent on stdin after control_launch.sh (the launch verb's part; script.py joins them) and run
# as `sh -s -- VERB ARGS...` (every ARG shell-quoted by the supervisor):
#   launch ROOT COMMAND WORKDIR ENVTEXT KEEP LOCK_MS      start a run (under ROOT/.lock)
#   state ROOT [ID] [LOG_LINES]                          read a run back
#   signal ROOT ID SIG                                   verify the group is the run's, then kill
#   clear-cache PATH ALLOWED                             remove the compile cache
#   pid PID TICKS SIG                                    one process, verified by start time
#   pid-dump PID TICKS                                   py-spy dump of it, verified likewise
#   tools                                                which helpers are on PATH (py-spy)
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
  # The whole file: a name (comm) is the process's to set, a newline included; read to the
  # first newline only, such a process would read as gone and outlive a kill.
  { IFS= read -r line && while IFS= read -r st_more || [ -n "$st_more" ]; do
      line="$line $st_more"; st_more=
    done; } <"/proc/$1/stat" 2>/dev/null
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

pid_args() {  # PID TICKS: both whole numbers, PID not 0 (kill 0 is our own group)
  case $1$2 in '' | *[!0-9]*) die "bad pid $1 or start ticks $2" ;; esac
  case $1 in 0*) die "bad pid $1" ;; esac  # (/proc/01 is no PID)
}

do_pid() {  # PID TICKS SIG: one process, verified by its start time, never by its name
  pid_args "$1" "$2"
  case $3 in TERM | KILL | INT | USR1 | 0) ;; *) die "bad signal $3" ;; esac
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

do_tools() {  # the helpers the process menu may offer, where they are on this PATH
  if tl_p=$(command -v py-spy 2>/dev/null) && [ -n "$tl_p" ]; then say "tool py-spy $tl_p"; fi
}

do_pid_dump() {  # PID TICKS: py-spy dump (each thread's Python stack), as `pid` verifies first
  pid_args "$1" "$2"
  if ! stat_of "$1" || [ "$S_STATE" = Z ]; then
    say "pid_gone $1"
  elif [ "$S_TICKS" != "$2" ]; then
    say "pid_reused $1 $S_TICKS"
  elif pd_refusal "$1" && [ -n "$PD_WHY" ]; then
    say "pid_refused $PD_WHY"
    return 3
  elif ! command -v py-spy >/dev/null 2>&1; then
    say "pid_error py-spy is not on PATH here"
  else
    # Every line of its answer is prefixed, so none can pass for one of ours (`end` above all).
    dp_out=$(py-spy dump --pid "$1" </dev/null 2>&1)
    dp_rc=$?
    printf '%s\n' "$dp_out" | head -n 2000 | sed 's/^/dump /'
    say "pid_dumped $1 $dp_rc"
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
  pid-dump) do_pid_dump "$@" ;;
  tools) do_tools ;;
  *) die "unknown verb $verb" ;;
esac
rc=$?
say end
exit $rc
