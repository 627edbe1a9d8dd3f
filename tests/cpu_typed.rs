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

/// Zero-sized values with a small and a larger-than-a-segment alignment.
#[derive(Debug, PartialEq)]
struct Unit;
#[repr(align(33554432))]
#[derive(Debug, PartialEq)]
struct HugeAlignedUnit;

/// Runs `f` on a thread with a large stack (values of large alignment or size live there).
fn on_big_stack(f: impl FnOnce() + Send + 'static) {
    let stack_bytes = 256 << 20;
    std::thread::Builder::new().stack_size(stack_bytes).spawn(f).unwrap().join().unwrap();
}

#[test]
fn zero_sized_values_never_allocate() {
    on_big_stack(zero_sized_values);
}

fn zero_sized_values() {
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    let unit = DBox::new(h, ()).expect("a zero-sized box needs no memory");
    let u = DBox::new(h, Unit).expect("a zero-sized box needs no memory");
    let big =
        DBox::new(h, HugeAlignedUnit).expect("a zero-sized box needs no memory, whatever its alignment");
    assert_eq!(big.as_ptr() as usize % std::mem::align_of::<HugeAlignedUnit>(), 0);
    assert_eq!((*unit, &*u, &*big), ((), &Unit, &HugeAlignedUnit));
    let raw = big.into_raw();
    // SAFETY: raw comes from into_raw on this heap and is taken back once.
    let big = unsafe { DBox::from_raw(h, raw) };
    let mut v = DVec::<HugeAlignedUnit>::new(h);
    for _ in 0..1000 {
        v.push(HugeAlignedUnit).expect("zero-sized elements need no memory");
    }
    assert_eq!(v.len(), 1000);
    assert_eq!(v.as_slice().as_ptr() as usize % std::mem::align_of::<HugeAlignedUnit>(), 0);
    assert_eq!(h.validate().unwrap().bytes_in_use, 0, "nothing allocated");
    drop((unit, u, big, v));
    assert_empty(&cpu);
}

/// Types whose alignment may exceed the CPU heap's base alignment (4 KiB).
macro_rules! aligned_types {
    ($($name:ident = $align:literal),*) => {$(
        #[repr(C, align($align))]
        struct $name {
            tag: u64,
        }
    )*};
}
aligned_types!(Align8K = 8192, Align64K = 65536, Align1M = 1048576);

/// Boxes and vectors of `T` on `cpu`: each value lands at a multiple of `align_of::<T>()`,
/// or is refused (given back) when the heap cannot align it; returns whether it was refused.
fn box_and_vec_of<T>(cpu: &CpuHeap, make: impl Fn(u64) -> T, tag: impl Fn(&T) -> u64) -> bool {
    let h = cpu.heap();
    let align = std::mem::align_of::<T>();
    let refused = match DBox::new(h, make(7)) {
        Ok(b) => {
            assert_eq!(b.as_ptr() as usize % align, 0, "a box of a {align}-aligned type is misaligned");
            assert_eq!(tag(&b), 7);
            false
        }
        Err(back) => {
            assert_eq!(tag(&back), 7, "the value comes back intact");
            true
        }
    };
    let mut v = DVec::<T>::new(h);
    for i in 0..3 {
        match v.push(make(i)) {
            Ok(()) => assert_eq!(v.as_slice().as_ptr() as usize % align, 0, "a vector of {align}-aligned Ts"),
            Err(back) => {
                assert!(refused, "refused as a vector but not as a box");
                assert_eq!(tag(&back), i);
            }
        }
    }
    assert_eq!(v.iter().map(&tag).sum::<u64>(), if refused { 0 } else { 3 });
    drop(v);
    refused
}

