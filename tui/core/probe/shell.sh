# dflash-tui degraded probe, for a machine without python3 (POSIX sh + awk; dash and BusyBox).
# Same command line and the same JSON line per sample as tui/core/probe/main.py, with
# "probe_mode": "shell" and an entry in "errors" saying what is degraded: GPU readings come
# from nvidia-smi only (no NVML), cpu_pct is null; the rest is read from /proc. It reaches the
# machine as one quoted `sh -c` argument (tui/core/probe/loader.py), so nothing is installed.
LC_ALL=C
export LC_ALL
once=0 interval="" run_root="" smi_timeout=5 tail_bytes=65536 max_lines=5000 nlogs=0
LOG_CAP=4194304
D8='[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]' D6='[0-9][0-9][0-9][0-9][0-9][0-9]'
IDGLOB="$D8-$D6-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]"
while [ $# -gt 0 ]; do
	case $1 in
	--once) once=1 ;;
	--interval=*) interval=${1#*=} ;;
	--run-root=*) run_root=${1#*=} ;;
	--smi-timeout=*) smi_timeout=${1#*=} ;;
	--tail-bytes=*) tail_bytes=${1#*=} ;;
	--max-lines=*) max_lines=${1#*=} ;;
	--log=*) nlogs=$((nlogs + 1)) && eval "log_$nlogs=\${1#*=}" ;;
	--interval | --run-root | --smi-timeout | --tail-bytes | --max-lines | --log)
		[ $# -ge 2 ] || break
		opt=${1#--} && v=$2 && shift 2 && set -- "--$opt=$v" "$@" && continue ;;
	*) ;; # "-", --no-nvml and anything newer: ignored
	esac
	shift
done
num() { case $1 in "" | *[!0-9]*) echo "$2" ;; *) echo "$1" ;; esac; }
tail_bytes=$(num "$tail_bytes" 65536)
max_lines=$(num "$max_lines" 5000)
case $interval in *[!0-9.]* | .) interval=2 ;; esac
case $smi_timeout in "" | *[!0-9.]* | .) smi_timeout=5 ;; esac
tmp=$(mktemp -d 2>/dev/null) || { tmp=/tmp/dflash-probe.$$ && mkdir -m 700 "$tmp"; } || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 0' HUP INT TERM PIPE
host=$(hostname 2>/dev/null || uname -n)
clk_tck=$(getconf CLK_TCK 2>/dev/null || echo 100)
page_kb=$(($(getconf PAGESIZE 2>/dev/null || echo 4096) / 1024))
FIELDS=index,uuid,pci.bus_id,utilization.gpu,utilization.memory,memory.used,memory.total
FIELDS=$FIELDS,memory.reserved,temperature.gpu,power.draw,power.limit,clocks.sm,clocks.mem
FIELDS=$FIELDS,pstate,clocks_event_reasons.active,ecc.errors.uncorrected.volatile.total,name
SAFE_FIELDS=index,uuid,utilization.gpu,memory.used,memory.total,name
fields=$FIELDS
samples=0 ntails=0 drops=0 smi_note=""

smi() {
	if command -v timeout >/dev/null 2>&1; then
		timeout "$smi_timeout" nvidia-smi "$@"
	else
		nvidia-smi "$@"
	fi
}

