//! loom models of the claim/release races: run with
//! `RUSTFLAGS="--cfg loom" cargo test -p veballoc-kernels --test loom --release`.
//! The first models drive the trees and the slot words directly; `mod real` runs the real
//! heap (`DeviceHeap` and its layers) over an arena of loom atomics.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use veballoc_kernels::atomic::Atom64;
use veballoc_kernels::block::{
    slot_install, slot_parts, slot_retire, slot_take, slot_value, BlockMeta, SlotTake,
};
use veballoc_kernels::class::{class_of, slices_per_block};
use veballoc_kernels::veb::{Veb, VebLayout};

/// Slices per block in the slot models: a mid-size class (40 KB slices, 16 per block), whose
/// count differs from the small classes' 4096.
const PER_BLOCK: u32 = slices_per_block(CLASS);
/// That class.
const CLASS: usize = class_of(40_000);

/// Two levels (65 indices: two leaf words and a summary word).
fn tree() -> Arc<(Vec<Atom64>, VebLayout)> {
    tree_of(65)
}

/// An empty tree of `universe` indices.
fn tree_of(universe: u64) -> Arc<(Vec<Atom64>, VebLayout)> {
    let l = VebLayout::new(universe);
    Arc::new(((0..l.total_words).map(|_| Atom64::new(0)).collect(), l))
}

/// One thread frees the last index of a word while another claims it back and a third
/// inserts into the same word: the summary must never hide a free index.
#[test]
fn insert_remove_keeps_summary() {
    loom::model(|| {
        let t = tree();
        Veb::new(&t.0, t.1).insert(64);
        let a = t.clone();
        let h1 = thread::spawn(move || {
            let v = Veb::new(&a.0, a.1);
            assert!(v.remove(64));
        });
        let b = t.clone();
        let h2 = thread::spawn(move || {
            let v = Veb::new(&b.0, b.1);
            v.insert(65 - 2);
        });
        h1.join().unwrap();
        h2.join().unwrap();
        let v = Veb::new(&t.0, t.1);
        assert_eq!(v.check().map(|_| ()), Ok(()));
        assert_eq!(v.successor(0), Some(63));
    });
}

/// Issue 10.1: thread A removes 64 (the only bit of its word, so it clears the summary bit and
/// re-checks) while this thread inserts 65 and then searches. The insert happened before the
/// search in this thread, and nothing takes 65 away, so the search must find a free index (64
/// if A has not removed it yet, else 65): a summary bit cleared for a moment must not hide 65.
#[test]
fn search_after_insert_sees_it_while_a_remover_clears_the_summary() {
    loom::model(|| {
        let t = tree_of(128);
        Veb::new(&t.0, t.1).insert(64);
        let a = t.clone();
        let remover = thread::spawn(move || assert!(Veb::new(&a.0, a.1).remove(64)));
        let v = Veb::new(&t.0, t.1);
        v.insert(65);
        let found = v.successor(0);
        assert!(matches!(found, Some(64 | 65)), "a free index hidden by a summary clear: {found:?}");
        remover.join().unwrap();
        assert_eq!(v.check().map(|_| ()), Ok(()));
    });
}

/// The same race for a claim (`claim_blocks` takes blocks this way): it must get 64 (then A's
/// remove fails) or 65, never report the tree empty.
#[test]
fn claim_after_insert_sees_it_while_a_remover_clears_the_summary() {
    loom::model(|| {
        let t = tree_of(128);
        Veb::new(&t.0, t.1).insert(64);
        let a = t.clone();
        let remover = thread::spawn(move || Veb::new(&a.0, a.1).remove(64));
        let v = Veb::new(&t.0, t.1);
        v.insert(65);
        let got = v.claim_from(0);
        let removed = remover.join().unwrap();
        match got {
            Some(64) => assert!(!removed, "64 taken twice"),
            Some(65) => assert!(removed),
            other => panic!("a free index hidden by a summary clear: {other:?}"),
        }
    });
}

/// The same race for runs (`claim_run`, which runs of whole blocks and host claims use): a run
/// claim after the insert of a free pair must get it.
#[test]
fn run_claim_after_insert_sees_it_while_a_remover_clears_the_summary() {
    loom::model(|| {
        let t = tree_of(128);
        Veb::new(&t.0, t.1).insert(64);
        let a = t.clone();
        let remover = thread::spawn(move || assert!(Veb::new(&a.0, a.1).remove(64)));
        let v = Veb::new(&t.0, t.1);
        v.insert_range(66, 2);
        assert_eq!(v.claim_run(2), Some(66), "a free run hidden by a summary clear");
        remover.join().unwrap();
        assert_eq!(v.check().map(|_| ()), Ok(()));
    });
}

/// Two items an inserter wrote before publishing them (loom checks every later access).
struct Items([loom::cell::UnsafeCell<u64>; 2]);
// SAFETY: loom checks the accesses to the cells.
unsafe impl Sync for Items {}

impl Items {
    fn new() -> Arc<Self> {
        Arc::new(Self([loom::cell::UnsafeCell::new(0), loom::cell::UnsafeCell::new(0)]))
    }
    fn write(&self, i: usize, v: u64) {
        // SAFETY: the caller owns item `i` (published to it, or before publishing it).
        self.0[i].with_mut(|x| unsafe { *x = v });
    }
}

/// A thread that writes items 0 and 1, then publishes indexes 64 and 65 with one
/// `insert_range` (fence, relaxed RMW).
fn insert_two_items(t: &Arc<(Vec<Atom64>, VebLayout)>, items: &Arc<Items>) -> thread::JoinHandle<()> {
    let (tp, ip) = (t.clone(), items.clone());
    thread::spawn(move || {
        ip.write(0, 1);
        ip.write(1, 1);
        Veb::new(&tp.0, tp.1).insert_range(64, 2);
    })
}

/// A claim's RMW acquires only (r33: the release fence of an acq_rel RMW was on every
/// install's path). One inserter writes two items and publishes both with one `insert_range`
/// (fence, relaxed RMW); two claimers take one each. The second may read the first claim's
/// RMW rather than the insert's: it still synchronises with the insert, whose release
/// sequence every RMW of the word continues. (Review of r33; with relaxed claims loom reports
/// a causality violation.)
#[test]
fn a_claim_that_reads_another_claim_sees_the_insert() {
    loom::model(|| {
        let t = tree_of(128);
        let items = Items::new();
        let inserter = insert_two_items(&t, &items);
        let claimers: Vec<_> = (0..2)
            .map(|i| {
                let (tc, ic) = (t.clone(), items.clone());
                thread::spawn(move || {
                    if let Some(x) = Veb::new(&tc.0, tc.1).try_claim_spread(0, i) {
                        ic.write((x - 64) as usize, 2);
                    }
                })
            })
            .collect();
        inserter.join().unwrap();
        for c in claimers {
            c.join().unwrap();
        }
    });
}

/// As above, with two inserters of one item each into one word: a claim that reads the second
/// insert's RMW takes the first's item too, and sees its write (the first insert's release
/// sequence goes on through the second's relaxed RMW).
#[test]
fn a_claim_sees_an_insert_through_another_inserts_rmw() {
    loom::model(|| {
        let t = tree_of(128);
        let items = Items::new();
        let inserters: Vec<_> = (0..2)
            .map(|i| {
                let (tp, ip) = (t.clone(), items.clone());
                thread::spawn(move || {
                    ip.write(i, 1);
                    Veb::new(&tp.0, tp.1).insert_range(64 + i as u64, 1);
                })
            })
            .collect();
        let (tc, ic) = (t.clone(), items.clone());
        let claimer = thread::spawn(move || {
            if let Some((w, mut bits)) = Veb::new(&tc.0, tc.1).try_claim_bits(0, 0, 2) {
                while bits != 0 {
                    ic.write((w * 64 + bits.trailing_zeros() as u64 - 64) as usize, 2);
                    bits &= bits - 1;
                }
            }
        });
        for i in inserters {
            i.join().unwrap();
        }
        claimer.join().unwrap();
    });
}

/// Claims at drawn ranks (`try_claim_rank`, the 16-32 B groups' installs) race an insert of
/// two items into one word: ranks 0 and 1, each of which may wrap round the word's free bits
/// when it finds fewer free than its rank. Each claimer that gets an index writes its item
/// (loom checks that the insert's write happens before); no index is taken twice, and what
/// nobody took stays in the tree.
#[test]
fn rank_claims_race_an_insert() {
    loom::model(|| {
        let t = tree_of(128);
        let items = Items::new();
        let inserter = insert_two_items(&t, &items);
        let claimers: Vec<_> = (0..2u32)
            .map(|r| {
                let (tc, ic) = (t.clone(), items.clone());
                thread::spawn(move || {
                    let got = Veb::new(&tc.0, tc.1).try_claim_rank(0, r, 1);
                    if let Some((w, bits)) = got {
                        assert_eq!(bits.count_ones(), 1);
                        let i = w * 64 + bits.trailing_zeros() as u64;
                        ic.write((i - 64) as usize, 2);
                        Some(i)
                    } else {
                        None
                    }
                })
            })
            .collect();
        inserter.join().unwrap();
        let got: Vec<u64> = claimers.into_iter().filter_map(|c| c.join().unwrap()).collect();
        if let [a, b] = got[..] {
            assert_ne!(a, b, "one index claimed twice");
        }
        let v = Veb::new(&t.0, t.1);
        for i in [64u64, 65] {
            assert_eq!(v.contains(i), !got.contains(&i), "index {i}: claimed {got:?}");
        }
    });
}

/// Two claimers race for one free index: exactly one wins.
#[test]
fn claim_is_exclusive() {
    loom::model(|| {
        let t = tree();
        Veb::new(&t.0, t.1).insert(64);
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let a = t.clone();
                thread::spawn(move || Veb::new(&a.0, a.1).claim_from(0))
            })
            .collect();
        let got: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(got.iter().filter(|g| **g == Some(64)).count(), 1);
        assert_eq!(Veb::new(&t.0, t.1).check().map(|_| ()), Ok(()));
    });
}

