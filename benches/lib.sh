# Helpers shared by the bench scripts (sourced, not run): load average,
# nanosecond clock and elapsed seconds, so every script reports time and
# machine load the same way.
loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?"; }
now() { date +%s%N; }
secs_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'; }
