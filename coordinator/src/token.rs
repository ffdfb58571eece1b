//! How strong a bearer token must be before the API accepts writes with it.
//!
//! The farm cannot know how a token was made, so it estimates: a token of `n`
//! characters drawn from an alphabet of `k` (the smallest of hex, decimal, lower or upper
//! case with digits, base64 and printable ASCII that holds all its characters) has at most
//! `n * log2(k)` bits. That estimate must reach [`MIN_TOKEN_BITS`]. A token that repeats
//! itself (`abcabcabc...`) or leans on few characters (less than
//! [`MIN_BITS_PER_CHARACTER`] of Shannon entropy per character) is refused whatever its
//! length, and so is any value the project's own files show as an example.
//!
//! `openssl rand -hex 16` (32 hex characters, 128 bits) passes; so does anything made by
//! a proper random generator of at least 128 bits. The one check serves every token the
//! API will accept: the operator's today, per-user tokens when the farm issues them.

/// The least estimated strength of a token, in bits.
pub const MIN_TOKEN_BITS: f64 = 128.0;

/// The least Shannon entropy per character a token may have, in bits: random hex of 32
/// characters has about 3.6; `aaaaaaaabbbbbbbb...` has 1.
pub const MIN_BITS_PER_CHARACTER: f64 = 2.5;

/// A token the API refuses to be guarded by, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WeakToken {
    /// No token at all.
    #[error("no token is set")]
    Missing,
    /// A value from the documentation or the deploy files.
    #[error("the token is an example value from the documentation")]
    Example,
    /// Too few characters for its alphabet.
    #[error(
        "the token has about {bits:.0} bits ({length} characters from an alphabet of {alphabet}); at least \
         {MIN_TOKEN_BITS} are needed: make one with `openssl rand -hex 24`"
    )]
    TooShort {
        /// The estimate.
        bits: f64,
        /// Its length in characters.
        length: usize,
        /// The size of the smallest alphabet that holds it.
        alphabet: u32,
    },
    /// The token repeats itself or uses few distinct characters.
    #[error(
        "the token is patterned (it repeats itself or uses few distinct characters): make one with `openssl rand -hex 24`"
    )]
    Patterned,
}

/// `Ok` when `token` is strong enough to guard the API's writes.
pub fn check_strength(token: &str) -> Result<(), WeakToken> {
    let token = token.trim();
    if token.is_empty() {
        return Err(WeakToken::Missing);
    }
    if farm_runtime::secrets::example_word(token).is_some() {
        return Err(WeakToken::Example);
    }
    let length = token.chars().count();
    let alphabet = alphabet_size(token);
    let bits = length as f64 * f64::from(alphabet).log2();
    if bits < MIN_TOKEN_BITS {
        return Err(WeakToken::TooShort { bits, length, alphabet });
    }
    if repeats_itself(token) || bits_per_character(token) < MIN_BITS_PER_CHARACTER {
        return Err(WeakToken::Patterned);
    }
    Ok(())
}

/// The size of the smallest of the usual token alphabets that holds every character
/// of `token`.
fn alphabet_size(token: &str) -> u32 {
    let all = |test: fn(char) -> bool| token.chars().all(test);
    if all(|c| c.is_ascii_digit()) {
        10
    } else if all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        || all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase())
    {
        16
    } else if all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        || all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        36
    } else if all(|c| c.is_ascii_alphanumeric() || "-_+/=".contains(c)) {
        64
    } else {
        95
    }
}

/// Whether `token` is a shorter text written out again and again.
fn repeats_itself(token: &str) -> bool {
    let bytes = token.as_bytes();
    (1..=bytes.len() / 2)
        .any(|period| bytes.len().is_multiple_of(period) && bytes.chunks(period).all(|chunk| chunk == &bytes[..period]))
}

/// The Shannon entropy of `token`'s characters, per character, in bits.
fn bits_per_character(token: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for character in token.chars() {
        *counts.entry(character).or_insert(0u32) += 1;
    }
    let length = token.chars().count() as f64;
    counts
        .values()
        .map(|&count| {
            let share = f64::from(count) / length;
            -share * share.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_tokens_of_128_bits_and_more_pass() {
        // As `openssl rand -hex 16`, `-hex 24` and `-base64 24` print them.
        for token in [
            "9f2c4e1a7b3d8065c1e4f9a2b7d30e58",
            "3b8f1e6c9a2d4f7051e8c3b6a9d2f40718e5c2b9a6d3f071",
            "q7Zr+1bXk9Ws2LmPa4Tn0cVhYe3Ju6Gd",
        ] {
            assert_eq!(check_strength(token), Ok(()), "{token}");
        }
    }

    #[test]
    fn short_example_and_patterned_tokens_are_refused_saying_why() {
        assert_eq!(check_strength("  "), Err(WeakToken::Missing));
        assert_eq!(check_strength("CHANGE-ME"), Err(WeakToken::Example));
        // deploy/k8s/secret.yaml's placeholder: long and varied, but public.
        let secret_yaml = include_str!("../../deploy/k8s/secret.yaml");
        let placeholder = secret_yaml
            .lines()
            .find_map(|line| line.trim().strip_prefix("FARM_API_TOKEN: "))
            .expect("the example Secret sets FARM_API_TOKEN");
        assert_eq!(check_strength(placeholder), Err(WeakToken::Example), "{placeholder}");
        assert!(matches!(check_strength("0123456789abcdef"), Err(WeakToken::TooShort { .. })));
        let short = check_strength("9f2c4e1a7b3d8065c1e4f9a2b7d30e5").expect_err("31 hex characters: 124 bits");
        assert!(matches!(short, WeakToken::TooShort { length: 31, alphabet: 16, .. }), "{short:?}");
        assert!(short.to_string().contains("openssl rand -hex 24"), "{short}");
        let digits = check_strength("1234567890123456789012345678901234").expect_err("34 digits: 113 bits");
        assert!(matches!(digits, WeakToken::TooShort { alphabet: 10, .. }), "{digits:?}");
        assert_eq!(check_strength(&"abc123".repeat(8)), Err(WeakToken::Patterned));
        assert_eq!(check_strength(&format!("{}{}", "a".repeat(30), "bcdef")), Err(WeakToken::Patterned));
    }
}
