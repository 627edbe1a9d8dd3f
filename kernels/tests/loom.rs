//! loom models of the claim/release races: run with
//! `RUSTFLAGS="--cfg loom" cargo test -p veballoc-kernels --test loom --release`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use veballoc_kernels::atomic::Atom64;
use veballoc_kernels::block::{BlockMeta, Take};
use veballoc_kernels::veb::{Veb, VebLayout};

/// Two levels (65 indices: two leaf words and a summary word).
fn tree() -> Arc<(Vec<Atom64>, VebLayout)> {
    let l = VebLayout::new(65);
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

/// Bumping the block counter: two warps take slices of one epoch while a third, holding a
/// stale epoch, bumps too. No slice is handed out twice, and the slices the stale warp took
/// come back, so that the block's accounting still ends at exactly 4096.
#[test]
fn block_counter_take_and_stale() {
    loom::model(|| {
        let m = Arc::new(BlockMeta::new_parked());
        let e = m.install(veballoc_kernels::block::KIND_SLICES);
        // Pretend the block is nearly full so the race crosses the end.
        m.alloc.fetch_add_acq_rel(4090);
        let hs: Vec<_> = [(e, 4u32), (e, 4), (e.wrapping_sub(1), 3)]
            .into_iter()
            .map(|(epoch, n)| {
                let m = m.clone();
                thread::spawn(move || m.take(epoch, n))
            })
            .collect();
        let takes: Vec<Take> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        let mut handed = Vec::new();
        let mut phantom = 0;
        for t in takes {
            match t {
                Take::Fresh { start, got, .. } => handed.extend(start..start + got),
                Take::Stale { got } => phantom += got,
            }
        }
        handed.sort();
        let before = handed.len();
        handed.dedup();
        assert_eq!(before, handed.len(), "a slice was handed out twice");
        // The first 4090 "were handed out earlier": give back everything; exactly the last
        // give-back completes the block.
        assert!(!m.give_back(4090));
        let last = m.give_back(handed.len() as u32 + phantom);
        assert_eq!(last, 4090 + handed.len() as u32 + phantom == 4096);
        assert_eq!(handed.len() as u32 + phantom, 6, "all 6 remaining slices accounted for");
    });
}

/// Closing a block (trim) races with a taker: every slice is either taken or returned by
/// the close, never both.
#[test]
fn close_races_take() {
    loom::model(|| {
        let m = Arc::new(BlockMeta::new_parked());
        let e = m.install(veballoc_kernels::block::KIND_SLICES);
        m.alloc.fetch_add_acq_rel(4094);
        let a = m.clone();
        let taker = thread::spawn(move || a.take(e, 2));
        let b = m.clone();
        let closer = thread::spawn(move || b.close(e));
        let took = match taker.join().unwrap() {
            Take::Fresh { got, .. } => got,
            Take::Stale { .. } => panic!("same epoch"),
        };
        let closed = closer.join().unwrap();
        assert_eq!(took + closed, 2);
    });
}
