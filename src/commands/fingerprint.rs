//! `git simm fingerprint`: blobs of trees, single blobs, files on disk, or
//! every blob with `--all`.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use git_simm::output::write_quoted_path;
use git_simm::progress::Feedback;
use git_simm::repo::{Repo, RepoError};
use git_simm::similarity::compute;
use git_simm::similarity::fingerprint::{Fingerprint, Fingerprinter};
use git_simm::similarity::store::Store;
use gix::ObjectId;

use super::Status;
use super::settings::{flush_warnings, open_store};
use crate::cli::FingerprintArgs;

/// What one `fingerprint` argument named.
pub(super) enum Target {
    Tree(ObjectId),
    /// A blob, and the name it was given by (any bytes).
    Blob(ObjectId, Vec<u8>),
    Disk(PathBuf),
}

/// What `given` names: a revision or a path on disk, any bytes as git
/// takes them (named in messages as text).
pub(super) fn resolve_target(repo: Option<&Repo>, cwd: &Path, given: &OsStr) -> Result<Target> {
    let arg = given.to_string_lossy();
    if given.is_empty() {
        // git's words for an empty pathspec: `''` never means "all".
        bail!(
            "empty string is not a valid pathspec. please use . instead if you meant to match all paths"
        );
    }
    // As in git, a bare repository has no files to confuse with revisions
    // (its own `HEAD` file is not one).
    let bare = repo.is_some_and(|r| r.work_dir().is_none());
    let on_disk = !bare && cwd.join(given).symlink_metadata().is_ok();
    let object = match repo {
        Some(repo) => match repo.resolve_object(given.as_encoded_bytes()) {
            Ok(found) => Some(found),
            Err(RepoError::UnknownRevision { .. }) => None,
            Err(e) => return Err(e.into()),
        },
        None => None,
    };
    match (object, on_disk) {
        (Some(_), true) => bail!(
            "ambiguous argument '{arg}': both revision and filename\n\
             Use '--' to separate paths from revisions, like this:\n\
             'git-simm fingerprint [<revision>...] -- [<file>...]'"
        ),
        (Some((id, gix::object::Kind::Blob)), false) => {
            Ok(Target::Blob(id, given.as_encoded_bytes().to_vec()))
        }
        (Some((id, _)), false) => {
            let repo = repo.context("no repository")?;
            Ok(Target::Tree(
                repo.peel_to_tree(id, given.as_encoded_bytes())?,
            ))
        }
        (None, true) => Ok(Target::Disk(PathBuf::from(given))),
        (None, false) if repo.is_none() => bail!(
            "'{arg}' is not a file, and there is no repository here to look up a revision \
             (not a git repository (or any of the parent directories): {})",
            cwd.display()
        ),
        (None, false) => {
            bail!("ambiguous argument '{arg}': unknown revision or path not in the working tree.")
        }
    }
}

/// One output line of `fingerprint`.
pub(super) struct Line {
    fingerprint: Option<Fingerprint>,
    size: u64,
    name: Vec<u8>,
}

pub(super) fn fingerprint(
    cwd: &Path,
    no_cache: bool,
    args: &FingerprintArgs,
    feedback: &Feedback,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    // Plain files can be fingerprinted anywhere, like `git hash-object`;
    // revisions and --all need a repository.
    let repo = match Repo::discover(cwd) {
        Ok(r) => {
            super::settings::apply_output_config(&r)?;
            Some(r)
        }
        Err(e @ RepoError::NotARepository { .. }) => {
            if args.all || args.targets.iter().any(|t| !cwd.join(t).exists()) {
                return Err(e.into());
            }
            None
        }
        Err(e) => return Err(e.into()),
    };
    // Outside a repository only files are fingerprinted: the store, keyed
    // by blob id, is never asked.
    let mut store = match &repo {
        Some(r) => open_store(r, no_cache)?,
        None => Store::disabled(gix::hash::Kind::Sha1.len_in_bytes()),
    };
    if args.all {
        let repo = repo.as_ref().context("no repository")?;
        return fingerprint_all(repo, &mut store, args, feedback, out, err);
    }
    if args.targets.is_empty() && args.paths.is_empty() {
        bail!("nothing to fingerprint: name a tree-ish or a path, or use --all");
    }
    let mut targets = Vec::new();
    for t in &args.targets {
        targets.push(resolve_target(repo.as_ref(), cwd, t)?);
    }
    if args.paths.iter().any(|p| p.as_os_str().is_empty()) {
        bail!(
            "empty string is not a valid pathspec. please use . instead if you meant to match all paths"
        );
    }
    targets.extend(args.paths.iter().map(|p| Target::Disk(p.clone())));
    // Only blobs of the object database are signed: files on disk are
    // not, and the setting is read only when a revision names some.
    let signing = match &repo {
        Some(r) if targets.iter().any(|t| !matches!(t, Target::Disk(_))) => signing(r, args)?,
        _ => compute::Signing::Skip,
    };

    let files_on_disk = DiskFiles::new(repo.as_ref());
    for target in targets {
        let lines = match target {
            Target::Tree(tree) => {
                let repo = repo.as_ref().context("no repository")?;
                let entries = repo.tree_files(tree)?;
                let ids: Vec<ObjectId> = entries.iter().map(|e| e.id).collect();
                let prints = fingerprint_and_sign(repo, &mut store, &ids, signing, feedback)?;
                entries
                    .into_iter()
                    .zip(prints)
                    .map(|(e, p)| Line {
                        fingerprint: p.fingerprint,
                        size: p.size,
                        name: e.path,
                    })
                    .collect()
            }
            Target::Blob(id, name) => {
                let repo = repo.as_ref().context("no repository")?;
                let prints =
                    fingerprint_and_sign(repo, &mut store, &[id], signing, &feedback.silent())?;
                prints
                    .into_iter()
                    .map(|p| Line {
                        fingerprint: p.fingerprint,
                        size: p.size,
                        name: name.clone(),
                    })
                    .collect()
            }
            Target::Disk(path) => {
                let full = cwd.join(&path);
                let wanted = match &repo {
                    Some(r) if !args.no_exclude_standard && full.is_dir() => {
                        not_ignored(r, cwd, &path)?
                    }
                    _ => None,
                };
                disk_lines(&full, &path, wanted.as_ref(), &files_on_disk)?
            }
        };
        flush_warnings(&mut store, err);
        if !args.quiet {
            write_lines(&lines, args.nul, out)?;
        }
    }
    out.flush()?;
    Ok(Status::Success)
}

