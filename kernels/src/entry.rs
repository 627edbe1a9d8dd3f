//! The runtime's kernels in the PTX module: heap init, boot and trim, the host pool's claims
//! and releases (what `veballoc::Heap` launches). The kernels that tests and benchmarks launch
//! are in `entry_bench` (feature `bench-kernels`), so that the module a user's program loads,
//! and the driver JIT-compiles on a machine's first run, holds only these: ptxas took 1.5 s
//! of CPU on it against 45 s on the module with both (sm_90, r35). User kernels call
//! `DeviceHeap::malloc`/`free` directly.

use crate::arch;
use crate::heap::DeviceHeap;
use crate::slice::SLOT_ROWS;

/// One thread per word of the segment tree (the rest of the zeroed metadata is ready as is).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn veballoc_init(heap: DeviceHeap) {
    let i = arch::global_thread_x();
    if i < heap.layout().init_words() as u64 {
        // SAFETY: the host launches this kernel once, on a new heap's zeroed metadata with
        // its header written, before any other kernel uses the heap; i < init_words.
        unsafe { heap.init_word(i as u32) };
    }
}

/// The boot of a new heap (see `DeviceHeap::boot_all`, `Heap::boot`): one thread formats
/// ahead for the groups in `heap::BOOT_ORDER`, so that they get the lowest free segments in
/// that order (see `Blocks::take_back_after`).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn veballoc_boot(heap: DeviceHeap) {
    if arch::global_thread_x() == 0 {
        heap.boot_all();
    }
}

/// The boot's second step, after `veballoc_boot`: thread `i` fills slot `i` of the 16-byte
/// class's row with a first block (`DeviceHeap::boot_slot`).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn veballoc_boot_slots(heap: DeviceHeap) {
    heap.boot_slot(arch::global_thread_x());
}

/// What this PTX was built with: `out[0]` = 1 when it has the safety checks.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn veballoc_info(out: *mut u64) {
    if arch::global_thread_x() == 0 {
        // SAFETY: the host passes one word.
        unsafe { *out = crate::CHECKS as u64 };
    }
}

/// One thread per current slot: retires the current blocks.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn veballoc_trim(heap: DeviceHeap) {
    let i = arch::global_thread_x();
    let shards = heap.layout().shards as u64;
    if i < SLOT_ROWS as u64 * shards {
        heap.trim_slot((i / shards) as usize, (i % shards) as u32);
    }
}

/// One thread per segment, after `veballoc_trim`: wholly free segments go back to the tree,
/// and the booted ones are forgotten (`DeviceHeap::trim_segments_part`).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn veballoc_trim_segments(heap: DeviceHeap) {
    heap.trim_segments_part(arch::global_thread_x());
}

/// Host-side pool growth: claims `k` contiguous segments; `out[0]` = first, or u64::MAX.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn veballoc_host_claim(heap: DeviceHeap, k: u64, out: *mut u64) {
    if arch::global_thread_x() == 0 {
        // SAFETY: the host passes one word.
        unsafe { *out = heap.claim_host_reclaiming(k).map_or(u64::MAX, |s| s as u64) };
    }
}

/// Host-side pool shrink: returns `k` host-owned segments from `seg` to the segment tree.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn veballoc_host_release(heap: DeviceHeap, seg: u64, k: u64) {
    if arch::global_thread_x() == 0 {
        // SAFETY: the host pool gives back segments seg..seg + k that its claim took (through
        // veballoc_host_claim), once, and stops using them.
        unsafe { heap.release_host(seg as u32, k as u32) };
    }
}

/// Takes up to `max` free segments beyond `keep` out of the tree for the host to unmap;
/// `out[0]` = how many, `out[1..]` = which.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn veballoc_release_segments(
    heap: DeviceHeap,
    keep: u64,
    max: u64,
    out: *mut u32,
) {
    if arch::global_thread_x() == 0 {
        // SAFETY: the host passes 1 + max words.
        let list = unsafe { core::slice::from_raw_parts_mut(out.add(1), max as usize) };
        let n = heap.release_free_segments(keep as u32, list);
        // SAFETY: as above.
        unsafe { *out = n as u32 };
    }
}

/// Puts `n` released segments (listed in `segs`, their memory mapped again) back in the tree.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn veballoc_reacquire_segments(heap: DeviceHeap, segs: *const u32, n: u64) {
    let i = arch::global_thread_x();
    if i < n {
        // SAFETY: the host passes n distinct indices of segments that veballoc_release_segments
        // took out and whose memory it has mapped again; each goes back once.
        unsafe { heap.reacquire_segment(*segs.add(i as usize)) };
    }
}
