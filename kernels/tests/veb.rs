//! vEB tree: unit tests, a property test against a BTreeSet model, and a threaded
//! claim/release stress checked by the tree's own validator.
#![cfg(not(loom))]

use std::collections::BTreeSet;

use proptest::prelude::*;
use veballoc_kernels::atomic::Atom64;
use veballoc_kernels::veb::{Veb, VebLayout};

fn storage(universe: u64) -> (Vec<Atom64>, VebLayout) {
    let l = VebLayout::new(universe);
    ((0..l.total_words).map(|_| Atom64::new(0)).collect(), l)
}

#[test]
fn layout_levels() {
    assert_eq!(VebLayout::new(1).levels, 1);
    assert_eq!(VebLayout::new(64).levels, 1);
    assert_eq!(VebLayout::new(65).levels, 2);
    assert_eq!(VebLayout::new(4096).levels, 2);
    assert_eq!(VebLayout::new(4097).levels, 3);
    // One segment per 16 MiB of a 141 GiB card, and its class-0 block tree (256 per segment).
    let segs = (141u64 << 30) >> 24;
    assert_eq!(VebLayout::new(segs).levels, 3);
    assert_eq!(VebLayout::new(segs * 256).levels, 4);
}

#[test]
fn runs_within_a_window_do_not_cross_it() {
    let (w, l) = storage(1024);
    let t = Veb::new(&w, l);
    t.insert_range(253, 8); // 253..=260, across 256
    assert_eq!(t.claim_run_within(5, 256), Some(256));
    assert_eq!(t.claim_run_within(4, 256), None);
    assert_eq!(t.claim_run_within(3, 256), Some(253));
    assert_eq!(t.claim_run_within(300, 256), None);
    t.insert_range(253, 8);
    assert_eq!(t.claim_run(5), Some(253), "claim_run itself may cross");
}

#[test]
fn successor_and_claims() {
    let (w, l) = storage(10_000);
    let t = Veb::new(&w, l);
    assert_eq!(t.successor(0), None);
    for i in [5u64, 64, 4095, 4096, 9999] {
        assert!(t.insert(i));
        assert!(!t.insert(i));
    }
    assert_eq!(t.successor(0), Some(5));
    assert_eq!(t.successor(6), Some(64));
    assert_eq!(t.successor(65), Some(4095));
    assert_eq!(t.successor(4097), Some(9999));
    assert_eq!(t.successor(10_000), None);
    assert_eq!(t.claim_from(0), Some(5));
    assert_eq!(t.claim_from(0), Some(64));
    assert!(t.remove(4096));
    assert!(!t.remove(4096));
    assert_eq!(t.claim_from(0), Some(4095));
    assert_eq!(t.claim_from(0), Some(9999));
    assert_eq!(t.claim_from(0), None);
    assert_eq!(t.check(), Ok(0));
}

#[test]
fn runs() {
    let (w, l) = storage(1000);
    let t = Veb::new(&w, l);
    t.insert_range(0, 1000);
    assert_eq!(t.count(), 1000);
    assert!(t.remove(70));
    assert_eq!(t.claim_run(100), Some(71));
    assert_eq!(t.claim_run(70), Some(0));
    assert_eq!(t.claim_run(900), None);
    assert_eq!(t.claim_run(829), Some(171));
    assert_eq!(t.count(), 0);
    t.insert_range(100, 200);
    assert!(!t.remove_range_exact(99, 10), "99 is not free: nothing taken");
    assert_eq!(t.count(), 200);
    assert!(t.remove_range_exact(100, 200));
    assert_eq!(t.count(), 0);
    t.check().unwrap();
}

/// `free_before` counts the free indices right below `x`, down to the first taken one: a
/// word whose free run below `x` stops just above its bit 0 ends the count there, and the
/// free bits at the top of the word before do not join it (a count that ran on made
/// `fresh_run` take a head of blocks that is not free, and serve the run with a fresh
/// segment more, or null).
#[test]
fn free_before_stops_at_the_first_taken_index() {
    let (w, l) = storage(256);
    let t = Veb::new(&w, l);
    t.insert_range(60, 4); // 60..=63: the top of word 0
    t.insert_range(65, 63); // 65..=127: word 1 but its bit 0
    assert_eq!(t.free_before(128, 1000), 63);
    assert_eq!(t.free_before(128, 10), 10);
    assert_eq!(t.free_before(65, 1000), 0);
    assert_eq!(t.free_before(64, 1000), 4);
    assert!(t.insert(64));
    assert_eq!(t.free_before(128, 1000), 68, "one run across the word boundary");
    assert_eq!(t.free_before(0, 1000), 0);
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u64),
    Remove(u64),
    Claim(u64),
    ClaimRun(u64),
    InsertRange(u64, u64),
    RemoveRange(u64, u64),
    Succ(u64),
    FreeBefore(u64, u64),
}

