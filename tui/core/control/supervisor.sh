# dflash-tui supervisor files, POSIX sh (dash, bash, BusyBox ash); no python needed where it runs.
# Sent on stdin and run as `sh -s -- VERB ROOT ARGS...` (every ARG shell-quoted by the caller):
#   lock ROOT TOKEN OWNER            take ROOT/.supervisor.lock (mkdir), or say who holds it
#   take ROOT OLD TOKEN OWNER        break a stale lock whose token is still OLD, and take it
#   beat ROOT TOKEN RECORD           rewrite supervisor.json if we still hold the lock; hand
#                                    over (and remove) a pending supervisor.policy.json
#   release ROOT TOKEN RECORD        write the last record and drop the lock (if still ours)
#   read ROOT                        the record and the lock's owner
#   request ROOT JSON                write supervisor.policy.json (a viewer asks for a policy)
# Output: `status WORD`, then `token`, `owner`, `record`, `policy` lines (JSON on one line),
# and last `end` (an answer without it was cut short, as control.sh's), parsed by
# tui/core/control/supervisor_files.py. Files are written whole (tmp + mv).
LC_ALL=C
unset CDPATH

say() { printf '%s\n' "$*"; }
put() { printf '%s\n' "$2" >"$1.tmp.$$" && mv -f "$1.tmp.$$" "$1"; }
first() { [ -r "$1" ] && { IFS= read -r fl_v <"$1" || [ -n "$fl_v" ]; } && say "$2 $fl_v"; }

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
    put "$R/supervisor.json" "$4" || { say "error cannot write $R/supervisor.json"; exit 2; }
    say "status ok"
    if mv -f "$R/supervisor.policy.json" "$R/.supervisor.policy.$$" 2>/dev/null; then
      first "$R/.supervisor.policy.$$" policy
      rm -f "$R/.supervisor.policy.$$"
    fi
    ;;
  release)
    if ! mine "$3"; then say "status lost"; exit 0; fi
    put "$R/supervisor.json" "$4" && rm -rf "$L" && say "status released"
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
