//! git's `-M<n>`, `-C<n>` and `-B<n>` numbers, in [`MAX_SCORE`] units.

use super::MAX_SCORE;

/// Parse the number of `-M<n>`, `-C<n>` or `-B<n>` the way git does, into
/// [`MAX_SCORE`] units.
///
/// The digits are a fraction whose denominator is the power of ten of their
/// count unless a `%` ends them: `5` and `50` are 50%, but `100` is 10%;
/// `0.5` is 50% and `.5%` is 0.5%; `90%` is 90%. Digits after the fifth are
/// ignored and values of one and above give [`MAX_SCORE`]. The empty string
/// (and `0`) gives 0, which git takes to mean "use the default"
/// ([`DEFAULT_MIN_SCORE`](super::DEFAULT_MIN_SCORE)): `git diff -M0` is `git diff -M`. Callers should
/// do the same.
///
/// Note that git skips inexact detection entirely at [`MAX_SCORE`] (`-M100%`
/// finds exact renames only), even though [`score`](super::score()) can reach it for
/// different contents.
///
/// # Errors
///
/// [`ScoreParseError::Trailing`] if anything follows the number that git would
/// not consume (a second `.`, a sign, letters, text after `%`); git rejects
/// such an argument to `-M`.
pub fn parse_rename_score(s: &str) -> Result<u32, ScoreParseError> {
    let bytes = s.as_bytes();
    let mut num: u64 = 0;
    let mut scale: u64 = 1;
    let mut dot = false;
    let mut pos = 0;
    while let Some(&ch) = bytes.get(pos) {
        match ch {
            b'.' if !dot => {
                scale = 1;
                dot = true;
            }
            b'%' => {
                scale = if dot { scale * 100 } else { 100 };
                pos += 1;
                break;
            }
            b'0'..=b'9' => {
                // git stops accumulating once five digits are in; the rest
                // are consumed but carry no weight.
                if scale < 100_000 {
                    scale *= 10;
                    num = num * 10 + u64::from(ch - b'0');
                }
            }
            _ => break,
        }
        pos += 1;
    }
    if pos < bytes.len() {
        return Err(ScoreParseError::Trailing {
            input: s.to_owned(),
            rest: s[pos..].to_owned(),
        });
    }
    Ok(if num >= scale {
        MAX_SCORE
    } else {
        // num < scale <= 10^7 (a dotted value may end with `%`), so this fits.
        (u64::from(MAX_SCORE) * num / scale) as u32
    })
}

/// The error returned by [`parse_rename_score()`].
#[derive(Debug, thiserror::Error)]
pub enum ScoreParseError {
    /// Characters after the number that git would not accept.
    #[error("invalid similarity score {input:?}: unexpected {rest:?} after the number")]
    Trailing {
        /// The whole argument as given.
        input: String,
        /// The part that was not understood.
        rest: String,
    },
}