gpus() { # F fields / G rows / A compute apps / T telemetry source and error
	if ! command -v nvidia-smi >/dev/null 2>&1; then
		echo "T none no NVML and no nvidia-smi on PATH" && return
	fi
	while :; do # every retry swaps in an old field name or shrinks the list, as probe.py does
		smi --query-gpu="$fields" --format=csv,noheader,nounits >"$tmp/smi" 2>"$tmp/smierr"
		rc=$?
		[ $rc = 0 ] && break
		[ $rc = 124 ] && echo "T none nvidia-smi did not answer within ${smi_timeout}s" && return
		bad=$(sed -n "s/.*Field \"\([^\"]*\)\" is not a valid field.*/\1/p" "$tmp/smi" "$tmp/smierr")
		drop_field "$(echo "$bad" | head -n 1)" && continue
		echo "T none nvidia-smi failed (exit $rc): $(why_line "$tmp/smi" "$tmp/smierr")"
		return
	done
	[ -n "$smi_note" ] && echo "T $smi_note"
	echo "T nvidia-smi"
	echo "F $fields"
	sed "s/^/G /" "$tmp/smi"
	smi --query-compute-apps=pid,used_memory,gpu_uuid,process_name \
		--format=csv,noheader,nounits >"$tmp/apps" 2>"$tmp/smierr" ||
		echo "E nvidia-smi --query-compute-apps failed: $(why_line "$tmp/apps" "$tmp/smierr")"
	sed "s/^/A /" "$tmp/apps"
}

why_line() { # FILE...: the line that says why a tool failed (as gpu.py's why_line)
	awk '{ sub(/[ \t\r]+$/, "") }
	!NF { next }
	{ t = $0; sub(/^[ \t]+/, "", t); anything = t }
	/^[ \t]/ || /^Traceback \(most recent call last\):/ { next }
	/^During handling of the above exception/ || /^The above exception was the direct cause/ { next }
	{ last = $0 }
	tolower($0) ~ /error|fail|not found|unable|cannot|can.t|couldn.t|denied|no such|mismatch|timed out/ { why = $0 }
	END { o = why; if (o == "") o = last; if (o == "") o = anything; if (o == "") o = "no output"
		print substr(o, 1, 200) }' "$@" | tr -d "\000"
}

drop_field() { # adapt $fields to a rejected field $1; false when nothing is left to try
	[ -n "$1" ] || return 1
	if [ "$1" = clocks_event_reasons.active ] && [ "$fields" != "$SAFE_FIELDS" ]; then
		fields=$(echo "$fields" | sed s/clocks_event_reasons/clocks_throttle_reasons/) && return 0
	fi
	drops=$((drops + 1))
	case ",$SAFE_FIELDS," in *",$1,"*) safe=1 ;; *) safe=0 ;; esac
	case ",$fields," in *",$1,"*) there=1 ;; *) there=0 ;; esac
	if [ $there = 1 ] && [ $safe = 0 ] && [ $drops -le 2 ]; then
		fields=$(echo ",$fields," | sed "s/,$(echo "$1" | sed "s/[.]/[.]/g"),/,/; s/^,//; s/,\$//")
	elif [ "$fields" != "$SAFE_FIELDS" ]; then
		fields=$SAFE_FIELDS
	else
		return 1
	fi
	smi_note="nvidia-smi rejected field '$1': using $fields"
}

procs() { # S stat / C cmdline / N Uid and NSpid lines / W passwd: all from /proc, no ps
	cat /proc/[0-9]*/stat 2>/dev/null | sed "s/^/S /"
	grep -a -H -s "" /proc/[0-9]*/cmdline | tr "\000" " " | sed "s/^/C /"
	grep -H -s -e "^Uid:" -e "^NSpid:" /proc/[0-9]*/status | sed "s/^/N /"
	sed "s/^/W /" /etc/passwd 2>/dev/null
}

expand_home() { # $1 -> EH: a leading ~, $HOME or ${HOME} is the home dir, as control.sh reads it
	EH=$1
	# (some container execs set no HOME: ask the password database, as control.sh does)
	[ -n "${HOME:-}" ] || HOME=$(awk -F: -v u="$(id -u)" '$3 == u { print $6; exit }' /etc/passwd)
	case $EH in
	"~" | "\$HOME" | "\${HOME}") EH=$HOME ;;
	"~/"* | "\$HOME/"* | "\${HOME}/"*) EH=$HOME/${EH#*/} ;;
	esac
}

