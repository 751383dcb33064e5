//! Inputs for the stable fuzzer: a small deterministic generator and
//! mutations of valid seeds, byte-level and JSON-aware. No coverage
//! guidance (that needs a nightly toolchain for cargo-fuzz); the seeds
//! start every input close to something the code accepts, so mutations
//! reach past the first parser.

use serde_json::{Value, json};

/// splitmix64: deterministic per seed, so any failure replays exactly.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub(crate) fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Values that break parsers and arithmetic more often than random ones.
fn interesting(rng: &mut Rng) -> Value {
    match rng.below(16) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(-1),
        3 => json!(u64::MAX),
        4 => json!(i64::MIN),
        5 => json!(1e308),
        6 => json!(""),
        7 => json!("x".repeat(rng.below(70_000))),
        8 => json!("\u{0}\u{202e}\u{fffd}é𝄞"),
        9 => json!([]),
        10 => json!({}),
        11 => json!("2026-07-28"),
        12 => json!("tools/call"),
        13 => json!({"action": "accept", "content": {}}),
        14 => nested(rng.below(200)),
        _ => json!(rng.next() as i64),
    }
}

fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(0), |inner, _| json!([inner]))
}

/// A structural change somewhere in `value`.
pub(crate) fn mutate_json(rng: &mut Rng, value: &mut Value) {
    match value {
        Value::Object(map) if !map.is_empty() && !rng.chance(4) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = rng.pick(&keys).clone();
            match rng.below(4) {
                0 => {
                    map.remove(&key);
                }
                1 => {
                    map.insert(key, interesting(rng));
                }
                _ => mutate_json(rng, map.get_mut(&key).expect("present")),
            }
        }
        Value::Array(items) if !items.is_empty() && !rng.chance(4) => {
            let at = rng.below(items.len());
            mutate_json(rng, &mut items[at]);
        }
        Value::Object(map) => {
            let key = rng.pick(&["_meta", "params", "arguments", "requestState", "inputResponses", "name", "id", "method", "x"]);
            map.insert((*key).to_owned(), interesting(rng));
        }
        _ => *value = interesting(rng),
    }
}

/// Byte-level damage: flips, truncation, insertion, duplication.
pub(crate) fn mutate_bytes(rng: &mut Rng, bytes: &mut Vec<u8>) {
    for _ in 0..=rng.below(4) {
        match rng.below(5) {
            0 if !bytes.is_empty() => {
                let at = rng.below(bytes.len());
                bytes[at] ^= 1 << rng.below(8);
            }
            1 if !bytes.is_empty() => bytes.truncate(rng.below(bytes.len())),
            2 => {
                let at = rng.below(bytes.len() + 1);
                bytes.insert(at, *rng.pick(b"{}[]\",:\\0 \x00\xff\xc3"));
            }
            3 if !bytes.is_empty() => {
                let at = rng.below(bytes.len());
                let run = bytes[at..].iter().take(rng.below(64) + 1).copied().collect::<Vec<u8>>();
                bytes.splice(at..at, run);
            }
            _ => bytes.push(rng.next() as u8),
        }
    }
}

/// Text damage that stays valid UTF-8 (for tokens and handles).
pub(crate) fn mutate_text(rng: &mut Rng, text: &str) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..=rng.below(3) {
        match rng.below(5) {
            0 if !chars.is_empty() => {
                let at = rng.below(chars.len());
                chars[at] = *rng.pick(&['A', 'z', '0', '-', '_', '.', '=', '+', '/', ' ', 'é', '\u{0}']);
            }
            1 if !chars.is_empty() => chars.truncate(rng.below(chars.len())),
            2 => {
                let at = rng.below(chars.len() + 1);
                chars.insert(at, *rng.pick(&['A', '_', '.', '=', '~']));
            }
            3 if !chars.is_empty() => {
                let at = rng.below(chars.len());
                chars.remove(at);
            }
            _ => chars.extend(std::iter::repeat_n('A', rng.below(2_000))),
        }
    }
    chars.into_iter().collect()
}
