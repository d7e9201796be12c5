# Helpers shared by the bench scripts (sourced, not run): load average,
# nanosecond clock and elapsed seconds, so every script reports time and
# machine load the same way.
loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?"; }
# The clock is bash's own (EPOCHREALTIME, microseconds): starting `date`
# for it added its own start-up, several milliseconds here, to every
# time taken, which skewed the ratios of runs of a few dozen.
now() { local t=${EPOCHREALTIME/[.,]/}; echo "${t}000"; }
secs_since() {
  local end
  end=$(now)
  awk -v a="$1" -v b="$end" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'
}

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

# pinned_git_env: a clean, pinned git environment: nothing from the
# caller's config or repository, fixed identities and dates, C locale, so
# the repositories a script builds are the same on every machine.
pinned_git_env() {
  unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY \
    GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_NAMESPACE GIT_CEILING_DIRECTORIES
  export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
  export GIT_AUTHOR_NAME=Bench GIT_AUTHOR_EMAIL=bench@example.com
  export GIT_COMMITTER_NAME=Bench GIT_COMMITTER_EMAIL=bench@example.com
  export GIT_AUTHOR_DATE="1700000000 +0000" GIT_COMMITTER_DATE="1700000000 +0000"
  export LC_ALL=C
}

# use_simm_binary NAME: build the release binary if $build is 1, check
# $simm_bin (default $here/target/release/git-simm), and copy it to
# $workdir/NAME as $simm, so a rebuild elsewhere during the run cannot swap
# it. Needs the caller's die(), $here and $workdir.
use_simm_binary() {
  if ((build)); then
    command -v cargo >/dev/null || die "cargo is not on PATH (or give --git-simm BIN / --no-build)"
    echo "building: cargo build --release" >&2
    cargo build --release --quiet --manifest-path "$here/Cargo.toml" || die "cargo build --release failed"
  fi
  [[ -n $simm_bin ]] || simm_bin=$here/target/release/git-simm
  [[ -x $simm_bin ]] || die "no git-simm binary at $simm_bin (run cargo build --release)"
  cp "$simm_bin" "$workdir/$1"
  simm=$workdir/$1
}