/// Two warps take the last 6 slices of block A from its slot (the exhauster installs block
/// B) while a trim retires the slot. Every slice of A is handed out once or given back by
/// whoever emptied or replaced the slot, never both, never lost.
#[test]
fn slot_take_exhaust_and_retire() {
    const A: u64 = 7;
    const B: u64 = 9;
    loom::model(|| {
        let slot = Arc::new(Atom64::new(slot_value(A, PER_BLOCK - 6)));
        let rest_a = Arc::new(Atom64::new(0));
        let give_back = |rest_a: &Atom64, (g, handed): (Option<u64>, u32)| {
            if g == Some(A) && handed < PER_BLOCK {
                rest_a.fetch_add_relaxed((PER_BLOCK - handed) as u64);
            }
        };
        let takers: Vec<_> = [4u32, 4]
            .into_iter()
            .map(|n| {
                let (slot, rest_a) = (slot.clone(), rest_a.clone());
                thread::spawn(move || match slot_take(&slot, n, PER_BLOCK) {
                    SlotTake::Fresh { gid, start, got, exhausted, .. } => {
                        if exhausted {
                            give_back(&rest_a, slot_parts(slot_install(&slot, B)));
                        }
                        (gid == A).then_some((start, got))
                    }
                    _ => None,
                })
            })
            .collect();
        let (s2, r2) = (slot.clone(), rest_a.clone());
        let trimmer = thread::spawn(move || {
            if let Some((g, _, h)) = slot_retire(&s2, PER_BLOCK) {
                give_back(&r2, (Some(g), h));
            }
        });
        let mut handed: Vec<u32> = Vec::new();
        for t in takers {
            if let Some((start, got)) = t.join().unwrap() {
                handed.extend(start..start + got);
            }
        }
        trimmer.join().unwrap();
        let n = handed.len();
        handed.sort();
        handed.dedup();
        assert_eq!(n, handed.len(), "a slice was handed out twice");
        assert!(handed.iter().all(|&i| i >= PER_BLOCK - 6));
        assert_eq!(n as u64 + rest_a.load_relaxed(), 6, "every slice of A handed out or given back");
    });
}

/// On an empty slot exactly one of the racing takers is elected to install a block; after
/// its install the others get distinct slices of it.
#[test]
fn empty_slot_elects_one_installer() {
    loom::model(|| {
        let slot = Arc::new(Atom64::new(0));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let slot = slot.clone();
                thread::spawn(move || {
                    let mut elected = 0;
                    for _ in 0..3 {
                        match slot_take(&slot, 1, PER_BLOCK) {
                            SlotTake::Fresh { start, .. } => return (elected, Some(start)),
                            SlotTake::Empty { elected: true } => {
                                elected += 1;
                                slot_install(&slot, 3);
                            }
                            _ => thread::yield_now(),
                        }
                    }
                    (elected, None)
                })
            })
            .collect();
        let got: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(got.iter().map(|g| g.0).sum::<u32>(), 1, "one installer");
        let starts: Vec<u32> = got.iter().filter_map(|g| g.1).collect();
        assert!(starts.len() < 2 || starts[0] != starts[1], "distinct slices");
    });
}

/// The frees of a block's slices race: exactly the last give-back completes the block.
#[test]
fn last_give_back_completes_the_block() {
    loom::model(|| {
        let m = Arc::new(BlockMeta::new_parked());
        m.install(veballoc_kernels::block::KIND_SLICES, 0);
        assert!(!m.give_back(PER_BLOCK - 3, PER_BLOCK));
        let hs: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|k| {
                let m = m.clone();
                thread::spawn(move || m.give_back(k, PER_BLOCK))
            })
            .collect();
        let done: Vec<bool> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(done.iter().filter(|d| **d).count(), 1);
    });
}

/// A packed leader's credit of units it took and handed to no one is a relaxed `red`
/// (`BlockMeta::give_back_unused_held`) while its own object is live; another lane's object
/// is freed meanwhile (it wrote it first), then the leader frees its own. Exactly one free
/// completes the block, and whoever does sees both objects' writes (the relaxed credit in
/// the middle of the count's modification order does not break the release sequences).
#[test]
fn a_packed_credit_held_by_a_live_object_frees_nothing_and_hides_no_write() {
    use loom::cell::UnsafeCell;
    struct Block {
        meta: BlockMeta,
        objects: [UnsafeCell<u64>; 2],
    }
    loom::model(|| {
        let b = Arc::new(Block {
            meta: BlockMeta::new_parked(),
            objects: [UnsafeCell::new(0), UnsafeCell::new(0)],
        });
        b.meta.install(veballoc_kernels::block::KIND_PACKED, 0);
        // Everything but the two objects' units and the credit is back already.
        const CREDIT: u32 = 5;
        assert!(!b.meta.give_back(PER_BLOCK - 2 - CREDIT, PER_BLOCK));
        // A free of object `i`; the free that completes the block recycles it, reading both
        // objects (a race loom reports unless the count's order carries the other's write).
        fn free(b: &Block, i: usize) -> bool {
            let done = b.meta.give_back(1, PER_BLOCK);
            if done {
                for o in &b.objects {
                    // SAFETY: the block is the completer's now; its reads stand for the recycle.
                    assert_eq!(o.with(|p| unsafe { *p }), 1, "object {i}'s free saw a write");
                }
            }
            done
        }
        let other = {
            let b = b.clone();
            thread::spawn(move || {
                // SAFETY: the model's object 1 belongs to this thread until its free below.
                b.objects[1].with_mut(|p| unsafe { *p = 1 });
                free(&b, 1)
            })
        };
        let leader = {
            let b = b.clone();
            thread::spawn(move || {
                b.meta.give_back_unused_held(CREDIT);
                // SAFETY: object 0 is the leader's until its free below.
                b.objects[0].with_mut(|p| unsafe { *p = 1 });
                free(&b, 0)
            })
        };
        let done = [other.join().unwrap(), leader.join().unwrap()];
        assert_eq!(done.iter().filter(|d| **d).count(), 1, "one free completes the block");
    });
}

// Data published by the block protocols. The models below add what the ones above leave out:
// a `loom::cell::UnsafeCell` per slice (or per block header) stands for the memory the
// protocol hands over, so loom reports a data race if an acquire/release pair that should
// order two users of that memory does not.

/// The slices of block A still in the slot when the full-cycle model starts.
const LEFT: u32 = 2;

/// Full cycle of one block: two takers each take a slice of A from the slot (the one that
/// takes the last installs block B), write it and free it; a trimmer retires the slot and
/// gives back what A never handed out. Exactly one of them makes A's free count reach 4096,
/// and that one recycles A: it overwrites every slice, which must happen after every
/// taker's write (the release give-backs and the last giver's acquire fence).
#[test]
fn block_cycle_publishes_slices_to_the_recycler() {
    use loom::cell::UnsafeCell;
    const A: u64 = 7;
    const B: u64 = 9;
    /// The taker's mark in its slice, and the recycler's.
    const WRITTEN: u64 = 1;
    const RECYCLED: u64 = 2;
    struct Block {
        slot: Atom64,
        meta: BlockMeta,
        slices: [UnsafeCell<u64>; LEFT as usize],
    }
    /// Overwrites every slice of A: the caller owns the whole block.
    fn recycle(b: &Block) {
        for s in &b.slices {
            s.with_mut(|p| {
                // SAFETY: the last give-back made the caller the block's only owner; loom
                // checks that the other users' accesses happen-before this one.
                unsafe { *p = RECYCLED }
            });
        }
    }
    loom::model(|| {
        let base = PER_BLOCK - LEFT;
        let b = Arc::new(Block {
            slot: Atom64::new(slot_value(A, base)),
            meta: BlockMeta::new_parked(),
            slices: [UnsafeCell::new(0), UnsafeCell::new(0)],
        });
        b.meta.install(veballoc_kernels::block::KIND_SLICES, CLASS);
        // The slices handed out before the model started were all freed already.
        assert!(!b.meta.give_back(base, PER_BLOCK));
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || {
                    let SlotTake::Fresh { gid: A, start, got: 1, exhausted, .. } =
                        slot_take(&b.slot, 1, PER_BLOCK)
                    else {
                        return (None, false); // the trimmer came first
                    };
                    if exhausted {
                        // We took A's last slice, so A has nothing left to give back (unless
                        // the trimmer emptied the slot first, A still held it, used up).
                        let (old, handed) = slot_parts(slot_install(&b.slot, B));
                        assert!(old != Some(A) || handed >= PER_BLOCK);
                    }
                    b.slices[(start - base) as usize].with_mut(|p| {
                        // SAFETY: slice `start` is ours from the take until our give-back.
                        unsafe { *p = WRITTEN }
                    });
                    let last = b.meta.give_back(1, PER_BLOCK);
                    if last {
                        recycle(&b);
                    }
                    (Some(start), last)
                })
            })
            .collect();
        let t = b.clone();
        let trimmer = thread::spawn(move || match slot_retire(&t.slot, PER_BLOCK) {
            Some((A, _, handed)) if handed < PER_BLOCK => {
                let last = t.meta.give_back(PER_BLOCK - handed, PER_BLOCK);
                if last {
                    recycle(&t);
                }
                last
            }
            _ => false, // empty, or block B: not part of the model
        });
        let mut starts = Vec::new();
        let mut recyclers = trimmer.join().unwrap() as u32;
        for h in takers {
            let (start, last) = h.join().unwrap();
            starts.extend(start);
            recyclers += last as u32;
        }
        starts.sort();
        starts.dedup();
        assert_eq!(recyclers, 1, "exactly one user recycles A");
        assert!(starts.iter().all(|&s| s >= base));
        // Every slice was handed out at most once; the ones handed out were recycled after
        // their taker's write (and the model's join orders this read after the recycler).
        for s in &b.slices {
            // SAFETY: every thread has been joined.
            s.with(|p| assert_eq!(unsafe { *p }, RECYCLED));
        }
    });
}

