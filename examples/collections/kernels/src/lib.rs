//! Rust's own collections in kernels: each thread grows an `alloc::vec::Vec<u32>` by `push`
//! (up to 4 KiB), boxes an array, formats a `String` and fills a small `BTreeMap`, all through
//! veballoc's global allocator (one line below). The per-thread logic is plain Rust, so the
//! host runs it too for the expected results.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
#![cfg_attr(target_arch = "nvptx64", feature(allocator_api))]

extern crate alloc;

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use veballoc_kernels::mix;

#[cfg(not(feature = "cuda-malloc"))]
veballoc_kernels::global_allocator!();

/// The comparison's global allocator: CUDA's device malloc and free, as `cuda_std` does.
#[cfg(all(target_arch = "nvptx64", feature = "cuda-malloc"))]
mod cuda_malloc {
    use core::alloc::{GlobalAlloc, Layout};

    extern "C" {
        /// CUDA's device-side allocator, provided by the driver to PTX.
        fn malloc(size: usize) -> *mut u8;
        /// CUDA's device-side free.
        fn free(ptr: *mut u8);
    }

    /// CUDA's device malloc as a global allocator (16-byte aligned, enough for these kernels).
    pub struct CudaMalloc;

    // SAFETY: CUDA's malloc returns null or a 16-byte aligned block of at least `size` bytes,
    // valid until freed; the kernels here ask for no alignment above 16.
    unsafe impl GlobalAlloc for CudaMalloc {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: the driver's malloc takes any size.
            unsafe { malloc(layout.size()) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
            // SAFETY: `ptr` came from malloc above.
            unsafe { free(ptr) }
        }
    }

    #[global_allocator]
    static CUDA_MALLOC: CudaMalloc = CudaMalloc;
}

/// Most items a thread pushes (4 KiB of u32).
pub const MAX_ITEMS: u64 = 1024;
/// Most entries of a thread's map.
pub const MAX_ENTRIES: u64 = 16;

/// Items thread `i` pushes (1..=MAX_ITEMS).
pub fn items(i: u64, seed: u64) -> u64 {
    1 + mix(i ^ seed) % MAX_ITEMS
}

/// Thread `i`'s `k`-th item.
pub fn item(i: u64, k: u64) -> u32 {
    mix(i.wrapping_mul(31) ^ (k << 32)) as u32
}

/// One thread's work; a checksum of what its collections held (0 never comes out).
pub fn work(i: u64, seed: u64) -> u64 {
    let n = items(i, seed);
    let mut v: Vec<u32> = Vec::new();
    for k in 0..n {
        v.push(item(i, k));
    }
    let b = Box::new([i, n, seed, !i]);
    let s: String = format!("thread {i} pushed {n} items");
    let mut m: BTreeMap<u32, u64> = BTreeMap::new();
    for k in 0..=(n % MAX_ENTRIES) {
        m.insert(item(i, k) % 1000, k);
    }
    let mut h = 0x9e37_79b9_7f4a_7c15u64;
    let mut eat = |x: u64| h = mix(h ^ x);
    v.iter().for_each(|&x| eat(x as u64));
    b.iter().for_each(|&x| eat(x));
    s.bytes().for_each(|c| eat(c as u64));
    m.iter().for_each(|(&k, &x)| eat(((k as u64) << 32) ^ x));
    eat(v.len() as u64 ^ ((m.len() as u64) << 20) ^ ((s.len() as u64) << 40));
    h | 1
}

/// `out[i] = work(i, seed)` for i < n.
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn collections_run(out: *mut u64, n: u64, seed: u64) {
    let i = veballoc_kernels::arch::global_thread_x();
    if i < n {
        // SAFETY: the host passes n words.
        unsafe { *out.add(i as usize) = work(i, seed) };
    }
}

/// The try-APIs in a kernel: reserving `bytes` (more than the heap holds) is an error the
/// kernel handles, and a small `Box::try_new` still works. `out[0]` = 1 + 2 when both held.
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn collections_try_reserve(out: *mut u64, bytes: u64) {
    let mut v: Vec<u8> = Vec::new();
    let refused = v.try_reserve(bytes as usize).is_err() as u64;
    let boxed = Box::try_new([7u8; 64]).map(|b| b[63] == 7).unwrap_or(false) as u64;
    // SAFETY: the host passes one word.
    unsafe { *out = refused + 2 * boxed };
}

/// An infallible allocation of `bytes`: with more than the heap holds, the kernel ends, and
/// the host reads why (`veballoc::GlobalBinding::explain`).
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn collections_alloc(bytes: u64) {
    let v: Vec<u8> = Vec::with_capacity(bytes as usize);
    core::hint::black_box(&v);
}

/// Lanes in a warp (the per-warp maps).
pub const WARP: u64 = 32;

