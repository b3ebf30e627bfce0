# dflash-tui supervisor files, POSIX sh (dash, bash, BusyBox ash); no python needed where it runs.
# Sent on stdin and run as `sh -s -- VERB ROOT ARGS...` (every ARG shell-quoted by the caller):
#   lock ROOT TOKEN OWNER            take ROOT/.supervisor.lock (mkdir), or say who holds it
#   take ROOT OLD TOKEN OWNER        break a stale lock whose token is still OLD, and take it
#   beat ROOT TOKEN RECORD           rewrite supervisor.json if we still hold the lock; hand
#                                    over (and remove) a pending supervisor.policy.json
#   release ROOT TOKEN RECORD        write the last record and drop the lock (if still ours)
#   read ROOT                        the record and the lock's owner
#   request ROOT JSON                write supervisor.policy.json (a viewer asks for a policy)
# Output: `status WORD`, then `token`, `owner`, `record`, `policy`, `why` lines (JSON on one
# line), and last `end` (an answer without it was cut short, as control.sh's), parsed by
# tui/core/control/supervisor_files.py. Files are written whole (tmp + mv). On a full disk the
# record is written in place instead, over the last one (the caller pads every record, so the
# file holds room for the next): `status inplace` with `why`, the real cause; where even that
# cannot be done, `status unwritten` with `why`. No temporary file is ever left behind.
LC_ALL=C
unset CDPATH

say() { printf '%s\n' "$*"; }
put() { printf '%s\n' "$2" >"$1.tmp.$$" && mv -f "$1.tmp.$$" "$1" || { rm -f "$1.tmp.$$"; return 1; }; }
first() { [ -r "$1" ] && { IFS= read -r fl_v <"$1" || [ -n "$fl_v" ]; } && say "$2 $fl_v"; }

record() {  # FILE JSON -> RC_WHY: whole, else in place; 0 whole, 1 in place, 2 not written
  RC_WHY=
  # cat, not printf's redirection: cat names the cause (No space left on device), dash's
  # printf only says "I/O error".
  if rc_e=$(printf '%s\n' "$2" | { cat >"$1.tmp.$$"; } 2>&1) && mv -f "$1.tmp.$$" "$1"; then
    return 0
  fi
  rm -f "$1.tmp.$$"
  RC_WHY=$(printf '%s' "$rc_e" | tail -n 1 | sed 's/^.*: //' | cut -c1-200)
  RC_WHY=${RC_WHY:-cannot write $1}
  rc_have=$(wc -c <"$1" 2>/dev/null) || return 2
  rc_have=$((rc_have))  # some wc pad the number with spaces
  rc_need=$((${#2} + 1))
  [ "$rc_have" -ge "$rc_need" ] || return 2
  # Over the old record, padded with spaces to its length: no new block is needed. One printf,
  # so that a reader meets a half-written record as rarely as can be.
  rc_pad=$(dd if=/dev/zero bs=1 count=$((rc_have - rc_need)) 2>/dev/null | tr '\0' ' ')
  { printf '%s%s\n' "$2" "$rc_pad" 1<>"$1"; } 2>/dev/null || return 2
  return 1
}

wrote() {  # the status line for record()'s answer $1, and why
  case $1 in
    0) say "status $2" ;;
    1) say "status inplace"; say "why $RC_WHY" ;;
    *) say "status unwritten"; say "why $RC_WHY" ;;
  esac
}

root_abs() {  # as control.sh: ~ or $HOME is the remote user's home; absolute, no trailing /
  r=$1
  [ -n "${HOME:-}" ] || HOME=$(awk -F: -v u="$(id -u)" '$3 == u { print $6; exit }' /etc/passwd)
  case $r in
    "~" | "\$HOME" | "\${HOME}") r=$HOME ;;
    "~/"* | "\$HOME/"* | "\${HOME}/"*) r=$HOME/${r#*/} ;;
  esac
  mkdir -p "$r" 2>&1 || return 1
  (cd "$r" && pwd)
}

held() {  # who holds the lock, and the record
  say "status held"
  first "$L/token" token
  first "$L/owner" owner
  first "$R/supervisor.json" record
}

mine() {  # TOKEN: is the lock ours?
  mn_t=
  { IFS= read -r mn_t <"$L/token"; } 2>/dev/null
  [ -d "$L" ] && [ "$mn_t" = "$1" ]
}

claim() {  # TOKEN OWNER: write our names into the lock we just made
  put "$L/token" "$1" && put "$L/owner" "$2" && say "status locked"
  first "$R/supervisor.json" record
}

verb=${1:-}
R=$(root_abs "${2:-}") || { say "error cannot use the run root ${2:-}: $R"; exit 2; }
L=$R/.supervisor.lock
trap 'say end' EXIT
case $verb in
  lock)
    if mkdir "$L" 2>/dev/null; then claim "$3" "$4"; else held; fi
    ;;
  take)
    if ! mkdir "$L.break" 2>/dev/null; then held; exit 0; fi
    tk_t=
    [ -n "$3" ] || sleep 1  # no token yet: its owner may be writing it right now
    { IFS= read -r tk_t <"$L/token"; } 2>/dev/null
    if [ ! -d "$L" ] || [ "$tk_t" = "$3" ]; then
      rm -rf "$L"
      if mkdir "$L" 2>/dev/null; then claim "$4" "$5"; else held; fi
    else
      held
    fi
    rmdir "$L.break"
    ;;
  beat)
    if ! mine "$3"; then say "status lost"; first "$L/owner" owner; exit 0; fi
    record "$R/supervisor.json" "$4"
    wrote $? ok
    if mv -f "$R/supervisor.policy.json" "$R/.supervisor.policy.$$" 2>/dev/null; then
      first "$R/.supervisor.policy.$$" policy
      rm -f "$R/.supervisor.policy.$$"
    fi
    ;;
  release)
    if ! mine "$3"; then say "status lost"; exit 0; fi
    record "$R/supervisor.json" "$4"
    rl_rc=$?
    rm -rf "$L"
    wrote $rl_rc released
    ;;
  read)
    say "status read"
    say "now $(date +%s)"
    first "$L/owner" owner
    first "$R/supervisor.json" record
    ;;
  request)
    put "$R/supervisor.policy.json" "$3" && say "status requested"
    ;;
  *) say "error unknown verb $verb"; exit 2 ;;
esac