/// The fingerprints of `ids`, the blobs read signed in the same read,
/// and those fingerprinted before without a signature (by renames, or an
/// older git-simm) signed now, each read once: `fingerprint` fills the
/// store for every reader of it, `compare` and `export` included.
///
/// With `signing` [`compute::Signing::Skip`] (`--no-signatures`,
/// `simm.signatures=false`), fingerprints alone.
fn fingerprint_and_sign(
    repo: &Repo,
    store: &mut Store,
    ids: &[ObjectId],
    signing: compute::Signing,
    feedback: &Feedback,
) -> Result<Vec<git_simm::similarity::fingerprint::Sketch>, compute::ComputeError> {
    let (prints, read, _) =
        compute::fingerprint_blobs_with(repo, store, ids, feedback, signing, |_, _| ())?;
    if signing == compute::Signing::Skip {
        return Ok(prints);
    }
    // Every blob read above was signed in that read; only those whose
    // fingerprint the store had can lack a signature. Looking up the
    // others again would check the CRC of every record just written.
    // `read` holds distinct ids of `ids`: as many as `ids` means all of
    // them (a first run), and no search is needed.
    let rest: Vec<ObjectId> = if read.len() == ids.len() {
        Vec::new()
    } else {
        ids.iter()
            .filter(|id| read.binary_search_by(|(r, ())| r.cmp(id)).is_err())
            .copied()
            .collect()
    };
    if !rest.is_empty() {
        compute::fill_signatures(repo, store, &rest, feedback)?;
    }
    Ok(prints)
}

/// Whether `fingerprint` signs what it reads: `--no-signatures`, else
/// `simm.signatures` (true when unset).
fn signing(repo: &Repo, args: &FingerprintArgs) -> Result<compute::Signing> {
    let wanted = !args.no_signatures && repo.config_bool_strict("simm.signatures")?.unwrap_or(true);
    Ok(if wanted {
        compute::Signing::Sign
    } else {
        compute::Signing::Skip
    })
}

pub(super) fn fingerprint_all(
    repo: &Repo,
    store: &mut Store,
    args: &FingerprintArgs,
    feedback: &Feedback,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    let signing = signing(repo, args)?;
    let blobs = repo.all_blobs()?;
    let ids: Vec<ObjectId> = blobs.iter().map(|(id, _)| *id).collect();
    feedback.trace("fingerprint: blobs listed");
    if repo.is_partial() && !args.quiet {
        // Fetching every blob the clone was made without is `git backfill`'s
        // job, not this one's: say what is left out.
        writeln!(
            err,
            "note: partial clone (filter {}): fingerprinting the {} blobs present; nothing is fetched",
            repo.partial_clone_filter().unwrap_or("unknown"),
            ids.len()
        )?;
    }
    // Interrupted, what was computed is in the store already.
    let prints = fingerprint_and_sign(repo, store, &ids, signing, feedback)?;
    flush_warnings(store, err);
    if !args.quiet {
        let lines: Vec<Line> = ids
            .iter()
            .zip(prints)
            .map(|(id, p)| Line {
                fingerprint: p.fingerprint,
                size: p.size,
                name: id.to_string().into_bytes(),
            })
            .collect();
        write_lines(&lines, args.nul, out)?;
    }
    out.flush()?;
    Ok(Status::Success)
}

