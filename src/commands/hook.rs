//! `git simm install-hook`: the pre-commit hook, installed atomically.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::Status;
use crate::cli::InstallHookArgs;

/// The hook `install-hook` writes.
pub const PRE_COMMIT_HOOK: &str = include_str!("../../git-hooks/pre-commit");

pub(super) fn install_hook(
    cwd: &Path,
    args: &InstallHookArgs,
    out: &mut impl Write,
) -> Result<Status> {
    let repo = super::settings::discover(cwd)?;
    let dir = repo.hooks_dir();
    let path = dir.join("pre-commit");
    let replaced = match std::fs::read(&path) {
        Ok(existing) if existing == PRE_COMMIT_HOOK.as_bytes() => {
            make_executable(&path)?;
            writeln!(
                out,
                "git-simm's pre-commit hook is already installed in {}",
                path.display()
            )?;
            return Ok(Status::Success);
        }
        Ok(_) if !args.force => bail!(
            "a different pre-commit hook exists at {}; not overwriting it \
             (use --force to replace it, or call `git-simm check --staged` from it)",
            path.display()
        ),
        Ok(existing) => Some(existing),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(e).with_context(|| format!("cannot read {}", path.display()));
        }
    };
    // `--force` over someone's hook: theirs is kept beside it first.
    let backup = match &replaced {
        Some(existing) => Some(back_up(&path, existing)?),
        None => None,
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Write beside it and rename, so a failed write never leaves half a
    // hook; the temporary file is deleted if anything fails before.
    let mut builder = tempfile::Builder::new();
    builder.prefix(".pre-commit.git-simm.").suffix(".tmp");
    // A plain file's mode (0666 less the umask), made executable below.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder
        .tempfile_in(&dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.write_all(PRE_COMMIT_HOOK.as_bytes())
        .and_then(|()| tmp.flush())
        .with_context(|| format!("cannot write {}", tmp.path().display()))?;
    make_executable(tmp.path())?;
    tmp.persist(&path)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot write {}", path.display()))?;
    if let Some(backup) = backup {
        writeln!(
            out,
            "kept the previous pre-commit hook as {}",
            backup.display()
        )?;
    }
    writeln!(
        out,
        "installed git-simm's pre-commit hook in {}",
        path.display()
    )?;
    out.flush()?;
    Ok(Status::Success)
}

/// Copy the hook at `path` (whose content is `existing`) to
/// `pre-commit.simm-backup` beside it, or `pre-commit.simm-backup.<n>` if
/// a different backup is there already; an identical backup is reused.
/// The copy keeps the hook's mode, so it can be run from git-simm's or
/// put back.
fn back_up(path: &Path, existing: &[u8]) -> Result<PathBuf> {
    let base = path.with_file_name("pre-commit.simm-backup");
    for n in 0u32.. {
        let candidate = if n == 0 {
            base.clone()
        } else {
            base.with_file_name(format!("pre-commit.simm-backup.{n}"))
        };
        match std::fs::read(&candidate) {
            Ok(kept) if kept == existing => return Ok(candidate),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::copy(path, &candidate).with_context(|| {
                    format!(
                        "cannot keep the previous hook as {}; not replacing it",
                        candidate.display()
                    )
                })?;
                return Ok(candidate);
            }
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read {}", candidate.display()));
            }
        }
    }
    bail!("no free name for a backup of {}", path.display())
}

#[cfg(unix)]
pub(super) fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut perms = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .permissions();
    perms.set_mode(perms.mode() | 0o755);
    std::fs::set_permissions(path, perms)
        .with_context(|| format!("cannot make {} executable", path.display()))
}

#[cfg(not(unix))]
pub(super) fn make_executable(_: &Path) -> Result<()> {
    Ok(())
}
