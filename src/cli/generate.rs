//! Shell completions and man pages, generated from the clap definitions in
//! [`crate::cli`], so they can never disagree with what the binary parses.
//!
//! The man page matters more for a git subcommand than for most tools: git
//! turns `git simm --help` into `git help simm`, which runs `man git-simm`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::roff::{Inline, Roff, bold, italic, roman};

use crate::cli::Cli;

/// The name completions and man pages are generated for.
const BIN: &str = "git-simm";

/// Lets git's own bash completion complete `git simm ...`: for an external
/// command it calls `_git_simm` (loading a completion file named `git-simm`
/// first if needed), with `words`, `cword` and `__git_cmd_idx` describing
/// the whole `git ... simm ...` line. clap's `_git__simm` reads
/// `COMP_WORDS`/`COMP_CWORD` starting at the program name, so hand it the
/// words from `simm` on, with `simm` renamed to the program.
const BASH_GIT_SHIM: &str = r#"
# `git simm <TAB>`: git's bash completion calls _git_simm for the external
# command git-simm.
_git_simm() {
    local COMP_WORDS=(git-simm "${words[@]:__git_cmd_idx+1}")
    local COMP_CWORD=$((cword - __git_cmd_idx))
    _git__simm git-simm "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
}
"#;

/// Write the completion script for `shell`.
pub fn completions(shell: Shell, out: &mut impl Write) -> io::Result<()> {
    // clap_complete panics when its writer fails; generate into memory so a
    // closed pipe is an ordinary error.
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), BIN, &mut buf);
    if shell == Shell::Bash {
        // clap_complete spells a hyphenated program's subcommand states two
        // ways, `git__simm__subcmd__check` in its dispatch loop and
        // `git__subcmd__simm__subcmd__check` in the case arms, so no
        // subcommand's options would complete
        // (https://github.com/clap-rs/clap/issues/6421): spell the arms as
        // the loop does. A no-op once clap_complete is fixed.
        let script = String::from_utf8_lossy(&buf).replace("git__subcmd__simm", "git__simm");
        buf = script.into_bytes();
        buf.extend_from_slice(BASH_GIT_SHIM.as_bytes());
    }
    out.write_all(&buf)
}

/// Write git-simm(1).
pub fn man_page(out: &mut impl Write) -> io::Result<()> {
    render(&command(), None, out)
}

/// Write git-simm.1 and one git-simm-<command>.1 per visible subcommand
/// into `dir`, creating it if needed; returns the files written.
pub fn man_pages(dir: &Path) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let cmd = command();
    let mut written = Vec::new();
    let mut write = |cmd: &clap::Command, parent: Option<&str>| -> io::Result<()> {
        let path = dir.join(format!("{}.1", page_name(cmd)));
        let mut page = Vec::new();
        render(cmd, parent, &mut page)?;
        std::fs::write(&path, page)?;
        written.push(path);
        Ok(())
    };
    write(&cmd, None)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write(sub, Some(BIN))?;
    }
    Ok(written)
}

