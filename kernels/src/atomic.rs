//! The one atomics shim: GPU inline asm, `core` atomics on the host, `loom` under `--cfg loom`
//! (where the metadata's words live in an arena of loom atomics, `LoomMeta`).
//!
//! Every method name carries its ordering. On the GPU all of them are `.gpu` scope: the heap is
//! shared by the threads of one device and never by the host while kernels run, so `.sys`
//! scope (what LLVM emits for `core` atomics) would only cost time. We write the RMWs in
//! inline asm because LLVM 22 drops the ordering of `fetch_add/or/and/swap` on NVPTX (it emits
//! a relaxed `atom`), which would silently break our acquire/release chains.

#[cfg(all(not(target_arch = "nvptx64"), not(loom)))]
use core::sync::atomic::{AtomicU32 as Inner32, AtomicU64 as Inner64, Ordering};
#[cfg(all(not(target_arch = "nvptx64"), loom))]
use loom::sync::atomic::{AtomicU32 as Inner32, AtomicU64 as Inner64, Ordering};

#[cfg(target_arch = "nvptx64")]
use core::cell::UnsafeCell;

/// A 64-bit word updated only through the ordered methods below.
#[repr(transparent)]
pub struct Atom64 {
    #[cfg(target_arch = "nvptx64")]
    v: UnsafeCell<u64>,
    #[cfg(not(target_arch = "nvptx64"))]
    v: Inner64,
}

/// A 32-bit word updated only through the ordered methods below.
#[repr(transparent)]
pub struct Atom32 {
    #[cfg(target_arch = "nvptx64")]
    v: UnsafeCell<u32>,
    #[cfg(not(target_arch = "nvptx64"))]
    v: Inner32,
}

// SAFETY: every access to the cell goes through an atomic instruction (GPU) or a std/loom atomic.
#[cfg(target_arch = "nvptx64")]
unsafe impl Sync for Atom64 {}
// SAFETY: as for Atom64.
#[cfg(target_arch = "nvptx64")]
unsafe impl Sync for Atom32 {}

