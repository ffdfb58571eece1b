use rand::{RngExt, SeedableRng};
fn main() {
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let x: u32 = r.random_range(0..4);
    let _ = x;
    let mut v = [1, 2, 3];
    use rand::seq::SliceRandom;
    v.shuffle(&mut r);
}