fn op(universe: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..universe).prop_map(Op::Insert),
        (0..universe).prop_map(Op::Remove),
        (0..universe).prop_map(Op::Claim),
        (1..40u64).prop_map(Op::ClaimRun),
        (0..universe, 1..300u64).prop_map(move |(s, k)| Op::InsertRange(s, k.min(universe - s))),
        (0..universe, 1..300u64).prop_map(move |(s, k)| Op::RemoveRange(s, k.min(universe - s))),
        (0..universe + 5).prop_map(Op::Succ),
        (0..universe + 1, 1..200u64).prop_map(|(x, max)| Op::FreeBefore(x, max)),
    ]
}

proptest! {
    #[test]
    fn matches_btreeset(universe in 1u64..9000, ops in prop::collection::vec(op(9000), 1..200)) {
        let (w, l) = storage(universe);
        let t = Veb::new(&w, l);
        let mut m = BTreeSet::new();
        for o in ops {
            match o {
                Op::Insert(i) if i < universe => prop_assert_eq!(t.insert(i), m.insert(i)),
                Op::Remove(i) if i < universe => prop_assert_eq!(t.remove(i), m.remove(&i)),
                Op::Claim(x) => {
                    let want = m.range(x..).next().copied();
                    prop_assert_eq!(t.claim_from(x), want);
                    if let Some(v) = want { m.remove(&v); }
                }
                Op::ClaimRun(k) => {
                    let want = (0..universe).find(|&s| s + k <= universe && (s..s + k).all(|i| m.contains(&i)));
                    prop_assert_eq!(t.claim_run(k), want);
                    if let Some(s) = want { for i in s..s + k { m.remove(&i); } }
                }
                Op::InsertRange(s, k) if s + k <= universe => {
                    t.insert_range(s, k);
                    m.extend(s..s + k);
                }
                Op::RemoveRange(s, k) if s + k <= universe => {
                    let all = (s..s + k).all(|i| m.contains(&i));
                    prop_assert_eq!(t.remove_range_exact(s, k), all);
                    if all { for i in s..s + k { m.remove(&i); } }
                }
                Op::Succ(x) => prop_assert_eq!(t.successor(x), m.range(x..).next().copied()),
                Op::FreeBefore(x, max) if x <= universe => {
                    let run = (0..x).rev().take_while(|i| m.contains(i)).count() as u64;
                    prop_assert_eq!(t.free_before(x, max), run.min(max));
                }
                _ => {}
            }
            prop_assert_eq!(t.count(), m.len() as u64);
        }
        prop_assert!(t.check().is_ok());
    }
}

#[test]
fn threaded_claim_release() {
    const UNIVERSE: u64 = 5000;
    const THREADS: usize = 8;
    const ROUNDS: usize = 20_000;
    let (w, l) = storage(UNIVERSE);
    let t = Veb::new(&w, l);
    t.insert_range(0, UNIVERSE);
    let owned: Vec<std::sync::atomic::AtomicU8> = (0..UNIVERSE).map(|_| Default::default()).collect();
    std::thread::scope(|s| {
        for th in 0..THREADS {
            let (t, owned) = (&t, &owned);
            s.spawn(move || {
                let mut mine = Vec::new();
                let mut x = th as u64 * 7919;
                for r in 0..ROUNDS {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    if mine.len() < 50 && !(x >> 33).is_multiple_of(3) {
                        let got =
                            if r % 7 == 0 { t.claim_run(3) } else { t.claim_from((x >> 40) % UNIVERSE) };
                        if let Some(i) = got {
                            let k = if r.is_multiple_of(7) { 3 } else { 1 };
                            for j in i..i + k {
                                let prev = owned[j as usize].swap(1, std::sync::atomic::Ordering::SeqCst);
                                assert_eq!(prev, 0, "index {j} handed out twice");
                                mine.push(j);
                            }
                        }
                    } else if let Some(j) = mine.pop() {
                        owned[j as usize].store(0, std::sync::atomic::Ordering::SeqCst);
                        assert!(t.insert(j), "index {j} was already free");
                    }
                }
                for j in mine {
                    owned[j as usize].store(0, std::sync::atomic::Ordering::SeqCst);
                    assert!(t.insert(j));
                }
            });
        }
    });
    assert_eq!(t.count(), UNIVERSE);
    t.check().expect("summaries consistent");
    // Everything is reachable again: claim it all in order.
    for i in 0..UNIVERSE {
        assert_eq!(t.claim_from(0), Some(i));
    }
}