machine() { # M /proc/meminfo and vmstat numbers / DK exists frsize blocks bavail files ffree path
	awk '$1 ~ /^(MemTotal|MemAvailable|SwapTotal|SwapFree):$/ { print "M", $1, $2 }' /proc/meminfo
	awk '$1 == "oom_kill" { print "M", $1, $2 }' /proc/vmstat
	expand_home "$run_root" && d=$EH
	[ -n "$d" ] || return 0
	ex=0 && [ -e "$d" ] && ex=1
	while [ -n "$d" ] && [ ! -e "$d" ]; do # the nearest existing parent, as machine.py's disk
		up=${d%/*} && [ "$up" = "$d" ] && up=""
		d=$up
	done
	# GNU and BusyBox stat -f print statvfs' numbers; else df's kB (no inodes)
	st=$(stat -f -c "%S %b %a %c %d" "${d:-/}" 2>/dev/null) ||
		st=$(df -Pk "${d:-/}" 2>/dev/null | awk 'NR == 2 { print 1024, $2, $4, "-", "-" }')
	echo "DK $ex ${st:-- - - - -} $EH"
}

first_line() { [ -r "$1" ] && head -n 1 "$1" | tr -d "\000"; }

run_dir() { # R key value / RC command lines / RE launch_error lines / RP earlier pgid
	expand_home "$run_root" && root=$EH
	[ -n "$root" ] && [ -d "$root" ] || return 0
	# SV: supervisor.json's text, SP: the run's last step event line; both sent as JSON
	# strings (awk cannot check JSON): Snapshot.from_dict parses them, a bad one is an error.
	[ -f "$root/supervisor.json" ] && { head -c 65536 "$root/supervisor.json" |
		tr -d "\000\r\n" | sed "s/^/SV /" && echo; }
	latest="" earlier=""
	for d in "$root"/$IDGLOB; do # run ids as control.sh makes them, oldest first
		[ -d "$d" ] || continue
		[ -n "$latest" ] && earlier="$earlier $latest"
		latest=$d
	done
	[ -n "$latest" ] || return 0
	echo "R id ${latest##*/}"
	echo "R dir $latest"
	echo "R pid $(first_line "$latest/pid")"
	echo "R started_at $(first_line "$latest/started_at")"
	# the directory's age without a pid file: a launch in progress or abandoned (rundir.abandoned)
	[ -f "$latest/pid" ] || echo "R born $(stat -c %Y "$latest" 2>/dev/null)"
	echo "R exit $(first_line "$latest/exit")"
	echo "R kill_requested $(first_line "$latest/kill_requested")"
	[ -f "$latest/command" ] && head -c 65536 "$latest/command" | tr -d "\000" | sed "s/^/RC /"
	[ -f "$latest/launch_error" ] && { echo "RE" && head -c 65536 "$latest/launch_error" |
		tr -d "\000" | sed "s/^/RE /"; }
	for d in $earlier; do echo "RP $(first_line "$d/pid")"; done
	[ -f "$latest/events.jsonl" ] && tail -c 65536 "$latest/events.jsonl" |
		grep '"event": *"step"' | tail -n 1 | tr -d "\000\r" | sed "s/^/SP /"
	run_log=$latest/output.log
}

tail_state() { # find or add the tail state of path $1: sets k, off, ino
	k=1
	while [ $k -le $ntails ]; do
		eval "p=\$tail_path_$k"
		[ "$p" = "$1" ] && eval "off=\$tail_off_$k ino=\$tail_ino_$k" && return
		k=$((k + 1))
	done
	ntails=$k
	eval "tail_path_$k=\$1"
	off=0 ino=""
	[ $samples = 0 ] && off=-1 # first sample: only the last tail_bytes
}

