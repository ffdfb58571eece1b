/// Competition ranks ("1224") for `scores`, higher is better: equal scores share a
/// rank and the next rank skips the tied places.
pub fn ranks_by_score(scores: &[i64]) -> Vec<u32> {
    scores.iter().map(|score| 1 + scores.iter().filter(|other| *other > score).count() as u32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_share_a_rank_and_skip_the_next() {
        assert_eq!(ranks_by_score(&[10, 30, 10, 5]), vec![2, 1, 2, 4]);
        assert_eq!(ranks_by_score(&[0, 0]), vec![1, 1]);
        assert_eq!(ranks_by_score(&[]), Vec::<u32>::new());
    }
}
