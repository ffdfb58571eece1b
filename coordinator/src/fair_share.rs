//! How the farm's workers are shared among users.
//!
//! Each user has a share (a weight, 1 unless an admin set it).
//! Whenever the publisher has room for more jobs, it gives each next slot to the user
//! with pending jobs whose published-and-unanswered jobs, per unit of share, are
//! fewest ([`apportion`]); within a user, their tournament of highest priority first,
//! then the oldest. So while several users have work waiting, each holds a number of
//! the farm's slots in proportion to their share, and matches of equal length finish
//! at rates in that proportion; a user alone gets every slot. One user's million-job
//! round robin delays another's SPRT by at most the jobs already published, which the
//! publisher keeps short (its `queue_ahead`).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A user with pending jobs, as the publisher sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimant {
    /// Whose.
    pub owner: String,
    /// Their weight, at least 1 (0 is taken as 1).
    pub share: u32,
    /// Their jobs published and unanswered.
    pub running: u64,
    /// Their jobs waiting to be published.
    pub pending: u64,
}

/// A claimant's place in line: the one with the least slots per share goes next.
#[derive(Debug, PartialEq, Eq)]
struct Turn {
    holding: u64,
    share: u64,
    index: usize,
}

impl Ord for Turn {
    fn cmp(&self, other: &Self) -> Ordering {
        // The next slot goes to whoever would hold least per unit of share, counting
        // half of it (Sainte-Laguë): (2 holding + 1) / share, compared without division
        // (a max-heap, so reversed). Counting nothing of it would favour small shares,
        // all of it large ones. Ties: the one listed first, so the order is deterministic.
        let mine = u128::from(2 * self.holding + 1) * u128::from(other.share);
        let theirs = u128::from(2 * other.holding + 1) * u128::from(self.share);
        theirs.cmp(&mine).then_with(|| other.index.cmp(&self.index))
    }
}

impl PartialOrd for Turn {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// How many of `room` new slots each claimant gets, in their order: slot by slot to
/// whoever holds the fewest per unit of share (counting what they were just given, and
/// half the slot at stake), never more than one has pending. The total is `room`, or everything pending if less.
pub fn apportion(claimants: &[Claimant], room: u64) -> Vec<u64> {
    let mut given = vec![0u64; claimants.len()];
    let mut line: BinaryHeap<Turn> = claimants
        .iter()
        .enumerate()
        .filter(|(_, claimant)| claimant.pending > 0)
        .map(|(index, claimant)| Turn { holding: claimant.running, share: u64::from(claimant.share.max(1)), index })
        .collect();
    let mut left = room;
    while left > 0 {
        let Some(mut turn) = line.pop() else { break };
        given[turn.index] += 1;
        left -= 1;
        turn.holding += 1;
        if given[turn.index] < claimants[turn.index].pending {
            line.push(turn);
        }
    }
    given
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claimant(owner: &str, share: u32, running: u64, pending: u64) -> Claimant {
        Claimant { owner: owner.to_owned(), share, running, pending }
    }

    #[test]
    fn slots_follow_the_shares() {
        let claimants = [claimant("a", 1, 0, 1000), claimant("b", 3, 0, 1000)];
        assert_eq!(apportion(&claimants, 40), [10, 30]);
        // Equal shares, one already holding more: the other catches up first.
        let claimants = [claimant("a", 1, 10, 1000), claimant("b", 1, 0, 1000)];
        assert_eq!(apportion(&claimants, 14), [2, 12]);
    }

    #[test]
    fn nobody_gets_more_than_they_have_pending_and_the_rest_goes_to_the_others() {
        let claimants = [claimant("sprt", 1, 0, 3), claimant("round-robin", 1, 0, 1_000_000)];
        assert_eq!(apportion(&claimants, 100), [3, 97]);
        let claimants = [claimant("a", 1, 0, 2), claimant("b", 5, 0, 1)];
        assert_eq!(apportion(&claimants, 100), [2, 1]);
        assert_eq!(apportion(&[claimant("idle", 1, 5, 0)], 10), [0]);
        assert_eq!(apportion(&[], 10), Vec::<u64>::new());
    }

    #[test]
    fn over_many_rounds_each_holds_slots_in_proportion() {
        // A farm of 60 slots, jobs answered oldest first: the shares hold 1:2:3.
        let mut claimants =
            vec![claimant("a", 1, 0, u64::MAX), claimant("b", 2, 0, u64::MAX), claimant("c", 3, 0, u64::MAX)];
        let mut published: Vec<usize> = Vec::new();
        let mut answered = 0;
        let mut finished = [0u64; 3];
        for _ in 0..1000 {
            let room = 60 - claimants.iter().map(|c| c.running).sum::<u64>();
            for (index, count) in apportion(&claimants, room).into_iter().enumerate() {
                claimants[index].running += count;
                published.extend(std::iter::repeat_n(index, count as usize));
            }
            // Five jobs end a round, in the order they were published.
            for &index in &published[answered..answered + 5] {
                claimants[index].running -= 1;
                finished[index] += 1;
            }
            answered += 5;
        }
        let total: u64 = finished.iter().sum();
        for (index, share) in [1.0, 2.0, 3.0].into_iter().enumerate() {
            let fraction = finished[index] as f64 / total as f64;
            assert!((fraction - share / 6.0).abs() < 0.01, "{index}: {fraction} of {finished:?}");
        }
    }

    #[test]
    fn a_zero_share_counts_as_one() {
        assert_eq!(apportion(&[claimant("a", 0, 0, 10), claimant("b", 1, 0, 10)], 4), [2, 2]);
    }
}