tail_log() { # $1 path, $2 is_run (0|1), $3 index: LP path / LM meta / LL lines
	tail_state "$1"
	expand_home "$1" && f=$EH
	echo "LP $3 $1"
	if [ ! -e "$f" ]; then
		[ "$off" = -1 ] && off=0
		[ -n "$ino" ] && ino=gone
		eval "tail_off_$k=\$off tail_ino_$k=\$ino"
		echo "LM $3 0 - - 0 0 $2" && return
	fi
	if [ ! -f "$f" ] || [ ! -r "$f" ]; then
		echo "LE $3 not a readable regular file" && echo "LM $3 1 - - 0 0 $2" && return
	fi
	size=$(($(wc -c <"$f")))
	now_ino=$(ls -Lid "$f" 2>/dev/null | awk "{print \$1}")
	mtime=$(date -r "$f" +%s 2>/dev/null || echo -)
	trunc=0 skipped=0 cut=0
	if [ -n "$ino" ] && { [ "$ino" != "$now_ino" ] || [ "$size" -lt "$off" ]; }; then
		trunc=1 off=0
	fi
	start=$off
	if [ "$start" = -1 ]; then start=$((size - tail_bytes)) && [ $start -gt 0 ] && cut=1; fi
	[ $start -lt 0 ] && start=0
	if [ $((size - start)) -gt $LOG_CAP ]; then
		skipped=$((size - LOG_CAP - start)) start=$((size - LOG_CAP)) cut=1
	fi
	from=$start
	[ $cut = 1 ] && from=$((start - 1))
	tail -c +$((from + 1)) "$f" 2>/dev/null | head -c $((size - from)) | tr -d "\000" >"$tmp/chunk"
	got=$(($(wc -c <"$tmp/chunk")))
	[ $cut = 1 ] && sed 1d "$tmp/chunk" >"$tmp/chunk2" && mv "$tmp/chunk2" "$tmp/chunk"
	partial=0
	if [ -s "$tmp/chunk" ] && [ "$(tail -c 1 "$tmp/chunk" | od -An -c | tr -d " ")" != "\n" ]; then
		partial=$(($(tail -n 1 "$tmp/chunk" | wc -c)))
	fi
	off=$((from + got - partial))
	[ $cut = 1 ] && [ ! -s "$tmp/chunk" ] && off=$((from + got))
	eval "tail_off_$k=\$off tail_ino_$k=\$now_ino"
	echo "LM $3 1 $size $mtime $trunc $skipped $2"
	head -c $(($(wc -c <"$tmp/chunk") - partial)) "$tmp/chunk" | tail -n "$max_lines" |
		sed "s/^/LL $3 /"
}

logs() {
	i=0 seen="
"
	set --
	[ -n "$run_log" ] && set -- "$run_log"
	j=1
	while [ $j -le $nlogs ]; do eval "set -- \"\$@\" \"\$log_$j\"" && j=$((j + 1)); done
	for p in "$@"; do
		case $seen in *"
$p
"*) continue ;; esac
		seen="$seen$p
"
		is_run=0
		[ $i = 0 ] && [ -n "$run_log" ] && is_run=1
		tail_log "$p" $is_run $i
		i=$((i + 1))
	done
}

