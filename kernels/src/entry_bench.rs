//! The kernels that tests and benchmarks launch (feature `bench-kernels`, in the module that
//! `veballoc::Gpu` loads on the first launch of one of them; see `entry` for the runtime's).

use crate::arch;
use crate::harness::{
    churn_counter, churn_law, churn_size, pattern, round_draw, util_counter, FLOOR_COUNTER_STRIDE, PROB_MASK,
};
use crate::heap::DeviceHeap;
use crate::mix;

/// Size of thread `i`'s allocation: `sizes[i]` when given, else `size`.
#[inline(always)]
unsafe fn size_of_thread(size: u64, sizes: *const u32, i: u64) -> u64 {
    if sizes.is_null() {
        size
    } else {
        // SAFETY: the host passes n sizes and i < n.
        unsafe { *sizes.add(i as usize) as u64 }
    }
}

/// `ptrs[i] = alloc(i)` for thread i < n.
///
/// # Safety
/// `ptrs` must hold n elements.
#[inline(always)]
unsafe fn store_per_thread(ptrs: *mut u64, n: u64, alloc: impl FnOnce(u64) -> *mut u8) {
    let i = arch::global_thread_x();
    if i < n {
        // SAFETY: the caller passes an array of n pointers.
        unsafe { *ptrs.add(i as usize) = alloc(i) as u64 };
    }
}

/// Adds `v` to counter `k` of the host's array `counters` (errors, nulls, bytes...).
///
/// # Safety
/// `counters` points to at least `k + 1` counters of device memory that outlive the kernel.
#[inline(always)]
unsafe fn count(counters: *mut u64, k: usize, v: u64) {
    // SAFETY: the caller's contract (`Atom64` has `u64`'s layout). Relaxed: a count read by the
    // host after the kernel ends.
    unsafe { &*(counters.add(k) as *const crate::atomic::Atom64) }.fetch_add_relaxed(v);
}

/// `ptrs[i] = malloc(size or sizes[i])` for i < n.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vb_malloc(
    heap: DeviceHeap,
    ptrs: *mut u64,
    n: u64,
    size: u64,
    sizes: *const u32,
) {
    // SAFETY: the host passes arrays of n elements.
    unsafe { store_per_thread(ptrs, n, |i| heap.malloc(size_of_thread(size, sizes, i))) }
}

/// `ptrs[i] = malloc_packed(size or sizes[i])` for i < n (mixed-size warp coalescing).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vb_malloc_packed(
    heap: DeviceHeap,
    ptrs: *mut u64,
    n: u64,
    size: u64,
    sizes: *const u32,
) {
    // SAFETY: the host passes arrays of n elements.
    unsafe { store_per_thread(ptrs, n, |i| heap.malloc_packed(size_of_thread(size, sizes, i))) }
}

/// `ptrs[i] = malloc_warp(size)` for i < n (collective: one size per launch).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vb_malloc_warp(heap: DeviceHeap, ptrs: *mut u64, n: u64, size: u64) {
    // SAFETY: the host passes an array of n pointers; the threads below n of each warp reach
    // malloc_warp together (one branch, in store_per_thread), on the kernel's one heap.
    unsafe { store_per_thread(ptrs, n, |_| heap.malloc_warp(size)) }
}

/// `ptrs[i] = malloc_warp(size or sizes[i])` for i < n: the safe collective with any sizes.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vb_malloc_warp_sizes(
    heap: DeviceHeap,
    ptrs: *mut u64,
    n: u64,
    size: u64,
    sizes: *const u32,
) {
    // SAFETY: the host passes arrays of n elements; the threads below n of each warp reach
    // malloc_warp together (one branch, in store_per_thread), on the kernel's one heap.
    unsafe { store_per_thread(ptrs, n, |i| heap.malloc_warp(size_of_thread(size, sizes, i))) }
}

