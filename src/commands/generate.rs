//! `git simm completions` and `git simm manpage`.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

use super::Status;
use crate::cli::{CompletionsArgs, ManpageArgs};

pub(super) fn completions(args: &CompletionsArgs, out: &mut impl Write) -> Result<Status> {
    crate::cli::generate::completions(args.shell, out)?;
    out.flush()?;
    Ok(Status::Success)
}

pub(super) fn manpage(cwd: &Path, args: &ManpageArgs, out: &mut impl Write) -> Result<Status> {
    match &args.dir {
        Some(dir) => {
            crate::cli::generate::man_pages(&cwd.join(dir))
                .with_context(|| format!("cannot write man pages to {}", dir.display()))?;
        }
        None => crate::cli::generate::man_page(out)?,
    }
    out.flush()?;
    Ok(Status::Success)
}
