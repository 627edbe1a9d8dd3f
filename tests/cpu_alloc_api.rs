//! The heap as a `core::alloc::Allocator` (issue 12.1) on the CPU model: the standard
//! collections over the same allocator source the GPU runs.
#![feature(allocator_api, btreemap_alloc)]

use std::alloc::Layout;
use std::collections::BTreeMap;
use veballoc::kernels::alloc_api::MIN_ALIGN;
use veballoc::kernels::cpu::CpuHeap;
use veballoc::kernels::{DeviceHeap, Stats};

fn stats(h: &DeviceHeap) -> Stats {
    h.validate().unwrap_or_else(|e| panic!("heap inconsistent: {e:?}"))
}

fn assert_empty(h: &DeviceHeap) {
    h.trim();
    let s = stats(h);
    assert_eq!(s.bytes_in_use, 0, "{s:?}");
}

#[test]
fn vec_box_and_btreemap_live_in_the_heap() {
    let cpu = CpuHeap::with_checks(8, 4, false);
    let h = cpu.heap();
    let (lo, hi) = (h.mem(), h.mem() + h.capacity());
    {
        let mut v: Vec<u32, &DeviceHeap> = Vec::new_in(h);
        for i in 0..100_000u32 {
            v.push(i);
        }
        let at = v.as_ptr() as u64;
        assert!((lo..hi).contains(&at), "the Vec's buffer is in the heap");
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
        assert!(stats(h).bytes_in_use >= 400_000);
        let b = Box::new_in([7u64; 300], h);
        assert!((lo..hi).contains(&(b.as_ptr() as u64)));
        let mut m: BTreeMap<u64, Vec<u8, &DeviceHeap>, &DeviceHeap> = BTreeMap::new_in(h);
        for k in 0..2000u64 {
            let mut bytes = Vec::new_in(h);
            bytes.extend_from_slice(&k.to_le_bytes());
            m.insert(k * 7919 % 2003, bytes);
        }
        assert_eq!(m.len(), 2000);
        assert!(m.values().all(|b| b.len() == 8));
        let mut s: Vec<u8, &DeviceHeap> = Vec::new_in(h);
        use std::io::Write;
        let word = "formatted";
        write!(&mut s, "{word} {}", 6 * 7).unwrap();
        assert_eq!(&s[..], b"formatted 42");
    }
    assert_empty(h);
}

/// Every power-of-two alignment the heap's base allows is honoured exactly (the CPU-model
/// heap's base and the device heap's are 16 MiB-aligned), larger ones are an error, never a
/// misaligned pointer. (With a 16 MiB-aligned base, 128 KiB..1 MiB alignments were refused:
/// their power-of-two requests took runs of 64 KiB blocks.)
#[test]
fn alignments_are_honoured_or_refused() {
    use std::alloc::Allocator;
    let cpu = CpuHeap::with_checks(8, 4, false);
    let h = cpu.heap();
    let base_align = 1usize << h.mem().trailing_zeros().min(24);
    for shift in 0..=24u32 {
        let align = 1usize << shift;
        // 64 KiB + 1 and 1 MiB: runs of 64 KiB blocks, cut to an aligned start (at 16 MiB
        // from runs of 257..271 blocks, which cross a segment end).
        // 24, 72, 100, 120: sizes of the 8-byte-aligned classes (24, 72, 104, 120 B).
        for size in [1usize, 24, 72, 100, 120, 240, 65537, 1 << 20, align, 3 * align + 5] {
            let layout = Layout::from_size_align(size, align).unwrap();
            match h.allocate(layout) {
                Ok(p) => {
                    let a = p.as_ptr() as *mut u8 as usize;
                    assert_eq!(a % align, 0, "size {size}, align {align}: misaligned");
                    assert!(p.len() >= size);
                    // SAFETY: allocated above with this layout.
                    unsafe { h.deallocate(p.cast(), layout) };
                }
                Err(_) => assert!(align > base_align.max(MIN_ALIGN), "size {size}, align {align} refused"),
            }
        }
    }
    #[repr(align(4096))]
    struct Page([u8; 4096]);
    let b = Box::new_in(Page([1; 4096]), h);
    assert_eq!(&*b as *const Page as usize % 4096, 0);
    assert_eq!(b.0[4095], 1);
    drop(b);
    assert_empty(h);
}

/// Zero-sized values never allocate; a full heap is an error for the try-APIs.
#[test]
fn zero_sized_values_take_nothing_and_full_is_an_error() {
    let cpu = CpuHeap::with_checks(2, 1, false);
    let h = cpu.heap();
    let unit = Box::new_in((), h);
    let mut zs: Vec<(), &DeviceHeap> = Vec::new_in(h);
    for _ in 0..1000 {
        zs.push(());
    }
    assert_eq!(stats(h).bytes_in_use, 0, "zero-sized values took memory");
    drop((unit, zs));
    let mut big: Vec<u8, &DeviceHeap> = Vec::new_in(h);
    assert!(big.try_reserve(3 << 24).is_err(), "more than the heap holds");
    assert!(big.try_reserve(1 << 20).is_ok());
    assert!(Box::try_new_in([0u8; 64], h).is_ok());
    drop(big);
    assert_empty(h);
}