pub(super) fn write_lines(lines: &[Line], nul: bool, out: &mut impl Write) -> Result<()> {
    let mut buf = Vec::with_capacity(lines.len() * 100);
    for l in lines {
        let fp = l.fingerprint.unwrap_or_default();
        write!(buf, "{fp} {} ", l.size)?;
        if nul {
            buf.extend_from_slice(&l.name);
            buf.push(0);
        } else {
            write_quoted_path(&mut buf, &l.name)?;
            buf.push(b'\n');
        }
    }
    out.write_all(&buf)?;
    Ok(())
}

/// Fingerprint a file, or every file below a directory (skipping `.git`),
/// in path order. Symlinks are fingerprinted as git stores them: the target
/// path's bytes.
pub(super) fn disk_lines(
    path: &Path,
    shown: &Path,
    wanted: Option<&Wanted>,
    files_on_disk: &DiskFiles<'_>,
) -> Result<Vec<Line>> {
    // Named on its own, a FIFO, socket or device is an error: skipping it,
    // as a directory's walk does, would print nothing and succeed.
    let meta = std::fs::symlink_metadata(path)
        .with_context(|| format!("cannot read '{}'", shown.display()))?;
    let kind = meta.file_type();
    if !(kind.is_dir() || kind.is_file() || kind.is_symlink()) {
        bail!("'{}' is not a regular file", shown.display());
    }
    let mut files = Vec::new();
    collect_files(path, shown, wanted, &mut files)?;
    files.sort_by(|a, b| a.1.cmp(&b.1));
    let mut fpr = Fingerprinter::new();
    let mut lines = Vec::with_capacity(files.len());
    for (full, name) in files {
        let data = files_on_disk.read(&full)?;
        lines.push(Line {
            fingerprint: fpr.fingerprint(&data),
            size: data.len() as u64,
            name,
        });
    }
    Ok(lines)
}

/// The files below a directory git does not ignore, and the directories
/// that lead to them, as lexically normalized paths ([`normalized`]).
pub(super) struct Wanted {
    files: HashSet<PathBuf>,
    dirs: HashSet<PathBuf>,
}

/// `path` with `.` and `..` resolved lexically (as git resolves the
/// pathspecs it is given), so that the names git lists and the paths of
/// the walk compare equal.
pub(super) fn normalized(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// The files below `dir` (as given, relative to `cwd`) that `git ls-files
/// --cached --others --exclude-standard` lists: tracked files and
/// untracked ones no `.gitignore`, `.git/info/exclude` or
/// `core.excludesFile` pattern ignores. `None` when git cannot say (a
/// directory outside the work tree, a bare repository): then everything is
/// walked.
pub(super) fn not_ignored(repo: &Repo, cwd: &Path, dir: &Path) -> Result<Option<Wanted>> {
    if repo.work_dir().is_none() {
        return Ok(None);
    }
    let o = std::process::Command::new("git")
        .current_dir(cwd)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
            "--",
        ])
        .arg(dir)
        .output()
        .context("cannot run git ls-files")?;
    if !o.status.success() {
        return Ok(None);
    }
    let mut wanted = Wanted {
        files: HashSet::new(),
        dirs: HashSet::new(),
    };
    // git names the files from the current directory as the file system
    // resolves it, and resolves `dir` too (a symbolic link on the way
    // leads into the work tree); the walk goes through `dir` as given.
    let given = normalized(&cwd.join(dir));
    let resolved = given.canonicalize().ok();
    let real_cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned());
    for name in o.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let real = normalized(&real_cwd.join(path_from_bytes(name)));
        let file = match &resolved {
            Some(root) => match real.strip_prefix(root) {
                Ok(rel) if rel.as_os_str().is_empty() => given.clone(),
                Ok(rel) => given.join(rel),
                Err(_) => real,
            },
            None => real,
        };
        let mut parent = file.parent();
        while let Some(p) = parent {
            if !wanted.dirs.insert(p.to_owned()) {
                break;
            }
            parent = p.parent();
        }
        wanted.files.insert(file);
    }
    Ok(Some(wanted))
}

#[cfg(unix)]
fn path_from_bytes(b: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(b))
}

#[cfg(not(unix))]
fn path_from_bytes(b: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(b).into_owned())
}