/// On an empty slot, the elected taker formats a block (its header: a plain write) and
/// installs it; a taker that then gets slices of it must see the header written, through
/// the install's release swap and the take's acquire add, and the block's kind.
#[test]
fn slot_install_publishes_the_block_to_takers() {
    use loom::cell::UnsafeCell;
    const A: u64 = 3;
    /// The header word a formatted block carries.
    const FORMATTED: u64 = 0xf0;
    /// Takes each thread tries before giving up (loom explores bounded loops only).
    const TRIES: u32 = 3;
    struct Block {
        slot: Atom64,
        meta: BlockMeta,
        header: UnsafeCell<u64>,
    }
    loom::model(|| {
        let b = Arc::new(Block {
            slot: Atom64::new(0),
            meta: BlockMeta::new_parked(),
            header: UnsafeCell::new(0),
        });
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || {
                    for _ in 0..TRIES {
                        match slot_take(&b.slot, 1, PER_BLOCK) {
                            SlotTake::Fresh { gid, .. } => {
                                assert_eq!(gid, A);
                                // SAFETY: read-only; loom checks it is ordered after the
                                // installer's write.
                                b.header.with(|p| assert_eq!(unsafe { *p }, FORMATTED));
                                assert_eq!(
                                    veballoc_kernels::block::kind_parts(b.meta.kind.load_relaxed()),
                                    (veballoc_kernels::block::KIND_PACKED, CLASS)
                                );
                                return true;
                            }
                            SlotTake::Empty { elected: true } => {
                                // SAFETY: the elected taker owns the block until it installs it.
                                b.header.with_mut(|p| unsafe { *p = FORMATTED });
                                b.meta.install(veballoc_kernels::block::KIND_PACKED, CLASS);
                                assert_eq!(slot_install(&b.slot, A) >> 32, 0, "the slot was empty");
                            }
                            _ => thread::yield_now(),
                        }
                    }
                    false
                })
            })
            .collect();
        let served = hs.into_iter().map(|h| h.join().unwrap()).filter(|&s| s).count();
        // The installer always gets a slice on its next take.
        assert!(served >= 1);
    });
}

// Models of the real heap (issue 10, item 14): `DeviceHeap` and its layers (`Segments`,
// `Blocks`, `Slots`) over an arena of loom atomics (`atomic::LoomMeta`), one small heap per
// execution. The heap's memory is never dereferenced by the allocator (no headers), so its
// base is a made-up address; the data each protocol hands over is a `loom::cell::UnsafeCell`
// per slice address (`Cells`), which the models write as owners do: loom reports a causality
// violation if two owners of the same memory are not ordered by the allocator's
// acquire/release chains. Every model ends by freeing what it holds, trimming, and running
// the validator: the heap must be whole again.

mod real {
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;
    use loom::thread;
    use veballoc_kernels::arch::set_host_thread_index;
    use veballoc_kernels::atomic::LoomMeta;
    use veballoc_kernels::class::{
        block_run_len, class_of, group_block_bytes, group_blocks_per_segment, group_of, is_mask_class,
        slice_bytes, slices_per_block, MAX_SLICE_BYTES, RUN_BLOCK_BYTES, RUN_GROUP,
    };
    use veballoc_kernels::heap::{counter, UNIT_RUNS};
    use veballoc_kernels::layout::{bounds_end, bounds_off, RUN_ROW0};
    use veballoc_kernels::slice::{
        installs_on_demand, Slots, Taken, BOOT_SLOT_CLASS, MAX_TAKE, PARTIAL_VISITS,
    };
    use veballoc_kernels::{DeviceHeap, HeapLayout};

    /// Where the model heaps' segment memory "is": segment-aligned, never dereferenced.
    const MEM: u64 = 1 << 40;
    /// Current slots per class in the models: two multiprocessors.
    const SHARDS: u32 = 2;
    /// Preemptions loom explores per execution in the smaller models (unless
    /// `LOOM_MAX_PREEMPTIONS` says otherwise), and in the larger ones (three or more threads
    /// on the long paths): enough for the races below (each model fails with an ordering
    /// broken, see the commit messages), few enough for `scripts/test.sh`.
    const PREEMPTIONS: usize = 2;
    const PREEMPTIONS_LARGE: usize = 1;
    /// Branches an execution may take (the real paths are long).
    const MAX_BRANCHES: usize = 20_000;
    /// A pin shift that gives every row all its slots (`HeapLayout::with_pin_shift`).
    const NO_PIN_LIMIT: u32 = 64;
    /// What an owner writes in its memory.
    const WRITTEN: u64 = 1;

    /// `DeviceHeap::take_slices` with its contract checked: `n` in 1..=`MAX_TAKE`.
    fn take_slices(heap: &DeviceHeap, c: usize, n: u32) -> Option<Taken> {
        assert!((1..=MAX_TAKE).contains(&n), "a take of {n} slices");
        // SAFETY: n is in 1..=MAX_TAKE (asserted above).
        unsafe { heap.take_slices(c, n) }
    }

    /// `Slots::take_in_row` with its contract checked: `n` in 1..=`MAX_TAKE`.
    fn take_in_row(slots: &Slots<'_>, row: usize, n: u32) -> Option<Taken> {
        assert!((1..=MAX_TAKE).contains(&n), "a take of {n} slices");
        // SAFETY: n is in 1..=MAX_TAKE (asserted above).
        unsafe { slots.take_in_row(row, n) }
    }

    /// A heap of `segments` segments over loom atomics.
    struct Model {
        _meta: LoomMeta,
        heap: DeviceHeap,
        cells: Cells,
    }

    impl Model {
        fn new(segments: u32, addrs: Vec<u64>) -> Arc<Self> {
            Self::with_layout(HeapLayout::new(segments, SHARDS, false), addrs)
        }

        /// As `new`, with every row's slots in use (a heap this small gives each row one
        /// slot otherwise, see `HeapLayout::row_shards`).
        fn with_all_shards(segments: u32, addrs: Vec<u64>) -> Arc<Self> {
            Self::with_layout(HeapLayout::new(segments, SHARDS, false).with_pin_shift(NO_PIN_LIMIT), addrs)
        }

        fn with_layout(layout: HeapLayout, addrs: Vec<u64>) -> Arc<Self> {
            // No model takes packed runs: their bound bitmaps get no loom atomics.
            let n = layout.num_segments;
            let meta =
                LoomMeta::with_gap(&layout.header_words(), layout.meta_bytes, (bounds_off(n), bounds_end(n)));
            // SAFETY: `meta` is a loom arena of the layout's meta_bytes with its header and zeros
            // (initialised next), alive as long as the model, which owns the handle; MEM is a
            // segment-aligned address that the models never dereference (each address's data
            // is a loom cell, `Cells`) and never calloc or realloc; the count is the layout's.
            let heap = unsafe { DeviceHeap::from_raw_parts(MEM, meta.addr(), layout.num_segments as u64) };
            for i in 0..layout.init_words() {
                // SAFETY: the heap is new and not yet shared; i < init_words.
                unsafe { heap.init_word(i) };
            }
            Arc::new(Self { _meta: meta, heap, cells: Cells::new(addrs) })
        }

        /// Frees `ptrs`, trims, and checks that the heap is whole (every segment free) and
        /// that it counted `(invalid frees, double frees, out-of-memory nulls)`.
        ///
        /// # Safety
        /// `ptrs` are live allocations of this model's heap (each once), owned by the caller
        /// and not used after: `free`'s conditions.
        unsafe fn check_whole(&self, ptrs: &[*mut u8], counted: (u64, u64, u64)) {
            for &p in ptrs {
                // SAFETY: the caller's contract (check_whole's).
                unsafe { self.heap.free(p) };
            }
            self.heap.trim();
            let s = self.heap.validate().expect("the validator");
            assert_eq!(s.free_segments, self.heap.layout().num_segments as u64, "{s:?}");
            assert_eq!((s.invalid_frees, s.double_frees, s.out_of_memory), counted, "{s:?}");
        }
    }

    /// One data cell per heap address a model may hand out.
    struct Cells(Vec<(u64, UnsafeCell<u64>)>);

    impl Cells {
        fn new(mut addrs: Vec<u64>) -> Self {
            addrs.sort();
            addrs.dedup();
            Self(addrs.into_iter().map(|a| (a, UnsafeCell::new(0))).collect())
        }
        fn cell(&self, p: *mut u8) -> &UnsafeCell<u64> {
            let a = p as u64;
            let i = self.0.binary_search_by_key(&a, |c| c.0).unwrap_or_else(|_| panic!("no cell at {a:#x}"));
            &self.0[i].1
        }
        /// The owner of `p` writes it (loom checks that every earlier owner's access
        /// happened before).
        fn write(&self, p: *mut u8) {
            // SAFETY: the caller owns `p`; loom checks the claim.
            self.cell(p).with_mut(|v| unsafe { *v = WRITTEN });
        }
    }

    /// Addresses of slices `0..n` of the blocks `blocks` of class `c` in segment 0.
    fn slices(c: usize, blocks: core::ops::Range<u32>, n: u32) -> Vec<u64> {
        let g = group_of(c);
        blocks
            .flat_map(|b| {
                (0..n).map(move |s| MEM + b as u64 * group_block_bytes(g) + s as u64 * slice_bytes(c))
            })
            .collect()
    }

    /// Leaves segment 0 formatted with nothing out (pending): a `malloc(size)` on
    /// multiprocessor 0, its free, and a trim of its slot in row `row`; then starts a thread
    /// (multiprocessor 1) that takes the segment back (`trim_segment`), and moves this thread
    /// to multiprocessor 2.
    fn pending_then_trim(m: &Arc<Model>, size: u64, row: usize) -> thread::JoinHandle<()> {
        set_host_thread_index(0);
        let p = m.heap.malloc(size);
        assert!(!p.is_null());
        // SAFETY: p came from the malloc above, is freed once and not used after.
        unsafe { m.heap.free(p) };
        m.heap.trim_slot(row, 0);
        let r = m.clone();
        let reclaimer = thread::spawn(move || {
            set_host_thread_index(1);
            r.heap.blocks().trim_segment(0);
        });
        set_host_thread_index(2);
        reclaimer
    }

    /// Runs `f` under loom (at most `preemptions` preemptions) and says how many
    /// executions it explored.
    fn model(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let mut b = loom::model::Builder::new();
        if b.preemption_bound.is_none() {
            b.preemption_bound = Some(preemptions);
        }
        b.max_branches = b.max_branches.max(MAX_BRANCHES);
        // A plain std counter: outside the model, not a shared variable loom explores.
        let runs = std::sync::Arc::new(AtomicUsize::new(0));
        let r = runs.clone();
        b.check(move || {
            r.fetch_add(1, Ordering::Relaxed);
            f()
        });
        eprintln!("loom: {} executions", runs.load(Ordering::Relaxed));
    }

    /// A 4 KiB class: 16 blocks of 1 MiB per segment, 256 slices per block.
    const SIZE: u64 = 4096;
    /// A class of another group than `SIZE`'s: 128 B, 32 blocks of 512 KiB per segment.
    const OTHER: u64 = 128;