/// `ptrs[i] = malloc_block(size)` for i < n. Every thread of each block takes part (the
/// call holds barriers); threads past n free what they got.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vb_malloc_cta(heap: DeviceHeap, ptrs: *mut u64, n: u64, size: u64) {
    // SAFETY: the host passes an array of n pointers (and no sizes).
    unsafe { malloc_cta(heap, ptrs, n, size, core::ptr::null()) }
}

/// `ptrs[i] = malloc_block(size or sizes[i])` for i < n (threads past n ask for `size` and
/// free what they got).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vb_malloc_cta_sizes(
    heap: DeviceHeap,
    ptrs: *mut u64,
    n: u64,
    size: u64,
    sizes: *const u32,
) {
    // SAFETY: the host passes arrays of n elements.
    unsafe { malloc_cta(heap, ptrs, n, size, sizes) }
}

/// Every thread of the grid calls `malloc_block`; those below n keep their pointer.
///
/// # Safety
/// `ptrs` (and `sizes`, unless null) must hold n elements; every thread of each 1-D block of
/// the launch calls it (as the host launches these kernels).
#[inline(always)]
unsafe fn malloc_cta(heap: DeviceHeap, ptrs: *mut u64, n: u64, size: u64, sizes: *const u32) {
    let i = arch::global_thread_x();
    // SAFETY: only threads below n read their size.
    let mine = if i < n { unsafe { size_of_thread(size, sizes, i) } } else { size };
    // SAFETY: every thread of the 1-D block calls it here (the caller's contract), on the
    // kernel's one heap.
    let p = unsafe { heap.malloc_block(mine) };
    if i < n {
        // SAFETY: the caller passes an array of n pointers.
        unsafe { *ptrs.add(i as usize) = p as u64 };
    } else {
        // SAFETY: p came from malloc_block just above (or is null) and this thread keeps no
        // copy: freed once.
        unsafe { heap.free(p) };
    }
}

/// `free(ptrs[i])` for i < n. Capped at `FREE_KERNEL_REGISTERS`: free's rare paths would
/// otherwise give the kernel 100 registers, two blocks of 256 threads per multiprocessor
/// (A/B in NOTES, r26).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vb_free(heap: DeviceHeap, ptrs: *const u64, n: u64) {
    crate::max_registers::<{ crate::FREE_KERNEL_REGISTERS }>();
    let i = arch::global_thread_x();
    if i < n {
        // SAFETY: the host passes an array of n pointers, each null or handed out by this heap
        // and used by no other thread (nor freed elsewhere): thread i frees its own once.
        unsafe { heap.free(*ptrs.add(i as usize) as *mut u8) };
    }
}

/// `sizes[i] = usable_size(ptrs[i])` for i < n (a test of the sizes packed objects record).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vb_usable(heap: DeviceHeap, ptrs: *const u64, n: u64, sizes: *mut u64) {
    let i = arch::global_thread_x();
    if i < n {
        // SAFETY: the host passes arrays of n words; thread i reads and writes its own.
        unsafe { *sizes.add(i as usize) = heap.usable_size(*ptrs.add(i as usize) as *const u8) };
    }
}

/// The two-heap kernels' rule: `b` for lanes whose bit `lane_bit` is set, else `a`.
#[inline(always)]
fn lane_heap(a: DeviceHeap, b: DeviceHeap, lane_bit: u32) -> DeviceHeap {
    if arch::lane_id() >> lane_bit & 1 == 1 {
        b
    } else {
        a
    }
}

/// Two heaps in one kernel: thread i < n allocates from `b` if bit `lane_bit` of its lane is
/// set, else from `a`, with `malloc` (`how` 0) or `malloc_packed` (1), in one converged call
/// (the lanes of a warp reach it together with different handles).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vb_malloc_two_heaps(
    a: DeviceHeap,
    b: DeviceHeap,
    ptrs: *mut u64,
    n: u64,
    size: u64,
    lane_bit: u32,
    how: u32,
) {
    let heap = lane_heap(a, b, lane_bit);
    // SAFETY: the host passes an array of n pointers.
    unsafe {
        store_per_thread(ptrs, n, |_| if how == 0 { heap.malloc(size) } else { heap.malloc_packed(size) })
    }
}