pub(super) fn collect_files(
    path: &Path,
    shown: &Path,
    wanted: Option<&Wanted>,
    out: &mut Vec<(PathBuf, Vec<u8>)>,
) -> Result<()> {
    let meta = std::fs::symlink_metadata(path)
        .with_context(|| format!("cannot read '{}'", shown.display()))?;
    if meta.is_dir() {
        if wanted.is_some_and(|w| !w.dirs.contains(&normalized(path))) {
            return Ok(());
        }
        let mut children: Vec<_> = std::fs::read_dir(path)
            .with_context(|| format!("cannot read directory '{}'", shown.display()))?
            .collect::<std::io::Result<_>>()
            .with_context(|| format!("cannot read directory '{}'", shown.display()))?;
        children.sort_by_key(|c| c.file_name());
        for c in children {
            if c.file_name() == ".git" {
                continue;
            }
            collect_files(&c.path(), &shown.join(c.file_name()), wanted, out)?;
        }
    } else if (meta.is_file() || meta.file_type().is_symlink())
        && wanted.is_none_or(|w| w.files.contains(&normalized(path)))
    {
        out.push((path.to_owned(), path_bytes(shown)));
    }
    Ok(())
}

/// Files on disk read as `git add` would store them: a file of the work
/// tree of the repository at hand through its clean conversions (CRLF,
/// filters, `ident`: what `git hash-object <path>` hashes), a symbolic
/// link as its target, anything outside the work tree as it is.
pub(super) struct DiskFiles<'a> {
    repo: Option<&'a Repo>,
    /// The work tree's top, resolved; `None` without one.
    top: std::cell::OnceCell<Option<PathBuf>>,
    /// The conversions, made for the first file inside the work tree
    /// (they read the index).
    cleaner: std::cell::OnceCell<git_simm::repo::Cleaner<'a>>,
    /// Each directory's resolved path: a directory of a thousand files
    /// is resolved once.
    dirs: std::cell::RefCell<std::collections::HashMap<PathBuf, Option<PathBuf>>>,
}

impl<'a> DiskFiles<'a> {
    pub(super) fn new(repo: Option<&'a Repo>) -> Self {
        DiskFiles {
            repo,
            top: std::cell::OnceCell::new(),
            cleaner: std::cell::OnceCell::new(),
            dirs: Default::default(),
        }
    }

    pub(super) fn read(&self, path: &Path) -> Result<Vec<u8>> {
        let meta = std::fs::symlink_metadata(path)
            .with_context(|| format!("cannot read '{}'", path.display()))?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(path)
                .with_context(|| format!("cannot read link '{}'", path.display()))?;
            return Ok(path_bytes(&target));
        }
        let data =
            std::fs::read(path).with_context(|| format!("cannot read '{}'", path.display()))?;
        let (Some(repo), Some(rel)) = (self.repo, self.in_work_tree(path)) else {
            return Ok(data);
        };
        let cleaner = match self.cleaner.get() {
            Some(cleaner) => cleaner,
            None => {
                let made = repo.cleaner(super::settings::attr_tree(repo, None)?)?;
                self.cleaner.get_or_init(|| made)
            }
        };
        Ok(cleaner.clean_file(&rel, data)?)
    }

    /// `file`'s path from the top of the work tree, as git names work-tree
    /// paths; `None` outside it (or without one).
    fn in_work_tree(&self, file: &Path) -> Option<Vec<u8>> {
        let top = self
            .top
            .get_or_init(|| {
                self.repo
                    .and_then(|r| r.work_dir())
                    .and_then(|w| w.canonicalize().ok())
            })
            .as_ref()?;
        let parent = file.parent()?;
        let dir = self
            .dirs
            .borrow_mut()
            .entry(parent.to_owned())
            .or_insert_with(|| parent.canonicalize().ok())
            .clone()?;
        below(top, &dir, file.file_name()?)
    }
}

/// `file`'s path from `top` (resolved), as git names work-tree paths;
/// `None` outside it, or for a bare name (no directory to resolve).
pub(super) fn relative_to(top: &Path, file: &Path) -> Option<Vec<u8>> {
    let dir = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.canonicalize().ok()?,
        _ => return None,
    };
    below(top, &dir, file.file_name()?)
}

/// The path of `name` in `dir` from `top` (both resolved), with `/`
/// between names as git writes them; `None` when `dir` is not below
/// `top`.
fn below(top: &Path, dir: &Path, name: &OsStr) -> Option<Vec<u8>> {
    let rel = dir.strip_prefix(top).ok()?.join(name);
    let mut bytes = path_bytes(&rel);
    if cfg!(windows) {
        bytes
            .iter_mut()
            .filter(|b| **b == b'\\')
            .for_each(|b| *b = b'/');
    }
    Some(bytes)
}

#[cfg(unix)]
pub(super) fn path_bytes(p: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes().to_vec()
}

#[cfg(not(unix))]
pub(super) fn path_bytes(p: &Path) -> Vec<u8> {
    p.to_string_lossy().into_owned().into_bytes()
}