    /// (1) Two mallocs on an empty heap, on one multiprocessor: one is elected to install a
    /// block (formatting the segment), the other waits for it; both get distinct slices of
    /// it, and free them: each free reads the block's kind, which the installer wrote before
    /// its release swap (a stale kind would count a double free). A trim and the segment's
    /// reclaim then leave the heap whole.
    #[test]
    fn mallocs_race_to_install_on_an_empty_heap() {
        let c = class_of(SIZE);
        model(PREEMPTIONS, move || {
            let m = Model::new(1, slices(c, 0..group_blocks_per_segment(group_of(c)), 2));
            let hs: Vec<_> = (0..2)
                .map(|_| {
                    let m = m.clone();
                    thread::spawn(move || {
                        set_host_thread_index(0);
                        let p = m.heap.malloc(SIZE);
                        assert!(!p.is_null(), "null from a heap with room");
                        m.cells.write(p);
                        // The free reads the block's kind, which the installer wrote.
                        // SAFETY: p came from this thread's malloc above, is freed once and not used after.
                        unsafe { m.heap.free(p) };
                        p as u64
                    })
                })
                .collect();
            let ps: Vec<u64> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            assert_ne!(ps[0], ps[1], "one slice handed out twice");
            // SAFETY: no pointer to free.
            unsafe { m.check_whole(&[], (0, 0, 0)) };
        });
    }

    /// (2) The last two slices of a block are freed by two threads (the last one recycles the
    /// block, and marks the block's segment, with no block out any more, pending) while a
    /// taker of a class of another group finds no block and no free segment, runs the reclaim
    /// sweep (as `malloc` does before a null), which returns the segment once the frees are
    /// done, and takes again: then it formats the segment for its group and takes its first
    /// slice, the address of the first freed slice. The freers' writes must happen
    /// before the taker's (the release give-backs, the last giver's acquire fence, the
    /// release inserts, the claim's acquire).
    #[test]
    fn last_free_recycles_and_reclaims_while_another_group_claims() {
        let (c1, c2) = (class_of(SIZE), class_of(OTHER));
        assert_ne!(group_of(c1), group_of(c2));
        model(PREEMPTIONS, move || {
            let m = Model::new(1, [slices(c1, 0..1, 2), slices(c2, 0..1, 1)].concat());
            set_host_thread_index(0);
            let (p1, p2) = (m.heap.malloc(SIZE), m.heap.malloc(SIZE));
            assert!(!p1.is_null() && !p2.is_null());
            // The block leaves its slot, so that the last free recycles it.
            m.heap.trim_slot(c1, 0);
            let freers: Vec<_> = [p1 as u64, p2 as u64]
                .into_iter()
                .enumerate()
                .map(|(i, p)| {
                    let m = m.clone();
                    thread::spawn(move || {
                        set_host_thread_index(2 + i as u64);
                        m.cells.write(p as *mut u8);
                        // SAFETY: p is this thread's (one of the two mallocs above, handed to it alone),
                        // freed once and not used after.
                        unsafe { m.heap.free(p as *mut u8) };
                    })
                })
                .collect();
            // As `malloc` does before a null: a reclaim sweep (it returns the pending segment),
            // then a second take.
            let take = move |m: &Model| {
                let s = m.heap.slots();
                take_in_row(&s, c2, 1).or_else(|| {
                    s.trim_idle();
                    take_in_row(&s, c2, 1)
                })
            };
            let t = m.clone();
            let taker = thread::spawn(move || {
                set_host_thread_index(1);
                let q = take(&t).map(|t| t.base);
                if let Some(q) = q {
                    assert_eq!(q, MEM, "the first slice of the reclaimed segment");
                    t.cells.write(q as *mut u8);
                }
                q
            });
            for h in freers {
                h.join().unwrap();
            }
            // A null is right when the taker looked before the last free (the heap was full);
            // once the frees are done the segment is free.
            let q = taker.join().unwrap().or_else(|| take(&m).map(|t| t.base));
            let q = q.expect("the reclaimed segment");
            // SAFETY: q is this model's only live slice, taken above, owned by this thread, unused after.
            unsafe { m.check_whole(&[q as *mut u8], (0, 0, 0)) };
        });
    }

    /// (3) The last free block of a full segment: a taker on multiprocessor 0 takes the last
    /// slice of its current block and installs the next one, while a taker on
    /// multiprocessor 1, whose slot is empty, tries to install one too; the loser of the
    /// claim steals from the winner's slot (or finds it not yet installed and gets nothing).
    /// Every slice goes to one taker, and the thief's free of a stolen slice reads the block's
    /// kind that the installer wrote (through the install's release swap and the steal's
    /// acquire add).
    #[test]
    fn steal_races_an_install() {
        let c = class_of(64);
        assert_eq!(group_of(c), RUN_GROUP);
        let per_block = slices_per_block(c);
        let bps = group_blocks_per_segment(RUN_GROUP);
        let whole = (bps as u64 - 2) * RUN_BLOCK_BYTES;
        assert!(whole > MAX_SLICE_BYTES && block_run_len(whole) == bps - 2);
        model(PREEMPTIONS, move || {
            let last = bps - 1;
            let mut addrs = slices(c, last..bps, 2);
            addrs.push(MEM + (per_block as u64 - 1) * slice_bytes(c));
            let m = Model::with_all_shards(1, addrs);
            set_host_thread_index(0);
            // Block 0 current on multiprocessor 0 with one slice left, blocks 1..bps-1 out
            // as one run: only the segment's last block is free.
            let p0 = m.heap.malloc(64);
            let t = take_slices(&m.heap, c, per_block - 2).unwrap();
            let (rest, got) = (t.base, t.got);
            assert_eq!((p0 as u64, rest, got), (MEM, MEM + slice_bytes(c), per_block - 2));
            let run = m.heap.malloc(whole);
            assert_eq!(run as u64, MEM + RUN_BLOCK_BYTES);
            let hs: Vec<_> = (0..2u64)
                .map(|i| {
                    let m = m.clone();
                    thread::spawn(move || {
                        set_host_thread_index(i);
                        let q = take_in_row(&m.heap.slots(), c, 1).map(|t| t.base as *mut u8);
                        if let Some(q) = q {
                            m.cells.write(q);
                            // The thief's free: the block's kind must be the installer's.
                            // SAFETY: q is this thread's slice (the take above), freed once and not used
                            // after.
                            unsafe { m.heap.free(q) };
                        }
                        q.map(|q| q as u64)
                    })
                })
                .collect();
            let qs: Vec<Option<u64>> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            assert_eq!(qs[0], Some(MEM + (per_block as u64 - 1) * slice_bytes(c)), "block 0's last slice");
            assert_ne!(qs[0], qs[1]);
            // Give back what the test took in bulk (one atomic, as `settle_packed` does).
            // SAFETY: slices 1 .. per_block - 1 of block 0 are the test's, handed to no one.
            unsafe { m.heap.slots().release_slices(0, 0, c, 1, per_block - 2) };
            // SAFETY: p0 and run came from the mallocs above and are live (the thieves freed only their
            // own slices); each is freed once, unused after.
            unsafe { m.check_whole(&[p0, run], (0, 0, 0)) };
        });
    }

    /// (4) A trim retires the slot of a current block while a taker takes from it and the
    /// owner of one of its slices frees it. Each of the block's slices is handed out once or
    /// given back once (by the retirer, or by the installer that replaced the block); the
    /// last giver recycles the block, and a later owner of the freed slice (the taker, when
    /// it gets the recycled block) writes it after the freer did.
    #[test]
    fn trim_races_a_take_and_a_free() {
        let c = class_of(SIZE);
        model(PREEMPTIONS_LARGE, move || {
            let m = Model::new(1, slices(c, 0..group_blocks_per_segment(group_of(c)), 2));
            set_host_thread_index(0);
            let p = m.heap.malloc(SIZE) as u64;
            assert_eq!(p, MEM);
            let f = m.clone();
            let freer = thread::spawn(move || {
                set_host_thread_index(2);
                f.cells.write(p as *mut u8);
                // SAFETY: p (the malloc above) is handed to this thread alone, freed once and not used after.
                unsafe { f.heap.free(p as *mut u8) };
            });
            let r = m.clone();
            let trimmer = thread::spawn(move || {
                set_host_thread_index(1);
                r.heap.trim_slot(c, 0);
            });
            let t = m.clone();
            let taker = thread::spawn(move || {
                set_host_thread_index(0);
                let q = take_in_row(&t.heap.slots(), c, 1).map(|t| t.base);
                if let Some(q) = q {
                    t.cells.write(q as *mut u8);
                }
                q
            });
            freer.join().unwrap();
            trimmer.join().unwrap();
            // A null is right when the taker looked while the slice was live (the heap full).
            let q = taker.join().unwrap().or_else(|| take_in_row(&m.heap.slots(), c, 1).map(|t| t.base));
            // SAFETY: q is the one live slice (taken above), owned by this thread, unused after.
            unsafe { m.check_whole(&[q.expect("a heap with room") as *mut u8], (0, 0, 0)) };
        });
    }

    /// (5) Two frees of the same run of whole blocks race: the owner writes the run, starts
    /// a second thread that frees it too (a double free), and frees it. Exactly one free
    /// returns the blocks and the other is counted (a double free while the block is parked,
    /// an invalid free once its segment went back to the segment tree); the tree never holds
    /// a block twice (the validator, and a new run of the same size is the same run); and the
    /// next owner's write comes after the owner's, whichever free returned the run (the
    /// winner's kind CAS and release inserts, the next claim's acquire).
    #[test]
    fn whole_block_double_free_races() {
        let size = MAX_SLICE_BYTES + 1;
        model(PREEMPTIONS, move || {
            let m = Model::new(1, vec![MEM]);
            set_host_thread_index(0);
            let p = m.heap.malloc(size) as u64;
            assert_eq!(p, MEM);
            let f = m.clone();
            let owner = thread::spawn(move || {
                set_host_thread_index(1);
                f.cells.write(p as *mut u8);
                let g = f.clone();
                let second = thread::spawn(move || {
                    set_host_thread_index(2);
                    // SAFETY: not a valid free, on purpose: the model checks that a second free of a whole
                    // run, racing the owner's, is refused and counted (free_block's CAS decides; the run's
                    // memory is not written after); no malloc runs until both frees are done.
                    unsafe { g.heap.free(p as *mut u8) };
                });
                // SAFETY: p came from the malloc above; the owner's free, unused after (the racing second
                // free is the other thread's, see there).
                unsafe { f.heap.free(p as *mut u8) };
                second.join().unwrap();
            });
            owner.join().unwrap();
            let (invalid, double) = (
                m.heap.counter(counter::INVALID_FREE).load_relaxed(),
                m.heap.counter(counter::DOUBLE_FREE).load_relaxed(),
            );
            assert_eq!(invalid + double, 1, "one free of two is counted");
            m.heap.validate().expect("the validator");
            // The run is back, once: the next run of its size is the same run.
            let q = m.heap.malloc(size);
            assert_eq!(q as u64, p);
            m.cells.write(q);
            // SAFETY: q came from the malloc above, live and owned here, unused after.
            unsafe { m.check_whole(&[q], (invalid, double, 0)) };
        });
    }