/// `free(ptrs[i])` for i < n into the heap `vb_malloc_two_heaps` took it from (by the same
/// lane rule), in one converged call.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vb_free_two_heaps(
    a: DeviceHeap,
    b: DeviceHeap,
    ptrs: *const u64,
    n: u64,
    lane_bit: u32,
) {
    let heap = lane_heap(a, b, lane_bit);
    let i = arch::global_thread_x();
    if i < n {
        // SAFETY: the host passes the array vb_malloc_two_heaps filled, with the same launch
        // shape and lane rule: each pointer is null or this lane's from `heap`, freed once.
        unsafe { heap.free(*ptrs.add(i as usize) as *mut u8) };
    }
}

/// Writes `pattern(i, tag)` into every 4-byte word of thread i's allocation (skips nulls).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vb_write(ptrs: *const u64, n: u64, size: u64, sizes: *const u32, tag: u64) {
    let i = arch::global_thread_x();
    if i < n {
        // SAFETY: the host passes arrays of n elements; each non-null pointer holds `size`.
        unsafe {
            let p = *ptrs.add(i as usize) as *mut u32;
            if !p.is_null() {
                let words = size_of_thread(size, sizes, i) / 4;
                for w in 0..words {
                    p.add(w as usize).write(pattern(i, tag));
                }
            }
        }
    }
}

/// Checks what `vb_write` wrote. `errors[0]` counts bad words, `errors[1]` null pointers,
/// `errors[2]` pointers less aligned than `malloc` promises (`class::align_of_request`).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vb_verify(
    ptrs: *const u64,
    n: u64,
    size: u64,
    sizes: *const u32,
    tag: u64,
    errors: *mut u64,
) {
    let i = arch::global_thread_x();
    if i < n {
        // SAFETY: as in vb_write; errors holds 3 counters.
        unsafe {
            let p = *ptrs.add(i as usize) as *const u32;
            let size = size_of_thread(size, sizes, i);
            if p.is_null() {
                if size != 0 {
                    count(errors, 1, 1);
                }
                return;
            }
            if !(p as u64).is_multiple_of(crate::class::align_of_request(size)) {
                count(errors, 2, 1);
            }
            let mut bad = 0;
            for w in 0..size / 4 {
                if p.add(w as usize).read() != pattern(i, tag) {
                    bad += 1;
                }
            }
            if bad != 0 {
                count(errors, 0, bad);
            }
        }
    }
}

/// One churn round: each thread checks what it held (its usable size is still what it read
/// at its allocation, and its whole usable size still holds its pattern, so no neighbour's
/// bounds or bytes reach into it) and frees it, then (with probability 3/4, unless
/// `last != 0`) allocates a random size, fills its whole usable size and keeps it. Sizes:
/// with `max_size` above 4096, 1..=4096 or about one in 20 a whole block up to `max_size`;
/// else 1..=`max_size` (up to 512, which `malloc` packs in mixed warps). `errors`: bad words,
/// nulls, usable sizes changed or below the request (a review of r44's packed bounds).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vb_churn(
    heap: DeviceHeap,
    ptrs: *mut u64,
    sizes: *mut u32,
    n: u64,
    seed: u64,
    round: u64,
    max_size: u64,
    last: u32,
    errors: *mut u64,
) {
    let i = arch::global_thread_x();
    if i >= n {
        return;
    }
    // SAFETY: the host passes arrays of n pointers and sizes (thread i owns entry i: null, the
    // host's zeroed array, or its own live object of that usable size from this heap's malloc
    // in the previous round, which only it reads, frees once and forgets) and 3 counters;
    // every write stays within the object's usable size.
    unsafe {
        let err = |k: usize, v: u64| count(errors, k, v);
        let slot = ptrs.add(i as usize);
        let p = *slot as *mut u32;
        if !p.is_null() {
            let u = *sizes.add(i as usize) as u64;
            if heap.usable_size(p as *const u8) != u {
                err(2, 1);
            }
            let bad = (0..u / 4).filter(|&w| p.add(w as usize).read() != pattern(i, round)).count();
            if bad != 0 {
                err(0, bad as u64);
            }
            heap.free(p as *mut u8);
            *slot = 0;
        }
        let r = round_draw(seed, i, round);
        if last == 0 && r % 4 != 0 {
            let size = if max_size <= CHURN_SLICE_MAX {
                1 + (r >> 8) % max_size
            } else if r % 64 < 4 {
                // About one request in 20 is for a whole block (up to max_size).
                CHURN_SLICE_MAX + 1 + (r >> 8) % (max_size - CHURN_SLICE_MAX)
            } else {
                1 + (r >> 8) % CHURN_SLICE_MAX
            };
            let q = heap.malloc(size) as *mut u32;
            if q.is_null() {
                err(1, 1);
            } else {
                let u = heap.usable_size(q as *const u8);
                if u < size {
                    err(2, 1);
                }
                for w in 0..u / 4 {
                    q.add(w as usize).write(pattern(i, round + 1));
                }
                *slot = q as u64;
                *sizes.add(i as usize) = u as u32;
            }
        }
    }
}