#[test]
fn large_alignments_are_honoured_absolutely_or_refused() {
    // The values are large (as large as their alignment): a big stack for the moves.
    on_big_stack(|| {
        let cpu = CpuHeap::new(8, 1);
        let base = cpu.heap().mem();
        let r8k = box_and_vec_of(&cpu, |t| Align8K { tag: t }, |a| a.tag);
        let r64k = box_and_vec_of(&cpu, |t| Align64K { tag: t }, |a| a.tag);
        let r1m = box_and_vec_of(&cpu, |t| Align1M { tag: t }, |a| a.tag);
        // Refused exactly when segment 0 is less aligned than the type.
        for (refused, align) in [(r8k, 8192u64), (r64k, 65536), (r1m, 1 << 20)] {
            assert_eq!(refused, !base.is_multiple_of(align), "align {align}, heap base {base:#x}");
        }
        println!("heap base {base:#x}: refused 8K {r8k}, 64K {r64k}, 1M {r1m}");
        assert_empty(&cpu);
    });
}

/// Values aligned to 128 KiB .. 16 MiB (above the 64 KiB blocks that runs are made of): each
/// box and vector is aligned for its type, also after other runs left the next free block
/// unaligned. (Before, `DBox` asked `malloc` for the size alone: a 512 KiB type got a run of
/// 64 KiB blocks, a 2 MiB type one of 256 KiB blocks, aligned to their blocks only.)
#[test]
fn values_aligned_above_a_block_are_aligned() {
    on_big_stack(large_alignments);
}

#[repr(C, align(131072))]
struct A128K([u8; 131072]);
#[repr(C, align(524288))]
struct A512K([u8; 524288]);
#[repr(C, align(2097152))]
struct A2M([u8; 2097152]);
#[repr(C, align(16777216))]
struct A16M([u8; 16]);

fn large_alignments() {
    fn aligned<T>(p: *mut T) -> bool {
        (p as usize).is_multiple_of(std::mem::align_of::<T>())
    }
    let cpu = CpuHeap::new(32, 1);
    let h = cpu.heap();
    // Runs of 5 blocks of 64 KiB and of 5 of 256 KiB first: the next free blocks are not
    // aligned to more than a block.
    let odd = (DBox::new(h, [1u8; 300_000]).ok().unwrap(), DBox::new(h, [2u8; 1_200_000]).ok().unwrap());
    let a = DBox::new(h, A128K([3; 131072])).ok().expect("room");
    let b = DBox::new(h, A512K([4; 524288])).ok().expect("room");
    let c = DBox::new(h, A2M([5; 2097152])).ok().expect("room");
    let d = DBox::new(h, A16M([6; 16])).ok().expect("room");
    assert!(aligned(a.as_ptr()) && aligned(b.as_ptr()) && aligned(c.as_ptr()) && aligned(d.as_ptr()));
    assert_eq!((a.0[131071], b.0[524287], c.0[2097151], d.0[15]), (3, 4, 5, 6));
    let mut v = DVec::<A512K>::new(h);
    for i in 0..6u8 {
        v.push(A512K([i; 524288])).ok().expect("room");
        assert!(aligned(v.as_slice().as_ptr() as *mut A512K), "after {} pushes", i + 1);
    }
    assert!(v.iter().enumerate().all(|(i, x)| x.0[0] == i as u8 && x.0[524287] == i as u8));
    drop((odd, a, b, c, d, v));
    assert_empty(&cpu);
}

/// A growing vector's capacity: at least four elements (and 16 bytes' worth) at first, then
/// doubling when full, so that pushes cost amortised O(1) copies.
#[test]
fn vectors_start_at_four_elements_and_double() {
    // Each class formats its own segment: room for the three the vectors take.
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    let mut v = DVec::<u32>::new(h);
    v.push(0).unwrap();
    assert_eq!(v.capacity(), 4, "16 bytes of u32");
    for i in 1..4 {
        v.push(i).unwrap();
    }
    assert_eq!(v.capacity(), 4);
    v.push(4).unwrap();
    assert_eq!(v.capacity(), 8, "full: doubled");
    assert_eq!(v.as_slice(), [0, 1, 2, 3, 4]);
    let mut w = DVec::<[u64; 4]>::new(h);
    w.push([7; 4]).unwrap();
    assert_eq!(w.capacity(), 4, "at least four elements, however large");
    drop((v, w));
    assert_empty(&cpu);
}