/// Generates the GPU (inline PTX) implementation of one width.
#[cfg(target_arch = "nvptx64")]
macro_rules! gpu_atomic_impl {
    ($name:ident, $t:ty, $reg:ident, $u:literal, $b:literal) => {
        impl $name {
            /// This word's address in the global state space, for the instructions below
            /// (`.global`: with generic addresses the compiler must also handle a word in shared
            /// memory, and emits a CAS loop beside each 64-bit RMW, on every path).
            #[inline(always)]
            fn p(&self) -> u64 {
                let g: u64;
                // SAFETY: a conversion, which reads and writes nothing. Every word is in global
                // memory: there is no `new` on the GPU, so a word comes from `words`/`words32`/
                // `word32` or an unsafe cast of an address, whose callers vouch for that (the
                // heap's metadata: `DeviceHeap::from_raw_parts`' contract; the test kernels'
                // counters: device buffers).
                unsafe {
                    core::arch::asm!(
                        "cvta.to.global.u64 {g}, {p};",
                        g = out(reg64) g,
                        p = in(reg64) self.v.get() as u64,
                        options(pure, nomem, nostack)
                    )
                };
                g
            }
            #[inline(always)]
            pub fn load_relaxed(&self) -> $t {
                let r: $t;
                // SAFETY: `p` points to a live, aligned word owned by `self`.
                unsafe { core::arch::asm!(concat!("ld.relaxed.gpu.global.", $u, " {r}, [{p}];"), r = out($reg) r, p = in(reg64) self.p()) };
                r
            }
            #[inline(always)]
            pub fn load_acquire(&self) -> $t {
                let r: $t;
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("ld.acquire.gpu.global.", $u, " {r}, [{p}];"), r = out($reg) r, p = in(reg64) self.p()) };
                r
            }
            #[inline(always)]
            pub fn store_relaxed(&self, x: $t) {
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("st.relaxed.gpu.global.", $u, " [{p}], {x};"), x = in($reg) x, p = in(reg64) self.p()) };
            }
            #[inline(always)]
            pub fn store_release(&self, x: $t) {
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("st.release.gpu.global.", $u, " [{p}], {x};"), x = in($reg) x, p = in(reg64) self.p()) };
            }
            #[inline(always)]
            pub fn fetch_add_relaxed(&self, x: $t) -> $t {
                let r: $t;
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("atom.relaxed.gpu.global.add.", $u, " {r}, [{p}], {x};"), r = out($reg) r, x = in($reg) x, p = in(reg64) self.p()) };
                r
            }
            #[inline(always)]
            pub fn fetch_add_acquire(&self, x: $t) -> $t {
                let r: $t;
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("atom.acquire.gpu.global.add.", $u, " {r}, [{p}], {x};"), r = out($reg) r, x = in($reg) x, p = in(reg64) self.p()) };
                r
            }
            #[inline(always)]
            pub fn fetch_add_release(&self, x: $t) -> $t {
                let r: $t;
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("atom.release.gpu.global.add.", $u, " {r}, [{p}], {x};"), r = out($reg) r, x = in($reg) x, p = in(reg64) self.p()) };
                r
            }
            #[inline(always)]
            pub fn fetch_add_acq_rel(&self, x: $t) -> $t {
                let r: $t;
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("atom.acq_rel.gpu.global.add.", $u, " {r}, [{p}], {x};"), r = out($reg) r, x = in($reg) x, p = in(reg64) self.p()) };
                r
            }
            #[inline(always)]
            pub fn fetch_sub_acq_rel(&self, x: $t) -> $t {
                self.fetch_add_acq_rel(x.wrapping_neg())
            }
            #[inline(always)]
            pub fn fetch_or_relaxed(&self, x: $t) -> $t {
                let r: $t;
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("atom.relaxed.gpu.global.or.", $b, " {r}, [{p}], {x};"), r = out($reg) r, x = in($reg) x, p = in(reg64) self.p()) };
                r
            }
            #[inline(always)]
            pub fn fetch_and_relaxed(&self, x: $t) -> $t {
                let r: $t;
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("atom.relaxed.gpu.global.and.", $b, " {r}, [{p}], {x};"), r = out($reg) r, x = in($reg) x, p = in(reg64) self.p()) };
                r
            }
            /// `fetch_add_relaxed` whose result nobody reads: a `red`, which the thread does not
            /// wait for.
            #[inline(always)]
            pub fn red_add_relaxed(&self, x: $t) {
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("red.relaxed.gpu.global.add.", $u, " [{p}], {x};"), x = in($reg) x, p = in(reg64) self.p()) };
            }
            /// `fetch_or_relaxed` whose result nobody reads: a `red`, which the thread does not
            /// wait for.
            #[inline(always)]
            pub fn red_or_relaxed(&self, x: $t) {
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("red.relaxed.gpu.global.or.", $b, " [{p}], {x};"), x = in($reg) x, p = in(reg64) self.p()) };
            }
            /// `fetch_and_relaxed` whose result nobody reads (a `red`).
            #[inline(always)]
            pub fn red_and_relaxed(&self, x: $t) {
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("red.relaxed.gpu.global.and.", $b, " [{p}], {x};"), x = in($reg) x, p = in(reg64) self.p()) };
            }
            #[inline(always)]
            pub fn fetch_or_release(&self, x: $t) -> $t {
                let r: $t;
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("atom.release.gpu.global.or.", $b, " {r}, [{p}], {x};"), r = out($reg) r, x = in($reg) x, p = in(reg64) self.p()) };
                r
            }
            #[inline(always)]
            pub fn fetch_or_acq_rel(&self, x: $t) -> $t {
                let r: $t;
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("atom.acq_rel.gpu.global.or.", $b, " {r}, [{p}], {x};"), r = out($reg) r, x = in($reg) x, p = in(reg64) self.p()) };
                r
            }
            #[inline(always)]
            pub fn fetch_and_acquire(&self, x: $t) -> $t {
                let r: $t;
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("atom.acquire.gpu.global.and.", $b, " {r}, [{p}], {x};"), r = out($reg) r, x = in($reg) x, p = in(reg64) self.p()) };
                r
            }
            #[inline(always)]
            pub fn fetch_and_acq_rel(&self, x: $t) -> $t {
                let r: $t;
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("atom.acq_rel.gpu.global.and.", $b, " {r}, [{p}], {x};"), r = out($reg) r, x = in($reg) x, p = in(reg64) self.p()) };
                r
            }
            #[inline(always)]
            pub fn swap_acq_rel(&self, x: $t) -> $t {
                let r: $t;
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("atom.acq_rel.gpu.global.exch.", $b, " {r}, [{p}], {x};"), r = out($reg) r, x = in($reg) x, p = in(reg64) self.p()) };
                r
            }
            /// Compare-and-swap; `Ok(old)` when it stored `new`, `Err(actual)` otherwise.
            #[inline(always)]
            pub fn cas_acq_rel(&self, cur: $t, new: $t) -> Result<$t, $t> {
                let r: $t;
                // SAFETY: as in load_relaxed.
                unsafe { core::arch::asm!(concat!("atom.acq_rel.gpu.global.cas.", $b, " {r}, [{p}], {c}, {n};"), r = out($reg) r, c = in($reg) cur, n = in($reg) new, p = in(reg64) self.p()) };
                if r == cur { Ok(r) } else { Err(r) }
            }
        }
    };
}