/// `vb_churn`'s largest slice request (4 KiB): above it, the requests for whole blocks.
const CHURN_SLICE_MAX: u64 = 4096;

/// calloc/realloc check: calloc(k, 8) must be zero; fill; realloc to 3x must keep it.
/// `errors[0]` counts failures, `errors[1]` nulls.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vb_calloc_realloc(heap: DeviceHeap, n: u64, errors: *mut u64) {
    let i = arch::global_thread_x();
    if i >= n {
        return;
    }
    let k = 1 + mix(i) % 300;
    // SAFETY: errors holds 2 counters; every pointer below is checked for null and holds at
    // least the bytes touched; p is this thread's own block from this heap, which the realloc
    // takes over when it succeeds (q is then the block, freed below), and which is freed below
    // when it fails: each block is freed once and not used after.
    unsafe {
        let p = heap.calloc(k, 8) as *mut u64;
        if p.is_null() {
            count(errors, 1, 1);
            return;
        }
        let mut bad = 0;
        for w in 0..k {
            if p.add(w as usize).read() != 0 {
                bad += 1;
            }
            p.add(w as usize).write(i ^ w);
        }
        let q = heap.realloc(p as *mut u8, 3 * k * 8) as *mut u64;
        if q.is_null() {
            count(errors, 1, 1);
            heap.free(p as *mut u8);
            return;
        }
        for w in 0..k {
            if q.add(w as usize).read() != i ^ w {
                bad += 1;
            }
        }
        heap.free(q as *mut u8);
        if bad != 0 {
            count(errors, 0, bad);
        }
    }
}

/// The bump-allocator floor: one atomic add per warp on one counter, no reuse, each lane
/// gets `base + offset`. What a device allocator cannot beat.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn bump_malloc(
    counter: *mut u64,
    base: u64,
    ptrs: *mut u64,
    n: u64,
    size: u64,
) {
    let i = arch::global_thread_x();
    if i >= n {
        return;
    }
    let active = arch::activemask();
    let leader = active.trailing_zeros();
    let rank = (active & arch::lanemask_lt()).count_ones() as u64;
    let mut off = 0;
    if arch::lane_id() == leader {
        // SAFETY: counter is a device word the host zeroed. Relaxed: a pure offset counter.
        off = unsafe { &*(counter as *const crate::atomic::Atom64) }
            .fetch_add_relaxed(active.count_ones() as u64 * size);
    }
    // SAFETY: `active` names the lanes that execute this code with this lane (activemask; the
    // leader's branch rejoins here).
    let off = unsafe { arch::shfl_sync_u64(active, off, leader) };
    // SAFETY: ptrs holds n entries.
    unsafe { *ptrs.add(i as usize) = base + off + rank * size };
}