    /// (6) A reclaim against a `malloc` of another group: a segment formatted for one group,
    /// with nothing live (pending: its last free marked it), is taken back (`trim_segment`)
    /// while a `malloc` for a class of another group looks for memory, reclaims the pending
    /// segment in its reclaim sweep or finds it reclaimed, formats it for its group, and later
    /// frees. The heap never holds anything live, so the `malloc` must not get null (its
    /// sweep, and the reclaim windows of `Blocks::reclaim_windows`), nor fall back to a larger
    /// class: it did (a slice of the other group's segment) while a window began after the
    /// reclaimer's flag CAS, when the sweep's reclaim of the pending segment lost the flag.
    /// And the segment's count of blocks out must survive a reclaimer that read the entry
    /// while the format was under way and sits between its CAS and its fetch_and on the count:
    /// this model lost the count (an `OutCount` from the validator) while `format_segment` set
    /// it with a plain store.
    #[test]
    fn a_reclaim_races_a_malloc_of_another_group() {
        let (c1, c2) = (class_of(SIZE), class_of(OTHER));
        assert_ne!(group_of(c1), group_of(c2));
        model(PREEMPTIONS, move || {
            let m = Model::new(1, slices(c2, 0..1, 1));
            // Format the segment for c1's group and give everything back: a formatted segment
            // with no block out, as a sweep or a last free leaves it.
            let reclaimer = pending_then_trim(&m, SIZE, c1);
            let q = m.heap.malloc(OTHER);
            reclaimer.join().unwrap();
            assert!(!q.is_null(), "null from a heap with nothing live (the reclaim window)");
            m.cells.write(q);
            // SAFETY: q came from the malloc above, live and owned here, unused after.
            unsafe { m.check_whole(&[q], (0, 0, 0)) };
        });
    }

    /// (6b) A reclaim against a run of whole blocks of the segment's own group: the segment,
    /// formatted for the group of runs of 64 KiB blocks with nothing out (pending), is taken
    /// back (`trim_segment`) while a `malloc` takes a run of five of its blocks from the
    /// group's tree and frees it. The reclaim may remove every block after the free's last
    /// insert and before that release's subtraction: a reclaim that stored 0 in the count
    /// then let the subtraction wrap it to 2^32 - 1 (found by a review's scratch model; the
    /// validator's check of a free segment's count shows it).
    #[test]
    fn a_reclaim_races_a_run_of_its_group_and_its_free() {
        const RUN: u64 = 4 * (64 << 10) + 1;
        model(PREEMPTIONS, move || {
            let m = Model::new(1, vec![]);
            let reclaimer = pending_then_trim(&m, RUN, RUN_ROW0 + UNIT_RUNS);
            let q = m.heap.malloc(RUN);
            assert!(!q.is_null(), "null from a heap with nothing live");
            // SAFETY: q came from the malloc above, is freed once and not used after.
            unsafe { m.heap.free(q) };
            reclaimer.join().unwrap();
            // SAFETY: no pointer to free.
            unsafe { m.check_whole(&[], (0, 0, 0)) };
        });
    }

    /// (7) A slot's run of two blocks (its first run of one ran out at once): a take of two
    /// slices that crosses the end of the run's first block (two pieces, one in each block)
    /// races the reclaim sweep's `trim_idle` (which drops the run's untouched second block,
    /// or retires the run) and the free of a slice of the first block. Every slice goes to one
    /// owner, a later owner of a freed or dropped slice writes it after the earlier one did
    /// (the give-backs' release, the recycle, the next claim's acquire), and the heap is whole
    /// at the end.
    #[test]
    fn a_take_across_a_run_races_the_sweep_and_a_free() {
        let c = class_of(SIZE);
        let per = slices_per_block(c);
        let s = slice_bytes(c);
        let block = group_block_bytes(group_of(c));
        model(PREEMPTIONS_LARGE, move || {
            let mut addrs = slices(c, 0..group_blocks_per_segment(group_of(c)), 1);
            addrs.push(MEM + block + (per as u64 - 1) * s);
            let m = Model::new(1, addrs);
            set_host_thread_index(0);
            // Block 0 at once (the run that follows is two blocks), then all but the last
            // slice of block 1, the run's first.
            let t0 = take_slices(&m.heap, c, per).unwrap();
            let t1 = take_slices(&m.heap, c, per - 1).unwrap();
            assert_eq!((t0.base, t0.got, t1.base, t1.got, t1.got2), (MEM, per, MEM + block, per - 1, 0));
            let before = m.heap.validate().expect("the validator");
            assert_eq!(before.slice_blocks[c], 3, "block 0 and a run of two: {before:?}");
            let owned = MEM + block;
            let f = m.clone();
            let freer = thread::spawn(move || {
                set_host_thread_index(1);
                f.cells.write(owned as *mut u8);
                // SAFETY: `owned` is a slice of the take above, handed to this thread alone, freed once and
                // not used after.
                unsafe { f.heap.free(owned as *mut u8) };
            });
            let w = m.clone();
            let sweeper = thread::spawn(move || {
                set_host_thread_index(2);
                w.heap.slots().trim_idle();
            });
            let t = m.clone();
            let taker = thread::spawn(move || {
                set_host_thread_index(0);
                let got = take_slices(&t.heap, c, 2);
                if let Some(g) = got {
                    for r in 0..g.total() {
                        t.cells.write(g.addr(r, s) as *mut u8);
                    }
                }
                got
            });
            freer.join().unwrap();
            sweeper.join().unwrap();
            let got = taker.join().unwrap().expect("a heap with room");
            let mut mine: Vec<u64> = (0..got.total()).map(|r| got.addr(r, s)).collect();
            if got.total() == 2 && got.got2 == 1 {
                assert_eq!(mine, [MEM + block + (per as u64 - 1) * s, MEM + 2 * block], "the two pieces");
            }
            mine.sort();
            mine.dedup();
            assert_eq!(mine.len() as u32, got.total());
            // Give back what the test took in bulk (one atomic each, as `settle_packed` does):
            // block 0 whole, block 1 but for the freed slice.
            // SAFETY: those slices are the test's, handed to no one, each given back once.
            unsafe {
                m.heap.slots().release_slices(0, 0, c, 0, per);
                m.heap.slots().release_slices(0, 1, c, 0, per - 2);
            }
            // SAFETY: `mine` are the taker's live slices (deduplicated above), owned here, unused after.
            unsafe { m.check_whole(&mine.iter().map(|&p| p as *mut u8).collect::<Vec<_>>(), (0, 0, 0)) };
        });
    }

    // Runs of blocks in a slot under the sweep's shrink, trims and takes across blocks.

    /// Cells for slices {0, 1, per-2, per-1} of every block of segment 0 (class `c`).
    fn edge_slices(c: usize) -> Vec<u64> {
        let per = slices_per_block(c);
        let g = group_of(c);
        (0..group_blocks_per_segment(g))
            .flat_map(|b| {
                [0, 1, per - 2, per - 1]
                    .into_iter()
                    .map(move |s| MEM + b as u64 * group_block_bytes(g) + s as u64 * slice_bytes(c))
            })
            .collect()
    }

    /// Pieces of a take as (addr, count).
    fn pieces(t: &veballoc_kernels::slice::Taken) -> Vec<(u64, u32)> {
        let mut v = vec![(t.base, t.got)];
        if t.got2 > 0 {
            v.push((t.base2, t.got2));
        }
        v
    }

    /// The owner writes the first and last slice of each piece.
    fn write_edges(m: &Model, c: usize, t: &veballoc_kernels::slice::Taken) {
        for (b, n) in pieces(t) {
            m.cells.write(b as *mut u8);
            if n > 1 {
                m.cells.write((b + (n as u64 - 1) * slice_bytes(c)) as *mut u8);
            }
        }
    }

    /// Gives back every piece of `t` (one atomic per piece).
    fn give_back(m: &Model, c: usize, t: &veballoc_kernels::slice::Taken) {
        for (b, n) in pieces(t) {
            let (seg, local) = m.heap.block_of(b, c);
            // SAFETY: the models pass a take of class `c` that they hold, handed to no one,
            // each given back once.
            unsafe { m.heap.slots().release_slices(seg, local, c, m.heap.slice_in_block(b, c), n) };
        }
    }

    /// A run of two blocks [1, 2] with one live slice in block 1: the sweep (shrink),
    /// a trim (retire) and a take of `per` slices (across into block 2, or exhausting a
    /// shrunk run, or electing on a retired slot) race.
    #[test]
    fn a_shrink_races_a_trim_and_a_take_across() {
        let c = class_of(SIZE);
        let per = slices_per_block(c);
        model(PREEMPTIONS_LARGE, move || {
            let m = Model::new(1, edge_slices(c));
            set_host_thread_index(0);
            let t0 = take_slices(&m.heap, c, per).unwrap();
            let t1 = take_slices(&m.heap, c, 1).unwrap();
            assert_eq!((t0.base, t1.base), (MEM, MEM + group_block_bytes(group_of(c))));
            let w = m.clone();
            let sweeper = thread::spawn(move || {
                set_host_thread_index(2);
                w.heap.slots().trim_idle();
            });
            let r = m.clone();
            let trimmer = thread::spawn(move || {
                set_host_thread_index(1);
                r.heap.trim_slot(c, 0);
            });
            let t = m.clone();
            let taker = thread::spawn(move || {
                set_host_thread_index(0);
                let got = take_slices(&t.heap, c, per);
                if let Some(g) = &got {
                    write_edges(&t, c, g);
                }
                got
            });
            sweeper.join().unwrap();
            trimmer.join().unwrap();
            let got = taker.join().unwrap().expect("a heap with room");
            assert_eq!(got.total(), if got.got2 > 0 { per } else { got.got }, "{got:?}");
            for t in [t0, t1, got] {
                give_back(&m, c, &t);
            }
            // SAFETY: no pointer to free.
            unsafe { m.check_whole(&[], (0, 0, 0)) };
        });
    }

