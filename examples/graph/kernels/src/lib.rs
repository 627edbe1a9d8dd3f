//! A dynamic graph on the GPU, built with veballoc: each vertex's adjacency list is a
//! `DVec<u32>` that grows as edges are inserted, kept between kernels as a `RawVec` in a
//! device array; each insertion round stages its new edges in a per-thread `DBox` buffer.
//! The per-vertex logic is plain Rust, so the host runs it too (tests, expected results).
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

use veballoc_kernels::{mix, DBox, DVec, DeviceHeap, RawVec};

/// Most edges a vertex gets in one round (the size of the staging buffer).
pub const MAX_EDGES_PER_ROUND: usize = 16;

/// How many edges vertex `v` gets in round `round` (1..=MAX_EDGES_PER_ROUND).
pub fn edges_in_round(v: u64, round: u64) -> u64 {
    1 + mix(v ^ (round << 40) ^ 0x5eed) % MAX_EDGES_PER_ROUND as u64
}

/// Target of vertex `v`'s `k`-th edge in a graph of `n` vertices.
pub fn edge_target(v: u64, k: u64, n: u64) -> u32 {
    (mix(v.wrapping_mul(1_000_003) ^ k) % n) as u32
}

/// One insertion round for vertex `v`: stages its new edges in a per-thread buffer, then
/// appends them to its adjacency list. False when the heap ran out (the list keeps what fit).
pub fn insert_round(heap: &DeviceHeap, slot: &mut RawVec<u32>, v: u64, n: u64, round: u64) -> bool {
    let k = edges_in_round(v, round) as usize;
    let Ok(mut staged) = DBox::new(heap, [0u32; MAX_EDGES_PER_ROUND]) else { return false };
    // SAFETY: the slot holds raw parts of this heap's vector (or zeros), owned by this thread.
    let mut list = unsafe { DVec::from_raw(heap, core::mem::replace(slot, RawVec::EMPTY)) };
    let first = list.len();
    for (i, e) in staged.iter_mut().take(k).enumerate() {
        *e = edge_target(v, first + i as u64, n);
    }
    let mut ok = true;
    for &e in staged.iter().take(k) {
        if list.push(e).is_err() {
            ok = false;
            break;
        }
    }
    *slot = list.into_raw();
    ok // `staged` is freed here
}

/// Order-sensitive checksum of one adjacency list.
pub fn checksum(list: &[u32]) -> u64 {
    list.iter().enumerate().fold(0u64, |h, (i, &t)| h.wrapping_add(mix(t as u64 ^ ((i as u64) << 32))))
}

/// Checksum of vertex `v`'s list.
pub fn slot_checksum(heap: &DeviceHeap, slot: &RawVec<u32>) -> u64 {
    // SAFETY: a temporary owner of the slot's vector, given back before returning.
    let list = unsafe { DVec::from_raw(heap, RawVec { ptr: slot.ptr, len: slot.len, cap: slot.cap }) };
    let h = checksum(&list);
    let _ = list.into_raw();
    h
}

/// Frees vertex `v`'s list and empties its slot.
pub fn free_slot(heap: &DeviceHeap, slot: &mut RawVec<u32>) {
    // SAFETY: the slot owns its vector; it is taken out (zeroed) and dropped.
    drop(unsafe { DVec::from_raw(heap, core::mem::replace(slot, RawVec::EMPTY)) });
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;
    use veballoc_kernels::arch;
    use veballoc_kernels::atomic::Atom64;

    /// One round of insertions, one thread per vertex; `failed` counts vertices whose
    /// round did not fit in the heap.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn graph_insert(
        heap: DeviceHeap,
        adj: *mut RawVec<u32>,
        n: u64,
        round: u64,
        failed: *mut u64,
    ) {
        let v = arch::global_thread_x();
        if v >= n {
            return;
        }
        // SAFETY: adj holds n slots; thread v alone touches slot v; failed is one word.
        unsafe {
            if !insert_round(&heap, &mut *adj.add(v as usize), v, n, round) {
                // Relaxed: a count the host reads after the kernel.
                (*(failed as *const Atom64)).fetch_add_relaxed(1);
            }
        }
    }

    /// Sum of every vertex's list checksum into `out[0]`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn graph_checksum(
        heap: DeviceHeap,
        adj: *const RawVec<u32>,
        n: u64,
        out: *mut u64,
    ) {
        let v = arch::global_thread_x();
        if v < n {
            // SAFETY: as in graph_insert.
            unsafe {
                let h = slot_checksum(&heap, &*adj.add(v as usize));
                // Relaxed: a sum the host reads after the kernel.
                (*(out as *const Atom64)).fetch_add_relaxed(h);
            }
        }
    }

    /// Frees every list.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn graph_free(heap: DeviceHeap, adj: *mut RawVec<u32>, n: u64) {
        let v = arch::global_thread_x();
        if v < n {
            // SAFETY: as in graph_insert.
            unsafe { free_slot(&heap, &mut *adj.add(v as usize)) };
        }
    }
}