/// The per-warp map of warp `w`: lane 0 inserts every lane's first items into one
/// `BTreeMap` (a map per warp, as a kernel that aggregates per warp would); its checksum.
pub fn warp_map(w: u64, seed: u64) -> u64 {
    let mut m: BTreeMap<u32, u64> = BTreeMap::new();
    for lane in 0..WARP {
        let i = w * WARP + lane;
        for k in 0..(items(i, seed) % 64) {
            *m.entry(item(i, k) % 4096).or_insert(0) += i;
        }
    }
    let mut h = m.len() as u64;
    for (&k, &v) in &m {
        h = mix(h ^ ((k as u64) << 40) ^ v);
    }
    h | 1
}

/// `out[w] = warp_map(w, seed)` for warps w < n / 32, computed by each warp's lane 0.
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn collections_warp_maps(out: *mut u64, n: u64, seed: u64) {
    let i = veballoc_kernels::arch::global_thread_x();
    if i < n && i % WARP == 0 {
        // SAFETY: the host passes n / 32 words.
        unsafe { *out.add((i / WARP) as usize) = warp_map(i / WARP, seed) };
    }
}

/// A node of the device-wide hash table: a boxed key-value pair on its bucket's chain.
#[repr(C)]
pub struct Node {
    pub key: u64,
    pub value: u64,
    pub next: *mut Node,
}

/// Thread `i`'s key (distinct for distinct `i`: `mix` is a bijection).
pub fn hash_key(i: u64, seed: u64) -> u64 {
    mix(i ^ seed.rotate_left(17))
}

/// Most attempts of one thread's push onto its bucket's chain: each failed attempt means
/// another thread's push succeeded, so a chain this contended is a broken run, not a wait.
pub const MAX_PUSH_TRIES: u32 = 1 << 20;

/// The buckets (`nb` words, zero = empty) as atomics.
///
/// # Safety
/// `buckets` must hold `nb` 8-aligned words that only these kernels use while they run.
#[cfg(target_arch = "nvptx64")]
unsafe fn buckets<'a>(buckets: *mut u64, nb: u64) -> &'a [veballoc_kernels::atomic::Atom64] {
    // SAFETY: the caller vouches for the words.
    unsafe { veballoc_kernels::atomic::words(buckets as u64, nb as usize) }
}

/// Thread i < n inserts (hash_key(i), i) into a chained hash table of `nb` buckets: a boxed
/// node pushed onto its bucket with a compare-and-swap. `failed` counts pushes that gave up.
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn hash_insert(table: *mut u64, nb: u64, n: u64, seed: u64, failed: *mut u64) {
    let i = veballoc_kernels::arch::global_thread_x();
    if i >= n {
        return;
    }
    let key = hash_key(i, seed);
    let node = Box::into_raw(Box::new(Node { key, value: i, next: core::ptr::null_mut() }));
    // SAFETY: the host passes nb zeroed words.
    let head = unsafe { &buckets(table, nb)[(key % nb) as usize] };
    // Acquire: the nodes already on the chain (their fields) are visible before we link to them.
    let mut cur = head.load_acquire();
    for _ in 0..MAX_PUSH_TRIES {
        // SAFETY: the node is ours until the CAS below publishes it.
        unsafe { (*node).next = cur as usize as *mut Node };
        // AcqRel: the release publishes our node's fields to readers that acquire the head.
        match head.cas_acq_rel(cur, node as usize as u64) {
            Ok(_) => return,
            Err(now) => cur = now,
        }
    }
    // SAFETY: the node was never published.
    drop(unsafe { Box::from_raw(node) });
    // SAFETY: one host word.
    unsafe { veballoc_kernels::atomic::words(failed as u64, 1)[0].fetch_add_relaxed(1) };
}

/// Thread i < n looks its key up and counts it in `found` when the value is right.
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn hash_lookup(table: *mut u64, nb: u64, n: u64, seed: u64, found: *mut u64) {
    let i = veballoc_kernels::arch::global_thread_x();
    if i >= n {
        return;
    }
    let key = hash_key(i, seed);
    // SAFETY: as in hash_insert; the insert kernel has ended.
    let mut p = unsafe { buckets(table, nb)[(key % nb) as usize].load_acquire() } as usize as *const Node;
    while !p.is_null() {
        // SAFETY: nodes on a chain are live until hash_free.
        let node = unsafe { &*p };
        if node.key == key {
            if node.value == i {
                // SAFETY: one host word.
                unsafe { veballoc_kernels::atomic::words(found as u64, 1)[0].fetch_add_relaxed(1) };
            }
            return;
        }
        p = node.next;
    }
}

/// Thread b < nb frees bucket b's chain.
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn hash_free(table: *mut u64, nb: u64) {
    let b = veballoc_kernels::arch::global_thread_x();
    if b >= nb {
        return;
    }
    // SAFETY: as in hash_insert; no other kernel runs.
    let mut p = unsafe { buckets(table, nb)[b as usize].load_acquire() } as usize as *mut Node;
    while !p.is_null() {
        // SAFETY: every node was boxed by hash_insert and is on exactly one chain.
        let node = unsafe { Box::from_raw(p) };
        p = node.next;
    }
}
