# Helpers shared by the bench scripts (sourced, not run): load average,
# nanosecond clock and elapsed seconds, so every script reports time and
# machine load the same way.
loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?"; }
now() { date +%s%N; }
secs_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'; }

# use_workdir NAME: make $workdir usable: the directory given (created if
# need be, made absolute), or a new one under /tmp named after the script,
# removed on exit unless $keep is 1. Needs the caller's die().
use_workdir() {
  if [[ -z $workdir ]]; then
    workdir=$(mktemp -d "/tmp/$1.XXXXXX")
    ((keep)) || trap 'rm -rf "$workdir"' EXIT
  else
    mkdir -p "$workdir" || die "cannot create --workdir $workdir"
    workdir=$(cd "$workdir" && pwd)
  fi
}
