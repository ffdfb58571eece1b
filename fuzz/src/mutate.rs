//! Mutations of an input: the byte-level ones every fuzzer has, the format's own
//! tokens, numbers at the edges of every range, and splices of two inputs.

/// A small, fast, seedable generator (xorshift64*): runs repeat from their seed.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15 | 1)
    }

    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: usize) -> usize {
        if bound == 0 { 0 } else { (self.bits() % bound as u64) as usize }
    }
}

/// Numbers that sit on the edge of some range: parsers go wrong there.
const EDGES: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "127",
    "128",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483649",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "1e400",
    "-1e400",
    "1e-400",
    "0.1",
    "NaN",
    "Infinity",
];

/// The largest input a mutation makes: parsers cap their own input, and a huge one
/// only slows the run.
pub const MAX_INPUT: usize = 64 * 1024;

/// Mutates `input` in place, one to four times; `dictionary` is the format's words,
/// `other` another input of the corpus to splice in.
pub fn mutate(input: &mut Vec<u8>, rng: &mut Rng, dictionary: &[&str], other: &[u8]) {
    for _ in 0..=rng.below(4) {
        mutate_once(input, rng, dictionary, other);
    }
    input.truncate(MAX_INPUT);
}

fn mutate_once(input: &mut Vec<u8>, rng: &mut Rng, dictionary: &[&str], other: &[u8]) {
    let at = rng.below(input.len() + 1);
    match rng.below(10) {
        0 if !input.is_empty() => {
            let at = rng.below(input.len());
            input[at] ^= 1 << rng.below(8);
        }
        1 if !input.is_empty() => {
            let at = rng.below(input.len());
            input[at] = rng.bits() as u8;
        }
        2 => {
            let bytes: Vec<u8> = (0..=rng.below(8)).map(|_| rng.bits() as u8).collect();
            input.splice(at..at, bytes);
        }
        3 if !input.is_empty() => {
            let end = (at + 1 + rng.below(16)).min(input.len());
            input.drain(at.min(end)..end);
        }
        4 if !input.is_empty() => {
            // A run repeated: long lines, deep nesting.
            let start = rng.below(input.len());
            let end = (start + 1 + rng.below(32)).min(input.len());
            let run = input[start..end].to_vec();
            for _ in 0..=rng.below(64) {
                input.splice(at..at, run.iter().copied());
            }
        }
        5 | 6 if !dictionary.is_empty() => {
            let word = dictionary[rng.below(dictionary.len())];
            input.splice(at..at, word.bytes());
        }
        7 => replace_number(input, rng),
        8 if !other.is_empty() => {
            let start = rng.below(other.len());
            let end = (start + 1 + rng.below(other.len() - start)).min(other.len());
            input.splice(at..at, other[start..end].iter().copied());
        }
        _ => input.truncate(at),
    }
}

/// Replaces a run of digits (or, with none, a random place) with an edge number.
fn replace_number(input: &mut Vec<u8>, rng: &mut Rng) {
    let edge = EDGES[rng.below(EDGES.len())].as_bytes();
    let digits: Vec<usize> = (0..input.len()).filter(|&index| input[index].is_ascii_digit()).collect();
    if digits.is_empty() {
        let at = rng.below(input.len() + 1);
        input.splice(at..at, edge.iter().copied());
        return;
    }
    let start = digits[rng.below(digits.len())];
    let mut end = start;
    while end < input.len() && (input[end].is_ascii_digit() || b".eE-+".contains(&input[end])) {
        end += 1;
    }
    input.splice(start..end, edge.iter().copied());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_repeat_from_their_seed_and_stay_within_the_size_cap() {
        let run = |seed| {
            let mut rng = Rng::new(seed);
            let mut input = b"{\"maxTurns\": 40}".to_vec();
            for _ in 0..2000 {
                mutate(&mut input, &mut rng, &["\"x\":"], b"other input");
                assert!(input.len() <= MAX_INPUT);
            }
            input
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    #[test]
    fn numbers_are_replaced_whole() {
        let mut rng = Rng::new(1);
        let mut input = b"a 12.5e3 b".to_vec();
        replace_number(&mut input, &mut rng);
        let text = String::from_utf8_lossy(&input).into_owned();
        assert!(text.starts_with("a ") && text.ends_with(" b") && !text.contains("12.5e3"), "{text}");
    }
}