# The formatter: tagged lines in, one JSON object out. Strings come through ENVIRON, never -v.
FORMAT='
function joinx(s, re, rep,   a, n, i, out) {
	n = split(s, a, re); out = a[1]
	for (i = 2; i <= n; i++) out = out rep a[i]
	return out
}
function esc(s,   out, i, c, n) {
	s = joinx(s, "[\\\\]", "\\\\"); s = joinx(s, "\"", "\\\"")
	s = joinx(s, "\t", "\\t"); s = joinx(s, "\r", "\\r")
	if (s ~ /[\001-\037]/) {
		out = ""; n = length(s)
		for (i = 1; i <= n; i++) {
			c = substr(s, i, 1)
			out = out ((c in ORD) ? sprintf("\\u%04x", ORD[c]) : c)
		}
		s = out
	}
	return "\"" s "\""
}
function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t\r]+$/, "", s); return s }
function isnum(v) { return v ~ /^-?[0-9]+(\.[0-9]+)?$/ }
function hex(v,   i, n, d) {
	n = 0; v = tolower(substr(v, 3))
	for (i = 1; i <= length(v); i++) { d = index("0123456789abcdef", substr(v, i, 1)) - 1; n = n * 16 + d }
	return sprintf("%.0f", n)
}
function conv(v, kind, what) {
	v = trim(v); sub(/ (MiB|MHz|%|W)$/, "", v)
	if (v == "" || v == "N/A" || v ~ /^\[.*\]$/) return "null"
	if (kind == "str") return esc(v)
	if (kind == "hex" && v ~ /^0[xX][0-9a-fA-F]+$/) return hex(v)
	if (!isnum(v)) { err("nvidia-smi: unreadable " what " " v); return "null" }
	return kind == "float" ? v : sprintf("%d", v)
}
function err(s) { if (nerr < 50) ERRS[++nerr] = esc(s) }
function csv(line, n, out,   i, k) {
	for (i = 1; i < n; i++) {
		k = index(line, ","); if (!k) return 0
		out[i] = substr(line, 1, k - 1); line = substr(line, k + 1)
	}
	out[n] = line
	return 1
}
function gpu(line,   v, i, o, key, val) {
	if (!csv(line, nf, v)) { err("nvidia-smi line malformed: " substr(line, 1, 80)); return }
	for (i = 1; i <= nkeys; i++) val[KEYS[i]] = "null"
	for (i = 1; i <= nf; i++) if ((key = FKEY[FLD[i]]) != "") val[key] = conv(v[i], FKIND[FLD[i]], FLD[i])
	if (val["index"] !~ /^[0-9]+$/) { err("nvidia-smi line malformed: no GPU index in " substr(line, 1, 80)); return }
	o = ""
	for (i = 1; i <= nkeys; i++) o = o (i == 1 ? "" : ", ") "\"" KEYS[i] "\": " val[KEYS[i]]
	GPUS[++ngpu] = "{" o "}"
}
function app(line,   v, pid) {
	if (line ~ /^No running/ || trim(line) == "") return
	if (!csv(line, 4, v)) { err("nvidia-smi compute-apps line malformed: " substr(line, 1, 80)); return }
	pid = conv(v[1], "int", "pid")
	if (pid == "null") return
	APPS[++napp] = "{\"pid\": " pid ", \"gpu_uuid\": " conv(v[3], "str") ", \"used_mib\": " \
		conv(v[2], "int", "used_memory") ", \"name\": " esc(trim(v[4])) "}"
}
function stat(line,   i, j, pid, comm, f, n) {
	i = index(line, "("); j = length(line)
	while (j > i && substr(line, j, 1) != ")") j--
	if (i < 2 || j <= i) return
	pid = trim(substr(line, 1, i - 1)); comm = substr(line, i + 1, j - i - 1)
	n = split(substr(line, j + 1), f, " ")
	if (n < 22 || pid !~ /^[0-9]+$/ || int(f[7] / 2097152) % 2 == 1) return
	PIDS[++nproc] = pid; COMM[pid] = comm
	ROW[pid] = "\"pid\": " pid ", \"ppid\": " f[2] ", \"pgid\": " f[3] ", \"sid\": " f[4] \
		", \"state\": " esc(f[1]) ", \"start_ticks\": " f[20] ", \"rss_kb\": " f[22] * pagekb
}
function cmdline(line,   p) {
	if (match(line, /^\/proc\/[0-9]+\/cmdline:/)) {
		p = substr(line, 7, RLENGTH - 15); ARGS[p] = substr(line, RLENGTH + 1); lastcmd = p
	} else if (lastcmd != "") ARGS[lastcmd] = ARGS[lastcmd] "\n" line  # an argument with a newline
}
function status(line,   p, a, n, i, o) {
	p = line; sub(/^\/proc\//, "", p); sub(/\/.*/, "", p)
	if (line ~ /^[^:]*:Uid:/) { sub(/^[^:]*:Uid:/, "", line); split(trim(line), a, /[ \t]+/); UID[p] = a[2]; return }
	sub(/^[^:]*:NSpid:/, "", line); n = split(line, a, /[ \t]+/); o = ""
	for (i = 1; i <= n; i++) if (a[i] ~ /^[0-9]+$/) o = o (o == "" ? "" : ", ") a[i]
	NS[p] = o
}
function user(p,   u) {
	if (!(p in UID)) return "?"
	u = UID[p]
	return (u in UNAME) ? UNAME[u] : u
}
function command(p,   c) {
	c = substr(ARGS[p], 1, 8192); sub(/^[ \t\n]+/, "", c); sub(/[ \t\n]+$/, "", c)
	if (index(c, "# dflash-tui degraded probe,")) return "sh (dflash-tui shell probe)"
	return c == "" ? "[" COMM[p] "]" : c
}
function runnum(v, re, what) {
	if (v == "") return "null"
	if (v !~ re) { err("run " RUN["id"] ": malformed " what " file: " v); return "null" }
	return v + 0 == int(v + 0) ? sprintf("%d", v) : v
}
function runjson(   a, n, o, e, r, i, INT, NUM) {
	if (!("id" in RUN)) return "null"
	INT = "^-?[0-9]+$"; NUM = "^-?[0-9]+(\\.[0-9]+)?$"
	n = split(RUN["pid"], a, " ")
	o = "{\"id\": " esc(RUN["id"]) ", \"dir\": " esc(RUN["dir"])
	o = o ", \"command\": " (hascmd ? esc(cmd) : "null")
	o = o ", \"pid\": " runnum(a[1], INT, "pid") ", \"pgid\": " runnum(a[2], INT, "pid")
	o = o ", \"start_ticks\": " runnum(a[3], INT, "pid")
	o = o ", \"started_at\": " runnum(RUN["started_at"], NUM, "started_at")
	o = o ", \"born\": " runnum(RUN["born"], INT, "born")
	n = split(RUN["exit"], a, " ")
	o = o ", \"exit_code\": " runnum(a[1], INT, "exit") ", \"ended_at\": " runnum(a[2], NUM, "exit")
	gsub(/^[ \t\n]+|[ \t\n]+$/, "", lerr)
	if (haserr && lerr == "") lerr = "launch failed (empty launch_error file)"
	o = o ", \"launch_error\": " (haserr ? esc(lerr) : "null")
	o = o ", \"kill_requested_at\": " runnum(RUN["kill_requested"], NUM, "kill_requested")
	o = o ", \"log_path\": " esc(RUN["dir"] "/output.log") ", \"events_path\": " esc(RUN["dir"] "/events.jsonl")
	e = ""; r = ""
	for (i = nearly > 50 ? nearly - 49 : 1; i <= nearly; i++) {
		e = e (e == "" ? "" : ", ") EARLY[i]
		r = r (r == "" ? "" : ", ") "[" EARLY[i] ", " ETICKS[i] "]"
	}
	return o ", \"earlier_pgids\": [" e "], \"earlier_runs\": [" r "]}"
}
function logjson(i,   m, o, j, l) {
	split(LM[i], m, " ")
	o = "{\"path\": " esc(LPATH[i]) ", \"exists\": " (m[1] == 1 ? "true" : "false")
	o = o ", \"size\": " (m[2] == "-" ? "null" : m[2]) ", \"mtime\": " (m[3] ~ /^[0-9]+$/ ? m[3] : "null")
	l = ""
	for (j = 1; j <= NL[i]; j++) l = l (j == 1 ? "" : ", ") esc(LINES[i, j])
	o = o ", \"lines\": [" l "], \"truncated\": " (m[4] == 1 ? "true" : "false")
	o = o ", \"skipped_bytes\": " (m[5] == "" ? 0 : m[5]) ", \"error\": " (i in LERR ? esc(LERR[i]) : "null")
	o = o ", \"is_run_log\": " (m[6] == 1 ? "true" : "false")
	return o ", \"gaps\": [], \"resume\": null, \"followed\": null}" # (no resume: a tail again)
}
function mnum(k) { return (k in MACH) ? MACH[k] : "null" }
function disk(   f, n, p, o, i) {
	if (DK == "") return ""
	n = split(DK, f, " "); p = DK
	for (i = 1; i <= 6; i++) sub(/^[^ ]+ /, "", p)
	for (i = 2; i <= 6; i++) if (f[i] !~ /^[0-9]+$/) f[i] = "null"
	o = "{\"what\": \"run_root\", \"path\": " esc(p) ", \"exists\": " (f[1] == 1 ? "true" : "false")
	if (f[2] == "null" || f[3] == "null") return o ", \"error\": \"statvfs unreadable\"}"
	o = o ", \"total_bytes\": " sprintf("%.0f", f[2] * f[3]) ", \"free_bytes\": " sprintf("%.0f", f[2] * f[4])
	return o ", \"total_inodes\": " (f[5] > 0 ? f[5] : "null") ", \"free_inodes\": " (f[5] > 0 ? f[6] : "null") "}"
}
function machinejson() {
	return "{\"mem_total_kb\": " mnum("MemTotal:") ", \"mem_available_kb\": " mnum("MemAvailable:") \
		", \"swap_total_kb\": " mnum("SwapTotal:") ", \"swap_free_kb\": " mnum("SwapFree:") \
		", \"oom_kill\": " mnum("oom_kill") ", \"disks\": [" disk() "], \"checkpoint\": null" \
		", \"kernel_log\": null, \"nvml\": null}"
}
function list(A, n,   i, o) {
	o = ""
	for (i = 1; i <= n; i++) o = o (i == 1 ? "" : ", ") A[i]
	return "[" o "]"
}
BEGIN {
	for (i = 1; i < 32; i++) ORD[sprintf("%c", i)] = i
	split("index:index:int uuid:uuid:str pci.bus_id:bus_id:str utilization.gpu:util:int " \
		"utilization.memory:mem_util:int memory.used:mem_used_mib:int memory.total:mem_total_mib:int " \
		"memory.reserved:mem_reserved_mib:int temperature.gpu:temp_c:int power.draw:power_w:float " \
		"power.limit:power_limit_w:float clocks.sm:sm_clock_mhz:int clocks.mem:mem_clock_mhz:int " \
		"pstate:pstate:str clocks_event_reasons.active:throttle_reasons:hex " \
		"clocks_throttle_reasons.active:throttle_reasons:hex " \
		"ecc.errors.uncorrected.volatile.total:ecc_uncorrected:int name:name:str", spec, " ")
	for (i = 1; i in spec; i++) {
		split(spec[i], kv, ":"); FKEY[kv[1]] = kv[2]; FKIND[kv[1]] = kv[3]
		if (!(kv[2] in SEEN)) { SEEN[kv[2]] = 1; KEYS[++nkeys] = kv[2] }
	}
	pagekb = ENVIRON["DFLASH_PAGE_KB"] + 0; source = "none"; telerr = "null"; boot = "null"
	err(ENVIRON["DFLASH_DEGRADED"])
}
{ tag = $1; rest = substr($0, length(tag) + 2) }
tag == "T" { if (rest == "nvidia-smi") source = "nvidia-smi"; else if (rest ~ /^none /) telerr = esc(substr(rest, 6)); else telerr = esc(rest); next }
tag == "F" { nf = split(rest, FLD, ","); next }
tag == "G" { gpu(rest); next }
tag == "A" { app(rest); next }
tag == "S" { stat(rest); next }
tag == "C" { cmdline(rest); next }
tag == "N" { status(rest); next }
tag == "W" { split(rest, a, ":"); if (a[3] ~ /^[0-9]+$/ && !(a[3] in UNAME)) UNAME[a[3]] = a[1]; next }
tag == "M" { if ($3 ~ /^[0-9]+$/) MACH[$2] = $3; next }
tag == "DK" { DK = rest; next }
tag == "B" { if (rest ~ /^[0-9]+$/) boot = rest; next }
tag == "E" { err(rest); next }
tag == "R" { k = $2; RUN[k] = substr(rest, length(k) + 2); next }
tag == "SV" { SV = rest; hassv = 1; next }
tag == "SP" { SP = rest; hassp = 1; next }
tag == "RC" { cmd = hascmd ? cmd "\n" rest : rest; hascmd = 1; next }
tag == "RE" { if (haserr) lerr = lerr (lerr == "" ? "" : "\n") rest; haserr = 1; next }
tag == "RP" { split(rest, a, " "); if (a[2] ~ /^[0-9]+$/ && a[2] > 0) { EARLY[++nearly] = a[2]; ETICKS[nearly] = (a[3] ~ /^[0-9]+$/ ? a[3] : "null") }; next }
tag == "LP" { i = $2 + 1; LPATH[i] = substr(rest, length($2) + 2); if (i > nlog) nlog = i; next }
tag == "LM" { LM[$2 + 1] = substr(rest, length($2) + 2); next }
tag == "LE" { LERR[$2 + 1] = substr(rest, length($2) + 2); next }
tag == "LL" { i = $2 + 1; l = substr(rest, length($2) + 2); sub(/\r$/, "", l); LINES[i, ++NL[i]] = l; next }
END {
	for (i = 1; i <= nproc; i++) {
		p = PIDS[i]
		c = command(p)
		PROCS[i] = "{" ROW[p] ", \"cpu_pct\": null, \"user\": " esc(user(p)) \
			", \"cmd\": " esc(c) ", \"nspid\": [" NS[p] "]}"
	}
	for (i = 1; i <= nlog; i++) LOGS[i] = logjson(i)
	printf "{\"format\": 1, \"time\": %s, \"host\": %s, \"probe_mode\": \"shell\", ", \
		ENVIRON["DFLASH_NOW"], esc(ENVIRON["DFLASH_HOST"])
	printf "\"clk_tck\": %d, \"boot_time\": %s, ", ENVIRON["DFLASH_CLK_TCK"], boot
	printf "\"telemetry\": {\"source\": \"%s\", \"error\": %s, \"elapsed_ms\": null}, ", \
		ngpu ? source : "none", telerr
	printf "\"gpus\": %s, \"gpu_procs\": %s, ", list(GPUS, ngpu), list(APPS, napp)
	printf "\"procs\": %s, \"run\": %s, \"logs\": %s, ", list(PROCS, nproc), runjson(), list(LOGS, nlog)
	printf "\"supervisor\": %s, ", hassv ? esc(SV) : "null"
	printf "\"last_step\": %s, ", hassp ? esc(SP) : "null"
	printf "\"machine\": %s, \"workers\": null, ", machinejson()
	printf "\"errors\": %s}\n", list(ERRS, nerr)
}'

sample() {
	run_log=""
	DFLASH_NOW=$(date +%s) DFLASH_HOST=$host DFLASH_CLK_TCK=$clk_tck DFLASH_PAGE_KB=$page_kb
	DFLASH_DEGRADED="degraded probe (shell): ${DFLASH_PROBE_DEGRADED:-python3 not used} on $host;"
	DFLASH_DEGRADED="$DFLASH_DEGRADED GPU readings from nvidia-smi only (no NVML), no CPU %"
	export DFLASH_NOW DFLASH_HOST DFLASH_CLK_TCK DFLASH_PAGE_KB DFLASH_DEGRADED
	{
		gpus
		procs
		sed -n "s/^btime /B /p" /proc/stat 2>/dev/null
		run_dir
		logs
		machine
	} >"$tmp/sample" 2>/dev/null
	awk "$FORMAT" "$tmp/sample"
	samples=$((samples + 1))
}

while :; do
	sample || exit 1
	[ -n "$interval" ] && [ $once = 0 ] || exit 0
	sleep "$interval"
done