    /// Runs [0], [1, 2], [3..6] of class `SIZE` with one live slice, the first of block 3:
    /// its free races the sweep (which retires or shrinks the run) and a take of `take`
    /// slices. Every slice goes to one owner and the heap is whole at the end.
    fn run_of_four_races_a_take_the_sweep_and_a_free(take: u32) {
        let c = class_of(SIZE);
        let per = slices_per_block(c);
        let block = group_block_bytes(group_of(c));
        model(PREEMPTIONS_LARGE, move || {
            let m = Model::new(1, edge_slices(c));
            set_host_thread_index(0);
            let t0 = take_slices(&m.heap, c, per).unwrap();
            let t1 = take_slices(&m.heap, c, 2 * per).unwrap();
            assert_eq!((t1.base, t1.got, t1.base2, t1.got2), (MEM + block, per, MEM + 2 * block, per));
            let t2 = take_slices(&m.heap, c, 1).unwrap();
            assert_eq!(t2.base, MEM + 3 * block);
            let s = m.heap.validate().expect("validator");
            assert_eq!(s.slice_blocks[c], 7, "{s:?}");
            let owned = t2.base;
            let f = m.clone();
            let freer = thread::spawn(move || {
                set_host_thread_index(1);
                f.cells.write(owned as *mut u8);
                // SAFETY: `owned` is the slice of the take above, handed to this thread alone, freed once and
                // not used after.
                unsafe { f.heap.free(owned as *mut u8) };
            });
            let w = m.clone();
            let sweeper = thread::spawn(move || {
                set_host_thread_index(2);
                w.heap.slots().trim_idle();
            });
            let t = m.clone();
            let taker = thread::spawn(move || {
                set_host_thread_index(0);
                let got = take_slices(&t.heap, c, take);
                if let Some(g) = &got {
                    write_edges(&t, c, g);
                }
                got
            });
            freer.join().unwrap();
            sweeper.join().unwrap();
            let got = taker.join().unwrap().expect("a heap with room");
            for t in [t0, t1, got] {
                give_back(&m, c, &t);
            }
            // SAFETY: no pointer to free.
            unsafe { m.check_whole(&[], (0, 0, 0)) };
        });
    }

    /// A take of `per` slices (two pieces, or the rest of a shrunk run then an install, or a
    /// fresh run on a retired slot, maybe block 3 again).
    #[test]
    fn a_shrink_of_a_four_block_run_races_a_take_and_a_free() {
        run_of_four_races_a_take_the_sweep_and_a_free(slices_per_block(class_of(SIZE)));
    }

    /// A take of 3 * per slices from index 1 of the run [3..6] (two pieces, the excess given
    /// back by the taker).
    #[test]
    fn a_take_past_two_blocks_races_the_sweep_and_a_free() {
        run_of_four_races_a_take_the_sweep_and_a_free(3 * slices_per_block(class_of(SIZE)));
    }

    /// A malloc of a unit run (5 blocks of 64 KiB) from group 0's run row races a host trim,
    /// which takes the row's segment out of its slot and gives back the blocks it has not handed
    /// out; a one-segment heap, so the run comes from the row's segment or, after the trim,
    /// from the group's tree: never null (before the trim's give-back was a reclaim window,
    /// the malloc found both trees empty and returned null).
    #[test]
    fn a_trim_of_a_run_row_races_a_malloc_of_a_run() {
        const RUN: u64 = 300_000;
        model(PREEMPTIONS_LARGE, move || {
            let m = Model::new(1, (0..256u64).map(|b| MEM + b * (64 << 10)).collect());
            set_host_thread_index(0);
            let first = m.heap.malloc(RUN);
            assert!(!first.is_null());
            m.cells.write(first);
            let t = m.clone();
            let taker = thread::spawn(move || {
                set_host_thread_index(0);
                let p = t.heap.malloc(RUN);
                assert!(!p.is_null(), "null from a heap with room");
                t.cells.write(p);
                p as u64
            });
            let r = m.clone();
            let trimmer = thread::spawn(move || {
                set_host_thread_index(1);
                r.heap.trim();
            });
            let p = taker.join().unwrap();
            trimmer.join().unwrap();
            assert!((first as u64).abs_diff(p) >= 5 * (64 << 10), "overlapping runs {first:?} {p:#x}");
            // SAFETY: first and p came from the mallocs above (asserted apart), live, owned here, unused
            // after.
            unsafe { m.check_whole(&[first, p as *mut u8], (0, 0, 0)) };
        });
    }

    /// A class row's run of 8 blocks [7..14] (7 untouched) holds every free block of its group
    /// in a one-segment heap; a host trim retires it (giving its blocks back one by one) while
    /// a malloc of another class of the group looks for a block: never null (it was, before
    /// the trim's give-back was a reclaim window).
    #[test]
    fn a_trim_of_a_long_run_races_a_malloc_of_its_group() {
        let c = class_of(SIZE);
        let c2 = class_of(2048);
        let big = 8192u64;
        assert_eq!(group_of(c), group_of(c2));
        assert_eq!(group_of(c), group_of(class_of(big)));
        let per = slices_per_block(c);
        let block = group_block_bytes(group_of(c));
        model(PREEMPTIONS_LARGE, move || {
            let m = Model::new(1, (0..16u64).map(|b| MEM + b * block).collect());
            set_host_thread_index(0);
            let t0 = take_slices(&m.heap, c, per).unwrap();
            let t1 = take_slices(&m.heap, c, 2 * per).unwrap();
            let t2 = take_slices(&m.heap, c, 2 * per).unwrap();
            let t3 = take_slices(&m.heap, c, 2 * per).unwrap();
            assert_eq!((t3.base, t3.got2), (MEM + 5 * block, per), "{t3:?}");
            let t4 = take_slices(&m.heap, c, 1).unwrap();
            assert_eq!(t4.base, MEM + 7 * block, "the run of 8 from block 7");
            let t5 = take_slices(&m.heap, c2, 1).unwrap();
            assert_eq!(t5.base, MEM + 15 * block, "the last free block");
            let r = m.clone();
            let trimmer = thread::spawn(move || {
                set_host_thread_index(1);
                r.heap.trim_slot(c, 0);
            });
            let t = m.clone();
            let taker = thread::spawn(move || {
                set_host_thread_index(0);
                let p = t.heap.malloc(big);
                if p.is_null() {
                    panic!("null with 7 blocks of the group being given back");
                }
                t.cells.write(p);
                p as u64
            });
            trimmer.join().unwrap();
            let p = taker.join().unwrap();
            for t in [t0, t1, t2, t3, t4] {
                give_back(&m, c, &t);
            }
            give_back(&m, c2, &t5);
            // SAFETY: p came from the taker's malloc, live, owned here, unused after.
            unsafe { m.check_whole(&[p as *mut u8], (0, 0, 0)) };
        });
    }
    /// (8) A run that crosses segments (after a 5 MiB run at the start of segment 0: the rest
    /// of segment 0 and all of segment 1, in a heap of two) is freed while a trim of its
    /// second segment and a `malloc` of another group (16 B, which needs a free segment) race
    /// it. The free hands segment 1 straight back to the segment tree under the reclaim flag
    /// (`return_whole_segment`) and its blocks in segment 0 back to their tree; the trim must
    /// neither reclaim segment 1 a second time nor lose it; the malloc gets null only if it
    /// found nothing before or after its sweep (the run still live then), and else the first
    /// slice of segment 1, or of one of the run's blocks in segment 0 (a larger class of
    /// their group, as a request takes when its own group has no room): memory the run's
    /// owner wrote before its free.
    #[test]
    fn a_crossing_run_s_free_races_a_trim_and_a_malloc_of_another_group() {
        const FIRST: u64 = 5 << 20;
        const CROSSING: u64 = 27 << 20;
        const SEG: u64 = 1 << 24;
        assert_eq!(block_run_len(FIRST) + block_run_len(CROSSING), 2 * group_blocks_per_segment(RUN_GROUP));
        // The starts of the crossing run's blocks in segment 0, and segment 1's.
        let starts: Vec<u64> = (MEM + FIRST..=MEM + SEG).step_by(RUN_BLOCK_BYTES as usize).collect();
        model(PREEMPTIONS_LARGE, move || {
            let m = Model::new(2, [vec![MEM], starts.clone()].concat());
            set_host_thread_index(0);
            let p = m.heap.malloc(FIRST);
            let q = m.heap.malloc(CROSSING);
            let q = q as u64;
            assert_eq!((p as u64, q), (MEM, MEM + FIRST), "the runs fill the heap");
            let s = m.heap.validate().expect("the validator");
            assert_eq!(s.crossing_runs, 1, "{s:?}");
            m.cells.write(p);
            let (f, owned) = (m.clone(), starts.clone());
            let freer = thread::spawn(move || {
                set_host_thread_index(0);
                for &a in &owned {
                    f.cells.write(a as *mut u8);
                }
                // SAFETY: q came from the malloc above and is handed to this thread alone, freed once and not
                // used after.
                unsafe { f.heap.free(q as *mut u8) };
            });
            let t = m.clone();
            let trimmer = thread::spawn(move || {
                set_host_thread_index(1);
                t.heap.trim_segment(1);
            });
            set_host_thread_index(1);
            let r = m.heap.malloc(16);
            if !r.is_null() {
                assert!(starts.contains(&(r as u64)), "not the start of a freed block: {r:?}");
                m.cells.write(r);
            }
            freer.join().unwrap();
            trimmer.join().unwrap();
            let live: Vec<*mut u8> = [p, r].into_iter().filter(|x| !x.is_null()).collect();
            // SAFETY: p and r (when not null) came from the mallocs above, live, owned here, unused after.
            unsafe { m.check_whole(&live, (0, 0, r.is_null() as u64)) };
        });
    }
    /// (8b) A run over two segments whose free empties both (5 MiB from segment 0's start
    /// freed first, then the 16 MiB run after it: the rest of segment 0 and the first 20
    /// blocks of segment 1) reclaims each at once (`release_run`'s `trim_segment` of an end
    /// it empties), while a `malloc` of 5 MiB of the same group claims the lowest 20 free
    /// blocks (segment 0's first, freed before the race, or blocks the free inserts) and
    /// frees them. The claim may land between the reclaim's flag CAS and its removal (its
    /// release's subtraction then lags the removal, as in (6b)), or take blocks the free
    /// just inserted: no block may be reclaimed while out (the cells: the claimer writes its
    /// blocks after the freer wrote the run's), no segment may be lost or inserted twice (the
    /// validator and the whole heap at the end), and the malloc never gets null.
    #[test]
    fn a_crossing_run_s_free_reclaims_its_ends_while_its_group_claims() {
        const FIRST: u64 = 5 << 20;
        const CROSSING: u64 = 16 << 20;
        const SEG: u64 = 1 << 24;
        let bps = group_blocks_per_segment(RUN_GROUP) as u64;
        let first = block_run_len(FIRST) as u64;
        let starts: Vec<u64> = (0..2 * bps).map(|b| MEM + b * RUN_BLOCK_BYTES).collect();
        model(PREEMPTIONS_LARGE, move || {
            let m = Model::new(2, starts.clone());
            set_host_thread_index(0);
            let p = m.heap.malloc(FIRST);
            let q = m.heap.malloc(CROSSING) as u64;
            assert_eq!((p as u64, q), (MEM, MEM + FIRST), "the run after p crosses into segment 1");
            for b in 0..first {
                m.cells.write((MEM + b * RUN_BLOCK_BYTES) as *mut u8);
            }
            // SAFETY: p came from the malloc above, is freed once and not used after.
            unsafe { m.heap.free(p) };
            let s = m.heap.validate().expect("the validator");
            assert_eq!((s.free_segments, s.crossing_runs), (0, 1), "{s:?}");
            let f = m.clone();
            let freer = thread::spawn(move || {
                set_host_thread_index(0);
                for a in (q..q + CROSSING).step_by(RUN_BLOCK_BYTES as usize) {
                    f.cells.write(a as *mut u8);
                }
                // SAFETY: q came from the malloc above and is handed to this thread alone, freed once and not
                // used after.
                unsafe { f.heap.free(q as *mut u8) };
            });
            let c = m.clone();
            let claimer = thread::spawn(move || {
                set_host_thread_index(1);
                let r = c.heap.malloc(FIRST);
                assert!(!r.is_null(), "null from a heap with room");
                let r = r as u64;
                assert!(r + FIRST <= MEM + 2 * SEG, "{r:#x}");
                for a in (r..r + FIRST).step_by(RUN_BLOCK_BYTES as usize) {
                    c.cells.write(a as *mut u8);
                }
                // SAFETY: r came from the malloc above, is freed once and not used after.
                unsafe { c.heap.free(r as *mut u8) };
            });
            freer.join().unwrap();
            claimer.join().unwrap();
            let s = m.heap.validate().expect("the validator");
            assert_eq!(s.bytes_in_use, 0, "{s:?}");
            // SAFETY: no pointer to free.
            unsafe { m.check_whole(&[], (0, 0, 0)) };
        });
    }
    /// (9) Two requests that need fresh segments (20 MiB: two segments; 5 MiB: part of one)
    /// race each other and a host trim in a heap of three segments. Their runs never pass
    /// through the tree (`fresh_run` formats its segments with the run's blocks kept, and
    /// takes the free blocks before them with one exact removal), and fresh runs are taken one
    /// at a time: neither request may get null (a format into the tree followed by a claim from
    /// it lost the blocks to the other request or to the trim), the runs are disjoint, and the
    /// heap is whole after their frees.
    #[test]
    fn fresh_runs_race_each_other_and_a_trim() {
        const BIG: u64 = 20 << 20;
        const SMALL: u64 = 5 << 20;
        model(PREEMPTIONS_LARGE, move || {
            let m = Model::new(3, vec![]);
            let t = m.clone();
            let trimmer = thread::spawn(move || {
                set_host_thread_index(2);
                t.heap.trim();
            });
            let o = m.clone();
            let other = thread::spawn(move || {
                set_host_thread_index(1);
                o.heap.malloc(SMALL) as u64
            });
            set_host_thread_index(0);
            let big = m.heap.malloc(BIG) as u64;
            let small = other.join().unwrap();
            trimmer.join().unwrap();
            assert!(big != 0 && small != 0, "null from a heap with room: {big:#x} {small:#x}");
            assert!(big + BIG <= small || small + SMALL <= big, "overlapping runs {big:#x} {small:#x}");
            // SAFETY: big and small came from the mallocs above (asserted apart), live, owned here, unused
            // after.
            unsafe { m.check_whole(&[big as *mut u8, small as *mut u8], (0, 0, 0)) };
        });
    }