#[cfg(target_arch = "nvptx64")]
gpu_atomic_impl!(Atom64, u64, reg64, "u64", "b64");
#[cfg(target_arch = "nvptx64")]
gpu_atomic_impl!(Atom32, u32, reg32, "u32", "b32");

/// Generates the host (std or loom) implementation of one width.
#[cfg(not(target_arch = "nvptx64"))]
macro_rules! host_atomic_impl {
    ($name:ident, $t:ty, $inner:ident) => {
        impl $name {
            #[cfg(not(loom))]
            pub const fn new(x: $t) -> Self {
                Self { v: $inner::new(x) }
            }
            #[cfg(loom)]
            pub fn new(x: $t) -> Self {
                Self { v: $inner::new(x) }
            }
            #[inline(always)]
            pub fn load_relaxed(&self) -> $t {
                self.v.load(Ordering::Relaxed)
            }
            #[inline(always)]
            pub fn load_acquire(&self) -> $t {
                self.v.load(Ordering::Acquire)
            }
            #[inline(always)]
            pub fn store_relaxed(&self, x: $t) {
                self.v.store(x, Ordering::Relaxed)
            }
            #[inline(always)]
            pub fn store_release(&self, x: $t) {
                self.v.store(x, Ordering::Release)
            }
            #[inline(always)]
            pub fn fetch_add_relaxed(&self, x: $t) -> $t {
                self.v.fetch_add(x, Ordering::Relaxed)
            }
            #[inline(always)]
            pub fn fetch_add_acquire(&self, x: $t) -> $t {
                self.v.fetch_add(x, Ordering::Acquire)
            }
            #[inline(always)]
            pub fn fetch_add_release(&self, x: $t) -> $t {
                self.v.fetch_add(x, Ordering::Release)
            }
            #[inline(always)]
            pub fn fetch_add_acq_rel(&self, x: $t) -> $t {
                self.v.fetch_add(x, Ordering::AcqRel)
            }
            #[inline(always)]
            pub fn fetch_sub_acq_rel(&self, x: $t) -> $t {
                self.v.fetch_sub(x, Ordering::AcqRel)
            }
            #[inline(always)]
            pub fn fetch_or_relaxed(&self, x: $t) -> $t {
                self.v.fetch_or(x, Ordering::Relaxed)
            }
            #[inline(always)]
            pub fn fetch_and_relaxed(&self, x: $t) -> $t {
                self.v.fetch_and(x, Ordering::Relaxed)
            }
            /// `fetch_add_relaxed` whose result nobody reads (a `red` on the GPU).
            #[inline(always)]
            pub fn red_add_relaxed(&self, x: $t) {
                self.v.fetch_add(x, Ordering::Relaxed);
            }
            /// `fetch_or_relaxed` whose result nobody reads (a `red` on the GPU).
            #[inline(always)]
            pub fn red_or_relaxed(&self, x: $t) {
                self.v.fetch_or(x, Ordering::Relaxed);
            }
            /// `fetch_and_relaxed` whose result nobody reads (a `red` on the GPU).
            #[inline(always)]
            pub fn red_and_relaxed(&self, x: $t) {
                self.v.fetch_and(x, Ordering::Relaxed);
            }
            #[inline(always)]
            pub fn fetch_or_release(&self, x: $t) -> $t {
                self.v.fetch_or(x, Ordering::Release)
            }
            #[inline(always)]
            pub fn fetch_or_acq_rel(&self, x: $t) -> $t {
                self.v.fetch_or(x, Ordering::AcqRel)
            }
            #[inline(always)]
            pub fn fetch_and_acquire(&self, x: $t) -> $t {
                self.v.fetch_and(x, Ordering::Acquire)
            }
            #[inline(always)]
            pub fn fetch_and_acq_rel(&self, x: $t) -> $t {
                self.v.fetch_and(x, Ordering::AcqRel)
            }
            #[inline(always)]
            pub fn swap_acq_rel(&self, x: $t) -> $t {
                self.v.swap(x, Ordering::AcqRel)
            }
            /// Compare-and-swap; `Ok(old)` when it stored `new`, `Err(actual)` otherwise.
            #[inline(always)]
            pub fn cas_acq_rel(&self, cur: $t, new: $t) -> Result<$t, $t> {
                self.v.compare_exchange(cur, new, Ordering::AcqRel, Ordering::Acquire)
            }
        }
    };
}

