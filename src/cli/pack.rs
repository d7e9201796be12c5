//! The options of `pack-order` and `repack`, their help, and the values
//! of `--order` and `--bases`.

use clap::Args;

use super::StoreArgs;

pub(super) const PACK_ORDER_HELP: &str = "\
Feed the output to git pack-objects, which must recompute deltas and use
name hash version 1 (git 2.49 and later have others):
  git simm pack-order | git pack-objects --no-reuse-delta --delta-base-offset \\
      [--name-hash-version=1] .git/objects/pack/pack
Commits and tags keep the names git gives them, in git's order; blobs and
trees get crafted 13-letter names whose hashes sort into the chosen order.
Blobs whose path has the -delta attribute keep their path (git leaves them
whole). Without <rev-list options>, lists what
`git repack -a` packs: every ref, the reflogs and the index.

In a partial clone nothing is fetched: without <rev-list options>, the
objects outside promisor packs are listed (what git repack -a puts in its
main pack there); with them, the objects that are present
(--missing=allow-promisor, unless you pass --missing or
--exclude-promisor-objects yourself).

Orders (--order):
  similarity  blobs grouped by path, newest first, or largest first where
              fingerprints say that keeps similar versions closer; groups
              chained so a file's history continues across renames and
              copies; trees grouped by path, largest first (default)
  path        the same without fingerprints: blobs newest first, no chains
  git         git's own order (a control: packs as git would)

Examples:
  git simm pack-order > order.txt
  git simm pack-order --keep-unreachable | git pack-objects --no-reuse-delta \\
      --delta-base-offset --window=10 --depth=50 /tmp/test-pack
  git simm pack-order v1.0..v2.0";

pub(super) const REPACK_HELP: &str = "\
Does what `git repack -a -d -f --keep-unreachable` does, with blobs in
similarity order: lists every object (reachable ones as git repack -a does,
then every unreachable local one, so nothing is lost), runs git
pack-objects into a temporary directory, verifies the new pack (checksums,
object count, every object id), installs it, and only then removes the old
packs, the multi-pack index and loose objects now packed. Killed at any
point, the repository still holds every object.

Refuses, changing nothing: shallow clones, .keep packs, a pack without its
index, a read-only object directory, a concurrent repack. In a partial
clone, promisor packs (what the promisor remote sent) are kept as they are,
.promisor files included, and only the other objects are repacked, as
git repack -a -d does for its main pack; nothing is fetched.
Objects borrowed from alternates are copied in, as git repack -a does.
A reachability bitmap is written where git would write one
(repack.writeBitmaps, else in bare repositories; -b forces it): a
multi-pack bitmap over the new pack, since git pack-objects cannot write a
pack bitmap for an explicit object list.

--window, --depth and --threads default to git's (pack.window, pack.depth,
pack.threads; else 10, 50 and one thread per core).

Examples:
  git simm repack
  git simm repack --window=20 --depth=50 --threads=2
  git simm repack --order=git     # git's own order, for comparison";

/// Arguments of `git-simm pack-order`.
#[derive(Debug, Args)]
pub struct PackOrderArgs {
    /// Also list every local object the walk does not reach (what
    /// `git repack -a -d --keep-unreachable` keeps).
    #[arg(long)]
    pub keep_unreachable: bool,

    /// How blobs and trees are ordered: similarity, path or git.
    #[arg(long, value_name = "order", default_value = "similarity", value_parser = order_parser())]
    pub order: git_simm::pack::order::Strategy,

    /// Options for `git rev-list --objects` (revisions, --all, ...).
    #[arg(
        value_name = "rev-list options",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub revs: Vec<std::ffi::OsString>,

    #[command(flatten)]
    pub store: StoreArgs,
}

/// Arguments of `git-simm repack`.
#[derive(Debug, Args)]
pub struct RepackArgs {
    /// Delta search window (git's --window).
    #[arg(long, value_name = "n")]
    pub window: Option<u32>,

    /// Maximum delta chain depth (git's --depth).
    #[arg(long, value_name = "n")]
    pub depth: Option<u32>,

    /// Threads for the delta search (git's --threads).
    #[arg(long, value_name = "n")]
    pub threads: Option<u32>,

    /// The order git's window sees blobs and trees in (with --bases=git,
    /// which this option implies): similarity (default), path or git.
    #[arg(long, value_name = "order", value_parser = order_parser())]
    pub order: Option<git_simm::pack::order::Strategy>,

    /// Who chooses delta bases: simm (default: git-simm chooses every base
    /// and writes the pack itself) or git (`git pack-objects`' window, fed
    /// the objects in --order).
    #[arg(long, value_name = "who", value_parser = bases_parser())]
    pub bases: Option<git_simm::pack::repack::Bases>,

    /// Write a reachability bitmap (a multi-pack one over the new pack).
    /// Default: repack.writeBitmaps, else only in bare repositories, as git.
    #[arg(long, short = 'b', overrides_with = "no_write_bitmap_index")]
    pub write_bitmap_index: bool,

    /// Do not write a bitmap, whatever repack.writeBitmaps says.
    #[arg(long)]
    pub no_write_bitmap_index: bool,

    /// No progress and no summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,

    #[command(flatten)]
    pub store: StoreArgs,
}

/// `--order`: one of [`Strategy::ALL`](git_simm::pack::order::Strategy::ALL)'s
/// names, given to clap as possible values so that completions offer them
/// and help lists them.
fn order_parser() -> impl clap::builder::TypedValueParser<Value = git_simm::pack::order::Strategy> {
    use clap::builder::TypedValueParser;
    use git_simm::pack::order::Strategy;
    clap::builder::PossibleValuesParser::new(Strategy::ALL.map(|(n, _)| n))
        .try_map(|s: String| Strategy::from_name(&s).ok_or_else(|| format!("unknown order '{s}'")))
}

/// `--bases`: one of [`Bases::ALL`](git_simm::pack::repack::Bases::ALL)'s
/// names, offered to completions and help like `--order`'s.
fn bases_parser() -> impl clap::builder::TypedValueParser<Value = git_simm::pack::repack::Bases> {
    use clap::builder::TypedValueParser;
    use git_simm::pack::repack::Bases;
    clap::builder::PossibleValuesParser::new(Bases::ALL.map(|(n, _)| n))
        .try_map(|s: String| Bases::from_name(&s).ok_or_else(|| format!("unknown bases '{s}'")))
}