    // Free masks (classes of at most 64 slices a block): partial takes against the free that
    // completes a block, its recycle, and its next install.

    /// A block of mask class `c` (40 KB slices) wholly handed out on multiprocessor 0, with
    /// slices 0 and 1 freed: a partial take of one slice (multiprocessor 1) races the give-back
    /// of the block's other slices (multiprocessor 2), which recycles the block if the take has
    /// not cleared a bit, and (with `other`) a thread on multiprocessor 3 that mallocs `other`
    /// bytes twice and frees both, which may install the recycled block for that class: its
    /// mask is then the same two low bits, so the take's CAS may succeed on it and must give
    /// the bits back. Every slice has one owner at a time (the cells), and the heap is whole at
    /// the end.
    fn partial_take_races_the_last_give_back(other: Option<u64>) {
        let c = class_of(40_000);
        let c2 = class_of(other.unwrap_or(40_000));
        assert!(is_mask_class(c) && is_mask_class(c2) && group_of(c) == group_of(c2));
        let per = slices_per_block(c);
        let preemptions = if other.is_some() { PREEMPTIONS_LARGE } else { PREEMPTIONS };
        model(preemptions, move || {
            // The third thread's mallocs may take freed slices of block 0 (lowest first).
            let mut addrs = slices(c, 0..3, 4);
            addrs.extend(slices(c2, 0..3, 2));
            let m = Model::with_all_shards(1, addrs);
            set_host_thread_index(0);
            let t = take_slices(&m.heap, c, per).unwrap();
            assert_eq!((t.base, t.got), (MEM, per));
            // Slices 0 and 1 come back (their owners wrote them first).
            for r in 0..2 {
                m.cells.write(t.addr(r, slice_bytes(c)) as *mut u8);
                // SAFETY: slice r of the take above, owned by this thread, is freed once and not used after.
                unsafe { m.heap.free(t.addr(r, slice_bytes(c)) as *mut u8) };
            }
            let a = m.clone();
            let taker = thread::spawn(move || {
                set_host_thread_index(1);
                let (base, got) = a.heap.slots().take_partial(c, 1, u32::MAX);
                if got > 0 {
                    assert_eq!(got, 1);
                    // A slice of the class asked for (a block reinstalled for another class
                    // between the take's look and its CAS has smaller slices).
                    assert_eq!(a.heap.usable_size(base as *const u8), slice_bytes(c));
                    a.cells.write(base as *mut u8);
                }
                (got > 0).then_some(base)
            });
            let b = m.clone();
            let giver = thread::spawn(move || {
                set_host_thread_index(2);
                // SAFETY: slices 2 .. per of block 0 are the test's, handed to no one.
                unsafe { b.heap.slots().release_slices(0, 0, c, 2, per - 2) };
            });
            let o = m.clone();
            let third = other.map(|other| {
                thread::spawn(move || {
                    set_host_thread_index(3);
                    let ps = [o.heap.malloc(other), o.heap.malloc(other)];
                    for p in ps {
                        assert!(!p.is_null());
                        o.cells.write(p);
                    }
                    for p in ps {
                        // SAFETY: p came from this thread's malloc above, is freed once and not used after.
                        unsafe { o.heap.free(p) };
                    }
                })
            });
            let got = taker.join().unwrap();
            giver.join().unwrap();
            if let Some(t) = third {
                t.join().unwrap();
            }
            if let Some(base) = got {
                // A freed slice of its class: of block 0, or of the block the third thread
                // installed for it and freed.
                let in_block = (base - MEM) % group_block_bytes(group_of(c));
                assert!(in_block.is_multiple_of(slice_bytes(c)), "{base:#x}");
            }
            let mine: Vec<*mut u8> = got.into_iter().map(|b| b as *mut u8).collect();
            // SAFETY: `mine` is the taker's slice (if any), live, owned here, unused after.
            unsafe { m.check_whole(&mine, (0, 0, 0)) };
        });
    }

    #[test]
    fn a_partial_take_races_the_last_give_back() {
        partial_take_races_the_last_give_back(None);
    }

    #[test]
    fn a_partial_take_races_the_last_give_back_and_a_reinstall_for_another_class() {
        partial_take_races_the_last_give_back(Some(20_000));
    }

    /// A taker that finds a stale mark (block 0 marked, its mask empty: its one freed slice
    /// was taken again) drops it while the free of two other slices of the block makes the
    /// mask non-empty and marks the block (a no-op on the bit, or after the drop); with
    /// `second_taker`, another taker races both. At quiescence a block with free bits must be
    /// marked (the validator's `LostPartialMark`). From the review of r31: the models above
    /// pass without the taker's re-insert after a drop, or with a give-back that inserts only
    /// when the bit is clear; these fail both ways.
    fn stale_mark_drop_races_the_first_give_back(second_taker: bool) {
        let c = class_of(40_000);
        assert!(is_mask_class(c));
        let per = slices_per_block(c);
        let preemptions = if second_taker { PREEMPTIONS_LARGE } else { PREEMPTIONS };
        model(preemptions, move || {
            let m = Model::with_all_shards(1, slices(c, 0..2, per));
            set_host_thread_index(0);
            let t = take_slices(&m.heap, c, per).unwrap();
            assert_eq!((t.base, t.got), (MEM, per));
            let s0 = t.addr(0, slice_bytes(c)) as *mut u8;
            m.cells.write(s0);
            // SAFETY: s0 is slice 0 of the take above, owned here, freed once and not used after.
            unsafe { m.heap.free(s0) };
            // Taken again: the mask is empty, the mark stays (stale).
            let (b, n) = m.heap.slots().take_partial(c, 1, PARTIAL_VISITS);
            assert_eq!((b, n), (MEM, 1));
            m.cells.write(b as *mut u8);
            let takers: Vec<_> = (0..1 + second_taker as u64)
                .map(|i| {
                    let a = m.clone();
                    thread::spawn(move || {
                        set_host_thread_index(1 + i);
                        let (b, n) = a.heap.slots().take_partial(c, 1, PARTIAL_VISITS);
                        (n > 0).then(|| {
                            a.cells.write(b as *mut u8);
                            b
                        })
                    })
                })
                .collect();
            let g = m.clone();
            let (s5, s7) = (t.addr(5, slice_bytes(c)), t.addr(7, slice_bytes(c)));
            let giver = thread::spawn(move || {
                set_host_thread_index(3);
                for s in [s5, s7] {
                    g.cells.write(s as *mut u8);
                    // SAFETY: s5 and s7 are slices of the take above handed to this thread alone, each freed
                    // once and not used after.
                    unsafe { g.heap.free(s as *mut u8) };
                }
            });
            let got: Vec<u64> = takers.into_iter().filter_map(|h| h.join().unwrap()).collect();
            giver.join().unwrap();
            m.heap.validate().expect("no partial block unmarked");
            let mut live: Vec<*mut u8> = (0..per)
                .filter(|&r| r != 0 && r != 5 && r != 7)
                .map(|r| t.addr(r, slice_bytes(c)) as *mut u8)
                .collect();
            live.push(b as *mut u8);
            live.extend(got.iter().map(|&b| b as *mut u8));
            // SAFETY: `live` lists the slices still out (the take's but 0, 5 and 7, the partial take's
            // and the takers'), each owned here once, unused after.
            unsafe { m.check_whole(&live, (0, 0, 0)) };
        });
    }