#[cfg(not(target_arch = "nvptx64"))]
host_atomic_impl!(Atom64, u64, Inner64);
#[cfg(not(target_arch = "nvptx64"))]
host_atomic_impl!(Atom32, u32, Inner32);

/// Views `n` words at `addr` as atomics.
///
/// # Safety
/// `addr` must be 8-aligned and point to `n` live words that are only accessed atomically
/// for the lifetime `'a`; on the GPU, in global memory (the driver's allocations, a module's
/// globals), not shared or local memory: the GPU's atomics use the global state space.
#[cfg(not(loom))]
#[inline(always)]
pub unsafe fn words<'a>(addr: u64, n: usize) -> &'a [Atom64] {
    // SAFETY: Atom64 is repr(transparent) over a u64-sized, u64-aligned cell; the caller vouches
    // for the memory.
    unsafe { core::slice::from_raw_parts(addr as usize as *const Atom64, n) }
}

/// Views `n` 32-bit words at `addr` as atomics.
///
/// # Safety
/// As for `words`, with 4-byte alignment.
#[cfg(not(loom))]
#[inline(always)]
pub unsafe fn words32<'a>(addr: u64, n: usize) -> &'a [Atom32] {
    // SAFETY: Atom32 is repr(transparent) over a u32-sized cell; the caller vouches for the memory.
    unsafe { core::slice::from_raw_parts(addr as usize as *const Atom32, n) }
}

/// The 32-bit word at `addr` as an atomic: `words32(addr, 1)`, with no bounds check left
/// (a slice's index is checked against a length the hot paths would load first).
///
/// # Safety
/// As for `words32`.
#[inline(always)]
pub unsafe fn word32<'a>(addr: u64) -> &'a Atom32 {
    // SAFETY: the caller vouches for the word, as for words32.
    unsafe { &words32(addr, 1)[0] }
}

/// Under loom: the metadata's words are loom atomics in an arena (`LoomMeta`), which
/// `words` and `words32` find by address, so that the layers run unchanged over them.
#[cfg(loom)]
mod arena {
    extern crate std;
    use super::{Atom32, Atom64};
    use std::boxed::Box;
    use std::sync::Mutex;
    use std::vec::Vec;

    /// A live arena: the address range it stands for, the part of it with no words (`gap`,
    /// byte offsets), and where its words are.
    struct Entry {
        base: u64,
        bytes: u64,
        gap: (u64, u64),
        w64: usize,
        w32: usize,
    }

    /// Every live arena (a few at a time: one per loom model running).
    static ARENAS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

    /// A heap's metadata under loom: real memory for its addresses (the layout header is read
    /// from it), and one loom atomic per 8-byte and per 4-byte word of it (each part of the
    /// metadata uses one width: `words` gives the 8-byte ones, `words32` the 4-byte ones).
    pub struct LoomMeta {
        mem: Box<[u64]>,
        w64: Box<[Atom64]>,
        w32: Box<[Atom32]>,
    }