extern "C" {
    /// CUDA's device-side allocator, provided by the driver to PTX.
    fn malloc(size: usize) -> *mut u8;
    /// CUDA's device-side free.
    fn free(ptr: *mut u8);
}

/// Baseline: CUDA's device malloc, `ptrs[i] = malloc(size or sizes[i])`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn cuda_malloc(ptrs: *mut u64, n: u64, size: u64, sizes: *const u32) {
    let i = arch::global_thread_x();
    if i < n {
        // SAFETY: arrays of n elements; malloc is the driver's.
        unsafe { *ptrs.add(i as usize) = malloc(size_of_thread(size, sizes, i) as usize) as u64 };
    }
}

/// Baseline: CUDA's device free.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn cuda_free(ptrs: *const u64, n: u64) {
    let i = arch::global_thread_x();
    if i < n {
        // SAFETY: pointers from cuda_malloc (or null).
        unsafe { free(*ptrs.add(i as usize) as *mut u8) };
    }
}

// ---------------------------------------------------------------------------------------------
// Harness kernels appended for bench/ (issues 11.2 and 9.4): the allocation and free floors,
// the utilisation fill and the churn round.

/// Every lane of a warp (the harness launches whole blocks of 256 threads).
const FULL_WARP: u32 = u32::MAX;
/// What the allocation floor aligns every request to (veballoc's slice alignment).
const FLOOR_ALIGN: u64 = 16;

/// This warp's counter of the floors' per-multiprocessor array: `counters` holds
/// `shards * FLOOR_COUNTER_STRIDE` words; returns the counter and the shard index.
///
/// # Safety
/// `counters` must hold `shards * FLOOR_COUNTER_STRIDE` words, `shards > 0`.
#[inline(always)]
unsafe fn floor_counter<'a>(counters: *mut u64, shards: u64) -> (&'a crate::atomic::Atom64, u64) {
    let shard = arch::smid() as u64 % shards.max(1);
    // SAFETY: shard < shards, and the caller passes shards * FLOOR_COUNTER_STRIDE words.
    let c =
        unsafe { &*(counters.add((shard * FLOOR_COUNTER_STRIDE) as usize) as *const crate::atomic::Atom64) };
    (c, shard)
}

/// The allocation floor: a sharded bump allocator. One counter per multiprocessor (its own
/// line), one atomic add per warp (the warp's total, its lanes' offsets by a prefix sum), no
/// reuse. Shard k hands out `[base + k * region, base + (k + 1) * region)`; a request past
/// its shard's region gets null. Requests are rounded up to 16 bytes. Every thread of the
/// launch must reach the warp collectives (whole warps; threads past n take part with 0).
///
/// # Safety
/// `counters`: `shards * FLOOR_COUNTER_STRIDE` words, `shards > 0`; `ptrs`: n words; `sizes`:
/// n sizes or null; `[base, base + shards * region)` device memory nobody else uses.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn floor_malloc(
    counters: *mut u64,
    shards: u64,
    base: u64,
    region: u64,
    ptrs: *mut u64,
    n: u64,
    size: u64,
    sizes: *const u32,
) {
    let i = arch::global_thread_x();
    let live = i < n;
    // SAFETY: the host passes n sizes (or null) and i < n where read.
    let bytes =
        if live { unsafe { size_of_thread(size, sizes, i) }.next_multiple_of(FLOOR_ALIGN) } else { 0 };
    let lane = arch::lane_id();
    // Offset of this lane within the warp's run, and the warp's total.
    let (before, total) = if sizes.is_null() {
        // One size: lanes below this one that take part, times the size.
        // SAFETY: every lane of the warp reaches it (whole warps launched, no early return;
        // the branch on `sizes` is the same in every lane).
        let takers = unsafe { arch::ballot_sync(FULL_WARP, live) };
        ((takers & arch::lanemask_lt()).count_ones() as u64 * bytes, takers.count_ones() as u64 * bytes)
    } else {
        // Inclusive prefix sum of the sizes over the warp (u64 as two u32 halves).
        let mut sum = bytes;
        let mut d = 1;
        while d < 32 {
            // SAFETY: as above: every lane of the warp runs this loop.
            let (lo, hi) = unsafe {
                (arch::shfl_up_full_u32(sum as u32, d), arch::shfl_up_full_u32((sum >> 32) as u32, d))
            };
            if lane >= d {
                sum += ((hi as u64) << 32) | lo as u64;
            }
            d *= 2;
        }
        // SAFETY: as above.
        (sum - bytes, unsafe { arch::shfl_sync_u64(FULL_WARP, sum, 31) })
    };
    // SAFETY: the host passes shards * FLOOR_COUNTER_STRIDE zeroed words, shards > 0.
    let (counter, shard) = unsafe { floor_counter(counters, shards) };
    let mut off = 0;
    if lane == 0 && total != 0 {
        // Relaxed: a pure offset counter; nothing else is published through it.
        off = counter.fetch_add_relaxed(total);
    }
    // SAFETY: every lane of the warp reaches it (whole warps, no early return).
    let off = unsafe { arch::shfl_sync_u64(FULL_WARP, off, 0) } + before;
    if live {
        let p = if off + bytes <= region { base + shard * region + off } else { 0 };
        // SAFETY: ptrs holds n entries and i < n.
        unsafe { *ptrs.add(i as usize) = p };
    }
}