    #[test]
    fn a_stale_mark_drop_races_the_first_give_back() {
        stale_mark_drop_races_the_first_give_back(false);
    }

    #[test]
    fn two_stale_mark_drops_race_the_first_give_back() {
        stale_mark_drop_races_the_first_give_back(true);
    }

    /// A booted heap (segment 0 formatted ahead for `SIZE`'s group, segment 1 for `OTHER`'s,
    /// both marked booted): a take of 8 blocks' worth of `SIZE` slices claims half of segment
    /// 0 and so takes back booted segment 1 (`take_back_after` -> `trim_segment`) while a
    /// `malloc(OTHER)` of segment 1's own group claims from it (and, with `sweep`, a third
    /// thread trims segment 1). No other segment is free: the malloc either gets a block of
    /// segment 1 before the reclaim removes them (the reclaim gives up) or waits out the
    /// reclaim's window and formats segment 1 again; no null, and the heap is whole after.
    /// (Review of r32; a mutant that put segment 1 in the segment tree without taking its
    /// blocks fails with `SegmentTreeMismatch`.)
    fn take_back_races_its_group(sweep: bool) {
        let (c1, c2) = (class_of(SIZE), class_of(OTHER));
        let (g1, g2) = (group_of(c1), group_of(c2));
        assert_ne!(g1, g2);
        let per1 = slices_per_block(c1);
        model(if sweep { PREEMPTIONS_LARGE } else { PREEMPTIONS }, move || {
            let seg = 1u64 << 24;
            let cells: Vec<u64> = (0..group_blocks_per_segment(g2))
                .map(|b| MEM + seg + b as u64 * group_block_bytes(g2))
                .collect();
            let m = Model::new(2, cells);
            set_host_thread_index(3);
            assert!(m.heap.blocks().preformat(g1, 1));
            assert!(m.heap.blocks().preformat(g2, 1));
            let a = m.clone();
            let taker = thread::spawn(move || {
                set_host_thread_index(0);
                take_slices(&a.heap, c1, 8 * per1)
            });
            let sweeper = sweep.then(|| {
                let w = m.clone();
                thread::spawn(move || {
                    set_host_thread_index(2);
                    w.heap.blocks().trim_segment(1);
                })
            });
            set_host_thread_index(1);
            let q = m.heap.malloc(OTHER);
            assert!(!q.is_null(), "null from a heap with room (the take-back's window)");
            m.cells.write(q);
            assert_eq!((q as u64 - MEM) >> 24, 1, "the booted group stays in segment 1");
            let t = taker.join().unwrap().expect("a heap with room");
            if let Some(s) = sweeper {
                s.join().unwrap();
            }
            // Quiescent, with the live slices: trees, table and counts agree.
            m.heap.validate().expect("the validator, with the slices live");
            give_back(&m, c1, &t);
            // SAFETY: q came from the malloc above, live, owned here, unused after.
            unsafe { m.check_whole(&[q], (0, 0, 0)) };
        });
    }

    /// (10) The boot's block for slot 0 of the 16-byte row (`Slots::preinstall`) races the
    /// first malloc of 16 bytes on that multiprocessor, which finds the slot empty and is
    /// elected to install a block itself: exactly one of them installs (the boot's CAS fails
    /// if the malloc's add came first, and its block goes back), the malloc gets a slice of
    /// the block installed, and its free, before the boot thread is joined, reads the block's
    /// kind as the install published it (a mutant that installs after the CAS counts a double
    /// free; review of r33); the heap is whole after a trim.
    #[test]
    fn a_boot_slot_races_the_first_malloc_of_its_class() {
        let c = BOOT_SLOT_CLASS;
        let size = slice_bytes(c);
        model(PREEMPTIONS, move || {
            // Claims spread over the lowest word's blocks: any of them may serve.
            let m = Model::new(1, slices(c, 0..group_blocks_per_segment(group_of(c)), 1));
            let b = m.clone();
            let boot = thread::spawn(move || {
                set_host_thread_index(1);
                b.heap.slots().preinstall(c, 0)
            });
            set_host_thread_index(0);
            let p = m.heap.malloc(size);
            assert!(!p.is_null(), "null from a heap with room");
            m.cells.write(p);
            // SAFETY: p came from the malloc above, is freed once and not used after.
            unsafe { m.heap.free(p) };
            let installed = boot.join().unwrap();
            let s = m.heap.validate().expect("the validator");
            assert_eq!(s.slice_blocks[c], 1, "one block installed, booted or not ({installed})");
            // SAFETY: no pointer to free.
            unsafe { m.check_whole(&[], (0, 0, 0)) };
        });
    }

    /// (11) On-demand installs (`installs_on_demand`, the 16-byte class): a block's last
    /// slice is taken by one of two racing takes, which empties the slot (`Slots::vacate`)
    /// unless the other take came after it on the run, then installs at once; the other take
    /// gets the last slice, or waits for that install, or finds the slot empty and installs
    /// itself; with `trim`, a trim retires the slot meanwhile. Neither take returns null (a
    /// vacate that left a waiting taker without an install would: the wait ends and nothing is
    /// left to steal), each slice is handed out once, and the heap is whole after the frees.
    fn vacate_races_a_take(trim: bool) {
        let c = BOOT_SLOT_CLASS;
        assert!(installs_on_demand(c));
        let (g, per) = (group_of(c), slices_per_block(c));
        // Two preemptions for both: a trim between the exhauster's add and its CAS needs them
        // (at one, a vacate that swaps to 0 unconditionally passed; review of r34).
        model(PREEMPTIONS, move || {
            let blocks = group_blocks_per_segment(g);
            let last = (0..blocks)
                .map(|b| MEM + b as u64 * group_block_bytes(g) + (per - 1) as u64 * slice_bytes(c));
            // A trim may give the last slice back first: then both take from the next block.
            let m = Model::new(1, [slices(c, 0..blocks, 2), last.collect()].concat());
            set_host_thread_index(0);
            // All but the last slice of a block, given back at the end.
            let first = take_in_row(&m.heap.slots(), c, per - 1).expect("a fresh heap");
            assert_eq!((first.got, first.got2), (per - 1, 0));
            let takers: Vec<_> = (0..2)
                .map(|_| {
                    let t = m.clone();
                    thread::spawn(move || {
                        set_host_thread_index(0);
                        let p = take_in_row(&t.heap.slots(), c, 1).expect("null from a heap with room").base;
                        t.cells.write(p as *mut u8);
                        p
                    })
                })
                .collect();
            if trim {
                set_host_thread_index(1);
                m.heap.trim_slot(c, 0);
            }
            let ps: Vec<u64> = takers.into_iter().map(|h| h.join().unwrap()).collect();
            assert_ne!(ps[0], ps[1], "one slice handed out twice");
            let local = ((first.base - MEM) / group_block_bytes(g)) as u32;
            // SAFETY: the block's slices but the takers' one are the test's, handed to no one.
            unsafe { m.heap.slots().release_slices(0, local, c, 0, per - 1) };
            let ptrs: Vec<*mut u8> = ps.iter().map(|&p| p as *mut u8).collect();
            // SAFETY: ps are the takers' slices (asserted distinct), live, owned here, unused after.
            unsafe { m.check_whole(&ptrs, (0, 0, 0)) };
        });
    }

    #[test]
    fn a_vacate_races_a_take() {
        vacate_races_a_take(false);
    }

    #[test]
    fn a_vacate_races_a_take_and_a_trim() {
        vacate_races_a_take(true);
    }

    #[test]
    fn a_take_back_races_a_malloc_of_the_booted_group() {
        take_back_races_its_group(false);
    }

    #[test]
    fn a_take_back_races_a_malloc_of_the_booted_group_and_a_trim() {
        take_back_races_its_group(true);
    }

    /// (12) An install that asks for a whole segment's blocks at once (512 slices of 32 KiB,
    /// 32 to a 1 MiB block: sixteen blocks) races the take-back of a pending segment of its
    /// group (segment 0, formatted for the 1 MiB group with every block back in the tree).
    /// Whether the install sees the tree's blocks (`claim_blocks`) or, after the reclaim, an
    /// empty tree (`Blocks::claim_whole_fresh_segment`: a fresh segment, every block kept),
    /// it gets its blocks from a heap with nothing else live, no block is had twice (the
    /// validator), and the heap is whole at the end (r48).
    #[test]
    fn a_whole_segment_install_races_the_take_back_of_its_group_s_segment() {
        const BIG: u64 = 32 << 10;
        let c = class_of(BIG);
        assert_eq!(group_of(c), group_of(class_of(SIZE)));
        assert_eq!(slices_per_block(c) * group_blocks_per_segment(group_of(c)), 512);
        model(PREEMPTIONS_LARGE, move || {
            let m = Model::new(2, vec![]);
            let reclaimer = pending_then_trim(&m, SIZE, class_of(SIZE));
            let t = take_slices(&m.heap, c, 512).expect("a heap with nothing live");
            reclaimer.join().unwrap();
            let ptrs: Vec<*mut u8> = (0..t.total()).map(|r| t.addr(r, BIG) as *mut u8).collect();
            // SAFETY: the take's two pieces are live and owned here (the rest of the take
            // went back in `took`), each freed once, unused after.
            unsafe { m.check_whole(&ptrs, (0, 0, 0)) };
        });
    }
}
