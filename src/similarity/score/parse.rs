//! git's `-M<n>`, `-C<n>` and `-B<n>` numbers, and the thresholds of
//! git-simm's own options, in [`MAX_SCORE`] units.

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

/// Parse a threshold of git-simm's own options (`--threshold`,
/// `--rename-threshold`, `--copy-threshold`, `--find-splits=<n>`, the
/// `simm.*Threshold` settings) into [`MAX_SCORE`] units: a percentage,
/// with or without `%` (`80`, `80%`, `92.5%`; `100` is 100%), or a
/// fraction written with a dot (`0.8`, `1.0`). git's rule for `-M<n>`
/// ([`parse_rename_score`]), where the digits are a fraction (`100` is
/// 10%, `101` 10.1%), belongs to `-M`, `-C` and `-B`, where git users
/// expect it; here it would silently turn `100` into 10%.
///
/// # Errors
///
/// [`ThresholdError::NotANumber`] for anything but digits with at most
/// one dot and an optional `%`; [`ThresholdError::OutOfRange`] above
/// 100% (`101`, `100.5%`, `1.5`).
pub fn parse_threshold(s: &str) -> Result<u32, ThresholdError> {
    let (number, percent) = match s.strip_suffix('%') {
        Some(n) => (n, true),
        None => (s, false),
    };
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if whole.len() + frac.len() == 0 || !digits(whole) || !digits(frac) {
        return Err(ThresholdError::NotANumber {
            input: s.to_owned(),
        });
    }
    // A dot without `%` is a fraction; digits alone are a percentage.
    let per_hundred = percent || !number.contains('.');
    // At most 9 digits after the dot count: finer than one unit anyway.
    let frac = &frac[..frac.len().min(9)];
    let whole_value: u128 = whole.trim_start_matches('0').parse().unwrap_or(
        if whole.trim_start_matches('0').is_empty() {
            0
        } else {
            u128::MAX
        },
    );
    let scale = 10u128.pow(frac.len() as u32);
    let frac_value: u128 = frac.parse().unwrap_or(0);
    let value = whole_value.saturating_mul(scale).saturating_add(frac_value);
    let unit = if per_hundred { 100 * scale } else { scale };
    if value > unit {
        return Err(ThresholdError::OutOfRange {
            input: s.to_owned(),
        });
    }
    // value <= unit, so the result is at most MAX_SCORE.
    Ok((u128::from(MAX_SCORE) * value / unit) as u32)
}

/// The error returned by [`parse_threshold()`].
#[derive(Debug, thiserror::Error)]
pub enum ThresholdError {
    /// Not a percentage or a fraction.
    #[error("invalid threshold '{input}': give a percentage (80, 80%) or a fraction (0.8)")]
    NotANumber {
        /// The argument as given.
        input: String,
    },
    /// Above 100%.
    #[error("threshold '{input}' is out of range: give at most 100% (100, 100%, 1.0)")]
    OutOfRange {
        /// The argument as given.
        input: String,
    },
}