/// The free floor: each thread reads its pointer, one atomic add per warp (how many lanes
/// held one) on its multiprocessor's counter. What any header-free free costs at least.
///
/// # Safety
/// As for `floor_malloc` (`counters`, `shards`, `ptrs`).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn floor_free(counters: *mut u64, shards: u64, ptrs: *const u64, n: u64) {
    let i = arch::global_thread_x();
    // SAFETY: ptrs holds n entries and i < n where read.
    let p = if i < n { unsafe { *ptrs.add(i as usize) } } else { 0 };
    // SAFETY: every lane of the warp reaches it (whole warps launched, as for floor_malloc).
    let held = unsafe { arch::ballot_sync(FULL_WARP, p != 0) };
    if arch::lane_id() == 0 && held != 0 {
        // SAFETY: as in floor_malloc.
        let (counter, _) = unsafe { floor_counter(counters, shards) };
        // Relaxed: a count nobody reads during the kernel.
        counter.fetch_add_relaxed(held.count_ones() as u64);
    }
}

/// Sum of `v` over the full warp, in every lane.
///
/// # Safety
/// Every lane of the warp makes this call together.
#[inline(always)]
unsafe fn warp_sum_u64(v: u64) -> u64 {
    let (lane, mut sum, mut d) = (arch::lane_id(), v, 16);
    while d > 0 {
        // SAFETY: every lane of the warp runs this loop (the caller's contract).
        sum += unsafe { arch::shfl_sync_u64(FULL_WARP, sum, lane ^ d) };
        d /= 2;
    }
    sum
}