    impl LoomMeta {
        /// Metadata of `bytes` (a multiple of 8) that starts with `header`; every word zero.
        /// Create it inside the loom model (its atomics belong to one execution).
        pub fn new(header: &[u64], bytes: u64) -> Self {
            Self::with_gap(header, bytes, (0, 0))
        }

        /// `new`, with no atomics for the bytes `gap.0..gap.1` (8-aligned offsets): a part of
        /// the metadata the models never touch, whose loom atomics would cost every execution
        /// (the packed bound bitmaps, 128 KiB a segment). An access there panics.
        pub fn with_gap(header: &[u64], bytes: u64, gap: (u64, u64)) -> Self {
            assert!(gap.0 <= gap.1 && gap.1 <= bytes && gap.0.is_multiple_of(8) && gap.1.is_multiple_of(8));
            let words = (bytes / 8) as usize;
            let mut mem = std::vec![0u64; words].into_boxed_slice();
            mem[..header.len()].copy_from_slice(header);
            let backed = words - ((gap.1 - gap.0) / 8) as usize;
            let w64: Box<[Atom64]> = (0..backed).map(|_| Atom64::new(0)).collect();
            let w32: Box<[Atom32]> = (0..2 * backed).map(|_| Atom32::new(0)).collect();
            let entry = Entry {
                base: mem.as_ptr() as u64,
                bytes,
                gap,
                w64: w64.as_ptr() as usize,
                w32: w32.as_ptr() as usize,
            };
            ARENAS.lock().unwrap().push(entry);
            Self { mem, w64, w32 }
        }

        /// The metadata's address (what `DeviceHeap::meta` holds).
        pub fn addr(&self) -> u64 {
            self.mem.as_ptr() as u64
        }
    }

    impl Drop for LoomMeta {
        fn drop(&mut self) {
            let base = self.addr();
            ARENAS.lock().unwrap().retain(|e| e.base != base);
            // The words go with `self`; nothing names them any more.
            let _ = (&self.w64, &self.w32);
        }
    }

    /// The first of `n` words of `width` bytes at `addr` in a live arena.
    pub(super) fn find(addr: u64, n: usize, width: u64) -> usize {
        let arenas = ARENAS.lock().unwrap();
        let e = arenas
            .iter()
            .find(|e| addr >= e.base && addr + n as u64 * width <= e.base + e.bytes)
            .expect("an address outside every loom arena");
        assert!((addr - e.base).is_multiple_of(width), "a misaligned metadata word");
        let (off, end) = (addr - e.base, addr - e.base + n as u64 * width);
        assert!(end <= e.gap.0 || off >= e.gap.1, "a metadata word the loom arena does not model");
        let off = if off >= e.gap.1 { off - (e.gap.1 - e.gap.0) } else { off };
        let i = (off / width) as usize;
        if width == 8 {
            e.w64 + i * core::mem::size_of::<Atom64>()
        } else {
            e.w32 + i * core::mem::size_of::<Atom32>()
        }
    }
}

#[cfg(loom)]
pub use arena::LoomMeta;

/// Loom's `words`: the atomics of the arena that stands for `addr` (see `LoomMeta`).
///
/// # Safety
/// `addr` must lie in a live `LoomMeta` with `n` words from it, which outlives `'a`.
#[cfg(loom)]
pub unsafe fn words<'a>(addr: u64, n: usize) -> &'a [Atom64] {
    // SAFETY: `find` checked that the n words lie in a live arena; the caller vouches that it
    // outlives 'a.
    unsafe { core::slice::from_raw_parts(arena::find(addr, n, 8) as *const Atom64, n) }
}

/// Loom's `words32` (see `words`).
///
/// # Safety
/// As for `words`.
#[cfg(loom)]
pub unsafe fn words32<'a>(addr: u64, n: usize) -> &'a [Atom32] {
    // SAFETY: as in `words`.
    unsafe { core::slice::from_raw_parts(arena::find(addr, n, 4) as *const Atom32, n) }
}
