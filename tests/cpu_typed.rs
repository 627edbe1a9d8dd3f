//! Typed handles (`DBox`, `DVec`) on the CPU model: alignment, drop, growth, raw round trips.

use std::sync::atomic::{AtomicUsize, Ordering};

use veballoc::kernels::cpu::CpuHeap;
use veballoc::kernels::{DBox, DVec, RawVec};

static DROPS: AtomicUsize = AtomicUsize::new(0);

/// A value with a large alignment and a drop that counts.
#[repr(C, align(256))]
struct Aligned {
    id: u64,
    pad: [u8; 40],
}

impl Drop for Aligned {
    fn drop(&mut self) {
        DROPS.fetch_add(1, Ordering::Relaxed);
    }
}

fn assert_empty(cpu: &CpuHeap) {
    let h = cpu.heap();
    h.trim();
    let s = h.validate().unwrap();
    assert_eq!((s.bytes_in_use, s.blocks_in_use()), (0, 0), "{s:?}");
    assert_eq!(s.double_frees + s.invalid_frees, 0, "{s:?}");
}

#[test]
fn boxes_respect_alignment_and_drop_their_value() {
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    let before = DROPS.load(Ordering::Relaxed);
    {
        let boxes: Vec<_> = (0..100)
            .map(|i| DBox::new(h, Aligned { id: i, pad: [i as u8; 40] }).ok().expect("heap has room"))
            .collect();
        for (i, b) in boxes.iter().enumerate() {
            assert_eq!(b.as_ptr() as usize % 256, 0, "align_of respected");
            assert_eq!((b.id, b.pad[39]), (i as u64, i as u8));
        }
        let raw = DBox::new(h, 7u64).ok().unwrap().into_raw();
        // SAFETY: raw comes from into_raw on this heap and is taken back once.
        let back = unsafe { DBox::from_raw(h, raw) };
        assert_eq!(*back, 7);
        let unit = DBox::new(h, ()).ok().unwrap(); // zero-sized: no allocation
        drop(unit);
    }
    assert_eq!(DROPS.load(Ordering::Relaxed) - before, 100);
    assert_empty(&cpu);
}

#[test]
fn vectors_grow_shrink_and_survive_a_raw_round_trip() {
    // A growing vector passes through every size class, and each class formats its own
    // segment: 16 segments leave room for that.
    let cpu = CpuHeap::new(16, 1);
    let h = cpu.heap();
    let mut v = DVec::<u32>::new(h);
    assert!(v.is_empty() && v.as_slice().is_empty());
    for i in 0..100_000u32 {
        v.push(i.wrapping_mul(2_654_435_761)).unwrap();
    }
    assert_eq!(v.len(), 100_000);
    assert!(v.capacity() >= 100_000 && v.capacity() < 200_000 + 4);
    assert!(v.iter().enumerate().all(|(i, &x)| x == (i as u32).wrapping_mul(2_654_435_761)));
    assert_eq!(v.pop(), Some(99_999u32.wrapping_mul(2_654_435_761)));
    // Persist it as raw parts (what a kernel leaves in device memory), then take it back.
    let raw: RawVec<u32> = v.into_raw();
    assert_eq!((raw.len, raw.ptr.is_null()), (99_999, false));
    // SAFETY: raw comes from into_raw on this heap.
    let mut v = unsafe { DVec::from_raw(h, raw) };
    v[0] = 42;
    assert_eq!(v[0], 42);
    v.clear();
    assert!(v.is_empty() && v.capacity() > 0);
    drop(v);
    // A zeroed RawVec is an empty vector.
    // SAFETY: an all-zeros RawVec owns nothing.
    let mut z = unsafe { DVec::<Aligned>::from_raw(h, RawVec::EMPTY) };
    let before = DROPS.load(Ordering::Relaxed);
    for i in 0..50 {
        z.push(Aligned { id: i, pad: [0; 40] }).ok().unwrap();
        assert_eq!(z.as_slice().as_ptr() as usize % 256, 0);
    }
    assert_eq!(z.iter().map(|a| a.id).sum::<u64>(), 49 * 50 / 2);
    drop(z);
    assert_eq!(DROPS.load(Ordering::Relaxed) - before, 50);
    assert_empty(&cpu);
}

#[test]
fn a_full_heap_gives_values_back() {
    let cpu = CpuHeap::new(16, 1);
    let h = cpu.heap();
    let mut v = DVec::<[u64; 512]>::new(h);
    let mut pushed = 0u64;
    loop {
        match v.push([pushed; 512]) {
            Ok(()) => pushed += 1,
            Err(back) => {
                assert_eq!(back[0], pushed, "the value comes back intact");
                break;
            }
        }
        assert!(pushed < 1 << 16, "a 256 MiB heap cannot hold 256 MiB of elements plus a copy");
    }
    // Doubling needs the old and the new array at once: at least a quarter of the heap.
    assert!(pushed * 4096 >= 64 << 20, "{pushed} elements");
    assert!(v.iter().enumerate().all(|(i, a)| a[511] == i as u64));
    drop(v);
    assert_empty(&cpu);
}