/// One batch of the utilisation fill: thread i < n asks for a size uniform in [lo, hi]
/// (drawn from `seed ^ i`) and keeps it. `counters` (`util_counter::COUNT` words): requested bytes
/// served, requests served, nulls; one atomic per warp each. Whole warps (threads past n
/// take part with nothing).
///
/// # Safety
/// `heap` is a live heap; `counters` holds `util_counter::COUNT` words; `lo <= hi`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn util_fill(
    heap: DeviceHeap,
    n: u64,
    lo: u64,
    hi: u64,
    seed: u64,
    counters: *mut u64,
) {
    let i = arch::global_thread_x();
    let (mut got, mut null) = (0u64, false);
    if i < n {
        let size = lo + mix(seed ^ i) % (hi - lo + 1);
        if heap.malloc(size).is_null() {
            null = true;
        } else {
            got = size;
        }
    }
    // SAFETY: every lane of the warp reaches these (whole warps launched; the branch on
    // `i < n` rejoins above).
    let (bytes, served, nulls) = unsafe {
        (
            warp_sum_u64(got),
            arch::ballot_sync(FULL_WARP, got != 0).count_ones() as u64,
            arch::ballot_sync(FULL_WARP, null).count_ones() as u64,
        )
    };
    let mut counts = [0u64; util_counter::COUNT];
    (counts[util_counter::BYTES], counts[util_counter::SERVED], counts[util_counter::NULLS]) =
        (bytes, served, nulls);
    if arch::lane_id() == 0 {
        for (k, v) in counts.into_iter().enumerate() {
            if v != 0 {
                // SAFETY: the host passes util_counter::COUNT words.
                unsafe { count(counters, k, v) };
            }
        }
    }
}

/// One churn round over n threads, each holding at most one allocation (`ptrs[i]`, its
/// requested size in `sizes[i]`): a holder frees with probability `free_p / 2^32` (checking
/// the first and last word it wrote), then a thread holding nothing asks for a size from
/// `dist` with probability `alloc_p / 2^32` and writes its first and last word. `counters` as
/// in `harness::churn_counter`, `dist` as in `harness::churn_law`.
///
/// # Safety
/// `heap` is a live heap; `ptrs` and `sizes` hold n entries, each pointer null or from this
/// heap for `sizes[i]` bytes (>= 16) and written by an earlier round; `dist` holds the law's
/// words; `counters` holds `churn_counter::COUNT` words.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn churn_round(
    heap: DeviceHeap,
    ptrs: *mut u64,
    sizes: *mut u32,
    n: u64,
    seed: u64,
    round: u64,
    free_p: u64,
    alloc_p: u64,
    dist: *const u64,
    counters: *mut u64,
) {
    let i = arch::global_thread_x();
    if i >= n {
        return;
    }
    // SAFETY: the host passes n pointers and sizes, churn_law::WORDS words of the law and
    // churn_counter::COUNT counters; every non-null pointer came from this heap's malloc for
    // sizes[i] (>= 16) bytes and is thread i's alone, freed once and then forgotten.
    unsafe {
        let c = |k: usize| &*(counters.add(k) as *const crate::atomic::Atom64);
        let slot = ptrs.add(i as usize);
        let r = round_draw(seed, i, round);
        let mut held = *slot as *mut u32;
        if !held.is_null() && (r & PROB_MASK) < free_p {
            let size = *sizes.add(i as usize) as u64;
            let last = (size / 4 - 1) as usize;
            let want = pattern(i, size);
            let bad = (held.read() != want) as u64 + (held.add(last).read() != want) as u64;
            if bad != 0 {
                // Relaxed: counts read after the kernel.
                c(churn_counter::BAD_WORDS).fetch_add_relaxed(bad);
            }
            heap.free(held as *mut u8);
            *slot = 0;
            held = core::ptr::null_mut();
            // Relaxed: running sums (wrapping), read between rounds.
            c(churn_counter::LIVE_BYTES).fetch_add_relaxed(size.wrapping_neg());
            c(churn_counter::LIVE_COUNT).fetch_add_relaxed(u64::MAX);
        }
        let r2 = mix(r);
        if held.is_null() && (r2 & PROB_MASK) < alloc_p {
            let law: [u64; churn_law::WORDS] = core::array::from_fn(|k| *dist.add(k));
            let size = churn_size(mix(r2 ^ round), &law);
            let q = heap.malloc(size) as *mut u32;
            if q.is_null() {
                // Relaxed: counts read after the kernel.
                c(churn_counter::NULLS).fetch_add_relaxed(1);
                // Relaxed load: the live bytes near the moment of the first null. The CAS lets
                // only the first null's value land (the host set the word to u64::MAX); its
                // acq_rel order is more than needed (the shim's only CAS).
                let now = c(churn_counter::LIVE_BYTES).load_relaxed();
                let _ = c(churn_counter::FIRST_NULL_LIVE).cas_acq_rel(churn_counter::NO_NULL, now);
            } else {
                let want = pattern(i, size);
                q.write(want);
                q.add((size / 4 - 1) as usize).write(want);
                *slot = q as u64;
                *sizes.add(i as usize) = size as u32;
                // Relaxed: as above.
                c(churn_counter::LIVE_BYTES).fetch_add_relaxed(size);
                c(churn_counter::LIVE_COUNT).fetch_add_relaxed(1);
                if size > crate::SEGMENT_BYTES {
                    c(churn_counter::RUNS).fetch_add_relaxed(1);
                }
            }
        }
    }
}