/// A Vec grows in place while its slice or block has room (usable size), and shrinks in place.
#[test]
fn vectors_grow_and_shrink_in_place_when_the_block_has_room() {
    let cpu = CpuHeap::with_checks(4, 1, false);
    let h = cpu.heap();
    let mut v: Vec<u8, &DeviceHeap> = Vec::with_capacity_in(100, h);
    v.extend(std::iter::repeat_n(1u8, 100));
    let p = v.as_ptr();
    // The slice the heap gave (100 bytes round up to their class).
    let slice = h.usable_size(p) as usize;
    assert!(slice > 100, "a class above 100 bytes: {slice}");
    v.reserve_exact(slice - 100); // exactly the slice: stays
    assert_eq!(v.as_ptr(), p, "grew within its slice");
    v.extend(std::iter::repeat_n(2u8, slice - 100));
    v.reserve_exact(1); // one byte past the slice: a new one
    assert_ne!(v.as_ptr(), p);
    assert_eq!((v[0], v[slice - 1]), (1, 2), "contents moved with it");
    let q = v.as_ptr();
    v.truncate(10);
    v.shrink_to_fit();
    assert_eq!(v.as_ptr(), q, "shrank in place");
    drop(v);
    assert_empty(h);
}

/// `realloc_layout` keeps a pointer in place only where it has the layout's alignment: a
/// 64-byte slice at 64 bytes into its block, reallocated for 64 bytes aligned to 4 KiB, was
/// kept where it was (its usable size held the size, and 16 is all `malloc` promises 64
/// bytes), misaligned for the layout.
#[test]
fn realloc_layout_gives_the_layout_s_alignment() {
    let cpu = CpuHeap::with_checks(4, 1, false);
    let h = cpu.heap();
    let (first, p) = (h.malloc(64), h.malloc(64));
    assert_eq!(p as u64, first as u64 + 64, "the next slice: 64 mod 4096");
    // SAFETY: p holds 64 bytes, ours.
    unsafe { p.cast::<u64>().write(0x5eed) };
    let layout = Layout::from_size_align(64, 4096).unwrap();
    // SAFETY: p came from this heap's malloc above, is live and ours; the result replaces it.
    let q = unsafe { h.realloc_layout(p, layout) };
    assert!(!q.is_null());
    assert!((q as usize).is_multiple_of(4096), "{q:?} is not aligned to 4 KiB");
    // SAFETY: q holds at least 64 bytes, the contents moved from p.
    assert_eq!(unsafe { q.cast::<u64>().read() }, 0x5eed);
    // SAFETY: first and q are live and ours (p went with the move), each freed once.
    unsafe {
        h.free(first);
        h.free(q);
    }
    assert_empty(h);
}

/// `Allocator::grow` and `shrink` to a larger alignment move a block that lacks it (with its
/// contents) even where its usable size holds the new size: a 64-byte slice at 64 bytes into
/// its block stays 64 bytes but must move to be 4096-aligned; shrunk to 32 bytes aligned to
/// 128, it must move too. And `allocate` hands out the whole usable size.
#[test]
fn grow_and_shrink_to_a_larger_alignment_move_the_block() {
    use std::alloc::Allocator;
    use std::ptr::NonNull;
    let cpu = CpuHeap::with_checks(4, 1, false);
    let h = cpu.heap();
    let (first, p) = (h.malloc(64), h.malloc(64));
    assert_eq!(p as u64, first as u64 + 64, "the next slice: 64 mod 128");
    // SAFETY: p holds 64 bytes, ours.
    unsafe { p.cast::<u64>().write(0x5eed) };
    let old = Layout::from_size_align(64, 8).unwrap();
    let page = Layout::from_size_align(64, 4096).unwrap();
    // SAFETY: p is a live 64-byte block of this heap (old's size, aligned to 8); grow frees it.
    let q = unsafe { h.grow(NonNull::new(p).unwrap(), old, page) }.unwrap();
    let q = q.cast::<u8>();
    assert!((q.as_ptr() as usize).is_multiple_of(4096), "grow kept a block misaligned for 4 KiB");
    // SAFETY: q holds at least 64 bytes, the contents moved from p.
    assert_eq!(unsafe { q.cast::<u64>().read() }, 0x5eed);
    // A 64-byte slice at 64 mod 128 (the slices before it are freed at the end).
    let mut before = vec![first];
    let mut p = h.malloc(64);
    while (p as usize).is_multiple_of(128) {
        before.push(p);
        p = h.malloc(64);
    }
    // SAFETY: p holds 64 bytes, ours.
    unsafe { p.cast::<u64>().write(0xfeed) };
    let small = Layout::from_size_align(32, 128).unwrap();
    // SAFETY: p is a live 64-byte block of this heap (old); shrink frees it if it moves.
    let r = unsafe { h.shrink(NonNull::new(p).unwrap(), old, small) }.unwrap().cast::<u8>();
    assert!((r.as_ptr() as usize).is_multiple_of(128), "shrink kept a block misaligned for 128");
    // SAFETY: r holds at least 32 bytes, the contents moved from p.
    assert_eq!(unsafe { r.cast::<u64>().read() }, 0xfeed);
    let hundred = Layout::from_size_align(100, 8).unwrap();
    let s = h.allocate(hundred).unwrap();
    assert_eq!(s.len() as u64, h.usable_size(s.cast::<u8>().as_ptr()), "the whole slice is the caller's");
    assert!(s.len() > 100);
    // SAFETY: each block is live and ours, freed once with the layout it has now.
    unsafe {
        h.deallocate(s.cast(), hundred);
        h.deallocate(q, page);
        h.deallocate(r, small);
        for b in before {
            h.free(b);
        }
    }
    assert_empty(h);
}
