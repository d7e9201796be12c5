//! `git simm install-hook`: the pre-commit hook, installed atomically.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use git_simm::repo::Repo;

use super::Status;
use crate::cli::InstallHookArgs;

/// The hook `install-hook` writes.
pub const PRE_COMMIT_HOOK: &str = include_str!("../../git-hooks/pre-commit");

pub(super) fn install_hook(
    cwd: &Path,
    args: &InstallHookArgs,
    out: &mut impl Write,
) -> Result<Status> {
    let repo = Repo::discover(cwd)?;
    let dir = repo.hooks_dir();
    let path = dir.join("pre-commit");
    match std::fs::read(&path) {
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
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(e).with_context(|| format!("cannot read {}", path.display()));
        }
    }
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
    writeln!(
        out,
        "installed git-simm's pre-commit hook in {}",
        path.display()
    )?;
    out.flush()?;
    Ok(Status::Success)
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