/// `vb_churn_drift`'s sizes for `malloc_warp`'s mask classes: 16 KiB up to 64 KiB.
const MASK_DRIFT_MIN: u64 = 16 << 10;
const MASK_DRIFT_MAX: u64 = 64 << 10;

/// `rounds` rounds of churn in one launch: each round, thread i checks and frees its object,
/// then allocates a random size, fills it and keeps it; the last round only frees. With
/// `warp == 0` by `malloc`, the lane's own size: 1..=512 in half the rounds (drawn per warp),
/// which `malloc` packs, else 1..=4096 or about one in 32 a whole block up to 64 KiB. With
/// `warp != 0` by `malloc_warp`, one size for the warp's lanes in a round (1..=4096, or in one
/// round of 16 16 KiB..64 KiB, the mask classes' path). The lanes
/// of a warp drift apart (a warp's take that ends a run serves some lanes a round later), so
/// lanes at different rounds of the allocator's loops, or of this kernel's, run together
/// (independent thread scheduling), and must still take part in the same collectives (r45).
/// `errors`: bad words, nulls.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn vb_churn_drift(
    heap: DeviceHeap,
    n: u64,
    seed: u64,
    rounds: u64,
    warp: u32,
    errors: *mut u64,
) {
    let i = arch::global_thread_x();
    if i >= n {
        return;
    }
    // SAFETY: the host passes 2 counters; `malloc_warp`: every lane still here makes each
    // round's call, on the one heap (threads from n on have exited, and an exited lane is not
    // active), and the branch on `warp` is the same in each; p is this thread's own object of
    // `size` bytes from this heap's malloc, which only it reads, frees once and forgets.
    unsafe {
        let err = |k: usize, v: u64| count(errors, k, v);
        let (mut p, mut size) = (core::ptr::null_mut::<u32>(), 0u64);
        for round in 0..=rounds {
            if !p.is_null() {
                let bad = (0..size / 4).filter(|&w| p.add(w as usize).read() != pattern(i, round)).count();
                if bad != 0 {
                    err(0, bad as u64);
                }
                heap.free(p as *mut u8);
            }
            if round == rounds {
                break;
            }
            let r = round_draw(seed, i, round);
            let per_warp = round_draw(seed, i / arch::WARP_SIZE as u64, round);
            size = if warp != 0 && per_warp % 16 == 0 {
                // Mask classes too (`malloc_mask_warp`): 16 KiB..64 KiB.
                MASK_DRIFT_MIN + (per_warp >> 8) % (MASK_DRIFT_MAX - MASK_DRIFT_MIN)
            } else if warp != 0 {
                1 + (per_warp >> 8) % 4096
            } else if per_warp & 1 == 0 {
                1 + (r >> 8) % 512
            } else if r % 32 == 0 {
                4097 + (r >> 8) % (65536 - 4096)
            } else {
                1 + (r >> 8) % 4096
            };
            p = if warp != 0 { heap.malloc_warp(size) } else { heap.malloc(size) } as *mut u32;
            if p.is_null() {
                err(1, 1);
            } else {
                for w in 0..size / 4 {
                    p.add(w as usize).write(pattern(i, round + 1));
                }
            }
        }
    }
}