/// The command line as the pages describe it: built, so that subcommands
/// carry their `git-simm-<name>` page names, and without clap's `help`
/// subcommand, which has no page (`--help` is listed as an option).
fn command() -> clap::Command {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

fn page_name(cmd: &clap::Command) -> &str {
    cmd.get_display_name().unwrap_or_else(|| cmd.get_name())
}

/// One page: clap_mangen's, except that the text after the options
/// (output formats, configuration, examples) becomes a NOTES section set
/// without filling, since it is laid out in lines and columns that filling
/// would run together; a subcommand's page also points back to `parent`.
fn render(cmd: &clap::Command, parent: Option<&str>, out: &mut impl Write) -> io::Result<()> {
    let notes = cmd
        .get_after_long_help()
        .or_else(|| cmd.get_after_help())
        .map(|t| t.to_string());
    let bare = cmd
        .clone()
        .after_help(None::<&str>)
        .after_long_help(None::<&str>);
    let mut page = Vec::new();
    clap_mangen::Man::new(bare)
        .title(page_name(cmd).to_uppercase())
        .render(&mut page)?;
    let page = with_synopsis(page, cmd);

    let mut extra = Roff::new();
    if let Some(notes) = notes {
        extra.control("SH", ["NOTES"]).control("nf", []);
        for line in notes.lines() {
            extra.text([roman(line)]);
        }
        extra.control("fi", []);
    }
    if let Some(parent) = parent {
        extra
            .control("SH", ["SEE ALSO"])
            .text([roman(format!("{parent}(1), git-diff(1)"))]);
    }
    // Every rendering starts with the same preamble (it defines the
    // apostrophe string the text uses); the page has it already.
    let preamble = Roff::new().render();
    let extra = extra.render();
    let extra = extra.strip_prefix(&preamble).unwrap_or(&extra);
    // The extra sections go before VERSION, which ends clap_mangen's pages.
    let version = b"\n.SH VERSION";
    let at = page
        .windows(version.len())
        .position(|w| w == version)
        .map_or(page.len(), |i| i + 1);
    out.write_all(&page[..at])?;
    out.write_all(extra.as_bytes())?;
    out.write_all(&page[at..])
}

/// `page` with its synopsis line replaced by [`synopsis`]'s: clap_mangen's
/// leaves out option values and pads a short-only option (`[-C ]`, `[-z ]`).
fn with_synopsis(page: Vec<u8>, cmd: &clap::Command) -> Vec<u8> {
    let heading = b".SH SYNOPSIS\n";
    let Some(start) = page
        .windows(heading.len())
        .position(|w| w == heading)
        .map(|i| i + heading.len())
    else {
        return page;
    };
    let Some(len) = page[start..].iter().position(|&b| b == b'\n') else {
        return page;
    };
    let preamble = Roff::new().render();
    let line = Roff::new().text(synopsis(cmd)).render();
    let line = line.strip_prefix(&preamble).unwrap_or(&line);
    let mut out = page[..start].to_vec();
    out.extend_from_slice(line.trim_end_matches('\n').as_bytes());
    out.extend_from_slice(&page[start + len..]);
    out
}

/// The synopsis as git's pages write it: `git-simm [-C <path>]
/// [--no-cache] ... <command>`, options in clap_mangen's order, each with
/// its value (`[--order <order>]`), flags bare (`[-z]`).
fn synopsis(cmd: &clap::Command) -> Vec<Inline> {
    let name = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name());
    let mut line = vec![bold(name)];
    let mut opts: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_positional())
        .collect();
    opts.sort_by_key(|a| {
        let key = match (a.get_short(), a.get_long()) {
            (Some(c), _) => format!(
                "{}{}",
                c.to_ascii_lowercase(),
                u8::from(c.is_ascii_uppercase())
            ),
            (None, Some(l)) => l.to_owned(),
            (None, None) => a.get_id().to_string(),
        };
        (u8::from(a.is_required_set()), a.get_display_order(), key)
    });
    for a in opts {
        let (l, r) = if a.is_required_set() {
            ("<", ">")
        } else {
            ("[", "]")
        };
        line.push(roman(format!(" {l}")));
        match (a.get_short(), a.get_long()) {
            (Some(c), Some(long)) => {
                line.push(bold(format!("-{c}")));
                line.push(roman("|"));
                line.push(bold(format!("--{long}")));
            }
            (Some(c), None) => line.push(bold(format!("-{c}"))),
            (None, Some(long)) => line.push(bold(format!("--{long}"))),
            (None, None) => continue,
        }
        if a.get_action().takes_values() && a.get_num_args().is_some_and(|n| n.takes_values()) {
            let value = value_name(a);
            if a.get_num_args().is_some_and(|n| n.min_values() == 0) {
                // `-M[=<n>]`: the value is optional and attached.
                line.push(roman("[=<"));
                line.push(italic(value));
                line.push(roman(">]"));
            } else {
                line.push(roman(" <"));
                line.push(italic(value));
                line.push(roman(">"));
            }
        }
        line.push(roman(r));
    }
    for a in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let (l, r) = if a.is_required_set() {
            ("<", ">")
        } else {
            ("[", "]")
        };
        line.push(roman(format!(" {l}")));
        line.push(italic(value_name(a)));
        line.push(roman(r));
        if a.get_num_args().is_some_and(|n| n.max_values() > 1) {
            line.push(roman("..."));
        }
    }
    if cmd.has_subcommands() {
        line.push(roman(" <"));
        line.push(italic("command"));
        line.push(roman(">"));
    }
    line
}

fn value_name(a: &clap::Arg) -> String {
    a.get_value_names()
        .map(|v| v.join(" "))
        .unwrap_or_else(|| a.get_id().to_string())
}