/// A claim at a drawn rank (`try_claim_rank`, the 16-32 B groups' installs) takes the word's
/// rank-th free bit, counting only free bits, and wraps round them when the rank is past the
/// word's free count: racers stay among the lowest free bits however full the word is.
#[test]
fn a_claim_at_a_rank_takes_that_free_bit() {
    let (w, l) = storage(4096);
    let t = Veb::new(&w, l);
    t.insert_range(0, 64);
    // Bits 0..20 taken: rank 3 is bit 23, the next rank 3 bit 24.
    for i in 0..20 {
        assert!(t.remove(i));
    }
    assert_eq!(t.try_claim_rank(0, 3, 1), Some((0, 1 << 23)));
    assert_eq!(t.try_claim_rank(0, 3, 1), Some((0, 1 << 24)));
    // Runs: rank 2 of runs of 4 starts at free bit 8 (from 0: 20, 21, 22, 25, .. 29, 30).
    assert_eq!(t.try_claim_rank(0, 2, 4), Some((0, 0b1111 << 30)));
    // A rank past the free count wraps: with bits 40..43 alone free, rank 4 is
    // the second of them.
    for i in 20..64 {
        t.remove(i);
    }
    t.insert_range(40, 3);
    assert_eq!(t.try_claim_rank(0, 4, 1), Some((0, 1 << 41)));
}

/// Ranked claims (the block trees' installs): claims that draw consecutive tickets take the
/// lowest free bits side by side, a claim past the span's end wraps, and threads racing with
/// ranked claims of runs never take one index twice and leave nothing lost.
#[test]
fn ranked_claims_take_the_lowest_bits_side_by_side() {
    use veballoc_kernels::atomic::Atom32;
    use veballoc_kernels::veb::RANK_SPAN;
    let (w, l) = storage(4096);
    let t = Veb::new(&w, l);
    t.insert_range(64, 128);
    // Tickets 0..RANK_SPAN drawn one after another, as racers that saw one word would draw
    // them: rank r takes the r-th free bit of what is left, so the first claims take every
    // other bit and the word's low part fills before its high one.
    let ticket = Atom32::new(0);
    let mut taken = BTreeSet::new();
    for _ in 0..2 * RANK_SPAN {
        let (word, bits) = t.try_claim_ranked(0, &ticket, 1).expect("free bits left");
        assert_eq!(word, 1, "the lowest word with a free bit");
        assert_eq!(bits.count_ones(), 1);
        taken.insert(64 + bits.trailing_zeros() as u64);
    }
    let highest = *taken.last().unwrap();
    assert!(highest < 64 + 3 * RANK_SPAN as u64, "{taken:?}: scattered past the span");
    // Runs: a rank's run starts at its rank times k.
    let (w2, l2) = storage(4096);
    let t2 = Veb::new(&w2, l2);
    t2.insert_range(0, 64);
    let ticket = Atom32::new(3);
    assert_eq!(t2.try_claim_ranked(0, &ticket, 4), Some((0, 0b1111 << 12)));
    // Rank 4 skips 16 free bits: the 12 below rank 3's run and the 4 after it.
    assert_eq!(t2.try_claim_ranked(0, &ticket, 4), Some((0, 0b1111 << 20)));

    const THREADS: usize = 8;
    let (w3, l3) = storage(2048);
    let t3 = Veb::new(&w3, l3);
    t3.insert_range(0, 2048);
    let ticket = Atom32::new(0);
    let owned: Vec<std::sync::atomic::AtomicU8> = (0..2048).map(|_| Default::default()).collect();
    std::thread::scope(|s| {
        for th in 0..THREADS {
            let (t3, owned, ticket) = (&t3, &owned, &ticket);
            s.spawn(move || {
                let k = 1 + th as u32 % 4;
                loop {
                    // One pass: its None may be transient (a summary clear), the exact
                    // successor decides.
                    let Some((word, mut bits)) = t3.try_claim_ranked(0, ticket, k) else {
                        if t3.successor(0).is_none() {
                            break;
                        }
                        continue;
                    };
                    assert!(bits.count_ones() <= k);
                    while bits != 0 {
                        let j = word * 64 + bits.trailing_zeros() as u64;
                        let prev = owned[j as usize].swap(1, std::sync::atomic::Ordering::SeqCst);
                        assert_eq!(prev, 0, "index {j} handed out twice");
                        bits &= bits - 1;
                    }
                }
            });
        }
    });
    assert!(owned.iter().all(|o| o.load(std::sync::atomic::Ordering::SeqCst) == 1), "an index was lost");
    assert_eq!(t3.count(), 0);
    t3.check().expect("summaries consistent");
}
