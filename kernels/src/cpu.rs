//! The host twin of a device heap: the same allocator over host memory, for CPU tests and
//! for running the allocator on CPU threads where no GPU exists.

extern crate std;
use std::alloc::{alloc, dealloc, Layout};
use std::vec::Vec;

use crate::block::{slice_bytes, slice_class};
use crate::heap::{DeviceHeap, HeapLayout};

/// Alignment of the host segment memory: a segment, as the device heap's segment 0 (see
/// `veballoc::Heap`), so that the CPU model honours the same alignments (`malloc_layout`
/// aligns from segment 0's address). Reserved address space only: the pages are touched
/// where used.
const HOST_MEM_ALIGN: usize = crate::SEGMENT_BYTES as usize;

/// A heap over host memory. Segment memory is reserved but only touched where used.
pub struct CpuHeap {
    mem: *mut u8,
    mem_layout: Layout,
    _meta: Vec<u64>,
    heap: DeviceHeap,
}

// SAFETY: the heap's shared state is only touched through atomics; the raw memory is owned.
unsafe impl Send for CpuHeap {}
// SAFETY: as above.
unsafe impl Sync for CpuHeap {}

impl CpuHeap {
    /// A heap of `num_segments` 16 MiB segments with `shards` current slots per class, with
    /// the safety checks when the build has them (`crate::CHECKS`).
    pub fn new(num_segments: u32, shards: u32) -> Self {
        Self::with_checks(num_segments, shards, crate::CHECKS)
    }

    /// As `new`; `checks` asks for the hand-out bitmap (used only if `crate::CHECKS`).
    pub fn with_checks(num_segments: u32, shards: u32, checks: bool) -> Self {
        Self::with_layout(HeapLayout::new(num_segments, shards, checks))
    }

    /// A heap of the given layout (e.g. `HeapLayout::with_pin_shift` of another policy).
    ///
    /// # Panics
    /// Unless `layout` is what `HeapLayout::try_new` makes of its segment count, shards and
    /// checks, but for the rows' slot counts (`with_pin_shift`), each at most `shards`: its
    /// fields are public, and the heap trusts every offset in it.
    pub fn with_layout(layout: HeapLayout) -> Self {
        let made = HeapLayout::try_new(layout.num_segments, layout.shards, layout.checks != 0)
            .expect("a layout of 1..=MAX_SEGMENTS segments and power-of-two shards");
        let rows_fit = layout.row_shard_log2.iter().all(|&l| (l as u32) <= layout.shards.trailing_zeros());
        assert!(
            rows_fit && layout == HeapLayout { row_shard_log2: layout.row_shard_log2, ..made },
            "with_layout takes a layout of HeapLayout::new / try_new (and with_pin_shift), unchanged"
        );
        let num_segments = layout.num_segments;
        let bytes = (num_segments as usize) << crate::SEGMENT_SHIFT;
        let mem_layout = Layout::from_size_align(bytes, HOST_MEM_ALIGN).expect("heap size");
        // SAFETY: non-zero size: try_new above refused 0 segments.
        let mem = unsafe { alloc(mem_layout) };
        assert!(!mem.is_null(), "host heap allocation of {bytes} bytes failed");
        let mut meta = std::vec![0u64; (layout.meta_bytes / 8) as usize];
        let header = layout.header_words();
        meta[..header.len()].copy_from_slice(&header);
        // SAFETY: `meta` holds the layout's meta_bytes (8-aligned u64s), its header then zeros,
        // and lives (never moved: a Vec's buffer) as long as `self`, which lends the handle by
        // reference only (on the host it is neither `Copy` nor `Clone`, see `heap()`); `mem`
        // is `num_segments` segments of fresh host memory aligned to a segment, owned by
        // `self` and touched only through the heap; the count is the layout's; the init words
        // are written next, before anything else uses the heap.
        let heap =
            unsafe { DeviceHeap::from_raw_parts(mem as u64, meta.as_ptr() as u64, num_segments as u64) };
        for i in 0..layout.init_words() {
            // SAFETY: the heap is new (above) and no other thread has it yet; i < init_words.
            unsafe { heap.init_word(i) };
        }
        Self { mem, mem_layout, _meta: meta, heap }
    }

    /// The handle, borrowed for `self`'s life. On the host `DeviceHeap` is neither `Copy`
    /// nor `Clone` (it is both in device code, where the launch vouches for its memory), so
    /// nothing made from it outlives the heap: an allocator is the reference
    /// (`Vec<T, &DeviceHeap>`).
    ///
    /// ```
    /// let cpu = veballoc_kernels::cpu::CpuHeap::new(4, 1);
    /// let h = cpu.heap();
    /// let p = h.malloc(16);
    /// assert!(!p.is_null());
    /// // SAFETY: p came from the malloc above, is freed once and not used after.
    /// unsafe { h.free(p) };
    /// ```
    ///
    /// A copy of the handle, which could outlive the heap, is refused:
    ///
    /// ```compile_fail,E0507
    /// let cpu = veballoc_kernels::cpu::CpuHeap::new(4, 1);
    /// let h = *cpu.heap();
    /// ```
    ///
    /// and so is a use after the heap is gone:
    ///
    /// ```compile_fail,E0505
    /// let cpu = veballoc_kernels::cpu::CpuHeap::new(4, 1);
    /// let h = cpu.heap();
    /// drop(cpu);
    /// let _ = h.malloc(16);
    /// ```
    pub fn heap(&self) -> &DeviceHeap {
        &self.heap
    }

    /// Whether the simulated warp serves a request of `size` bytes as a slice (a group's
    /// take): not 0 and not a run of whole blocks (those go per lane).
    fn slice_request(size: u64) -> bool {
        size != 0 && !crate::heap::takes_unit_run(size)
    }

    /// Whether a warp asking for `sizes` asks for one slice class only (its slice requests:
    /// not 0 and not whole blocks), as `malloc_slice`'s match tells it.
    fn uniform_warp(sizes: &[u64]) -> bool {
        let mut classes = sizes.iter().copied().filter(|&s| Self::slice_request(s)).map(slice_class);
        let first = classes.next();
        classes.all(|c| Some(c) == first)
    }

    /// Which lanes of a warp asking for `sizes` `malloc` serves from packed runs first: the
    /// slice requests of a warp where those want more than one class (as the match groups
    /// them, after `class::warp_class`) and are all at most `MIXED_PACKED_MAX_BYTES`; whole
    /// blocks and requests of mask classes (16 KiB and up, which leave before the decision on
    /// the GPU) do not count. (A packed null sends the lane on to its class.) The mask-class
    /// lanes used to count here (left open in NOTES r44: aligned, the CPU churn test's default
    /// draw got a null at 69.6% live, until a freed run's end segments went back to the
    /// segment tree at once, see `Blocks::release_run`).
    pub fn packed_lanes(sizes: &[u64]) -> Vec<bool> {
        let uniform = Self::uniform_warp(sizes);
        let group = |s: u64| crate::class::warp_class(slice_class(s), uniform);
        let class_lane = |s: u64| Self::slice_request(s) && !crate::class::is_mask_class(group(s));
        let class_lanes = || sizes.iter().copied().filter(|&s| class_lane(s));
        let first_group = class_lanes().next().map(group);
        let mixed = class_lanes().any(|s| Some(group(s)) != first_group);
        let small = class_lanes().all(|s| s <= crate::heap::MIXED_PACKED_MAX_BYTES);
        sizes.iter().map(|&s| mixed && small && class_lane(s)).collect()
    }

    /// Allocates for a simulated warp, the way `malloc` does on the device: lanes that want
    /// the same slice class form a group; its leader takes slices for all with one
    /// `take_slices` call, lanes it could not serve try again. Larger sizes go per lane. In a
    /// warp of several classes, the requests up to `MIXED_PACKED_MAX_BYTES` pack together
    /// (`warp_malloc_packed`), as `malloc_slice_in` routes them.
    pub fn warp_malloc(&self, sizes: &[u64]) -> Vec<*mut u8> {
        self.warp_malloc_paths(sizes).0
    }

    /// `warp_malloc`, and for each lane whether its object is packed: a routed lane
    /// (`packed_lanes`) whose packed take found no block is served by its class instead.
    pub fn warp_malloc_paths(&self, sizes: &[u64]) -> (Vec<*mut u8>, Vec<bool>) {
        assert!(sizes.len() <= crate::arch::WARP_SIZE as usize);
        let mut out = std::vec![core::ptr::null_mut(); sizes.len()];
        // Each lane's class as `malloc_slice` picks it: the band's odd classes for a warp
        // whose lanes all ask for one class only (`class::warp_class`).
        let uniform = Self::uniform_warp(sizes);
        let routed = Self::packed_lanes(sizes);
        let packed: Vec<usize> = (0..sizes.len()).filter(|&l| routed[l]).collect();
        if !packed.is_empty() {
            let got = self.warp_malloc_packed(&packed.iter().map(|&l| sizes[l]).collect::<Vec<_>>());
            for (i, &l) in packed.iter().enumerate() {
                out[l] = got[i];
            }
        }
        // Routed lanes the packed rows could not serve go on to their classes.
        let packed_ok: Vec<bool> = (0..sizes.len()).map(|l| routed[l] && !out[l].is_null()).collect();
        let mut pending: Vec<usize> = (0..sizes.len()).filter(|&l| !packed_ok[l]).collect();
        let class_of_lane = |s: u64| crate::class::warp_class(slice_class(s), uniform);
        for _ in 0..crate::heap::WARP_ROUNDS {
            if pending.is_empty() {
                break;
            }
            let mut next = Vec::new();
            let mut done = std::vec![false; sizes.len()];
            for &lane in &pending {
                if done[lane] {
                    continue;
                }
                let size = sizes[lane];
                if !Self::slice_request(size) {
                    out[lane] = self.heap.malloc(size);
                    done[lane] = true;
                    continue;
                }
                let c = class_of_lane(size);
                let group: Vec<usize> = pending
                    .iter()
                    .copied()
                    .filter(|&l| !done[l] && Self::slice_request(sizes[l]) && class_of_lane(sizes[l]) == c)
                    .collect();
                let taken = self.heap.take_group::<true>(c, group.len() as u32);
                for (rank, &l) in group.iter().enumerate() {
                    done[l] = true;
                    match taken {
                        Some((t, served)) if (rank as u32) < t.total() => {
                            out[l] = t.addr(rank as u32, slice_bytes(served)) as *mut u8
                        }
                        Some(_) => next.push(l),
                        None => {}
                    }
                }
            }
            pending = next;
        }
        (out, packed_ok)
    }
}

impl CpuHeap {
    /// Simulates `malloc_packed` for one warp whose lanes ask for `sizes`: in each round the
    /// lanes still waiting pack, band by band (`packed_band` of each request), their sizes
    /// rounded to the band's unit in lane order into one run of the band's packed row taken
    /// with one `take`; the lanes whose whole object fits are served, the rest try again.
    pub fn warp_malloc_packed(&self, sizes: &[u64]) -> Vec<*mut u8> {
        use crate::heap::{packed_band, PACKED_MAX_BYTES};
        assert!(sizes.len() <= crate::arch::WARP_SIZE as usize);
        let mut out = std::vec![core::ptr::null_mut(); sizes.len()];
        let mut pending = Vec::new();
        for (lane, &size) in sizes.iter().enumerate() {
            if size == 0 || size > PACKED_MAX_BYTES {
                out[lane] = self.heap.malloc(size);
            } else {
                pending.push(lane);
            }
        }
        for _ in 0..crate::heap::WARP_ROUNDS {
            if pending.is_empty() {
                break;
            }
            let mut next = Vec::new();
            // The bands' leaders take at once on the GPU; here one after another.
            for band in 0..crate::slice::PACKED_CLASSES.len() {
                let lanes: Vec<usize> =
                    pending.iter().copied().filter(|&l| packed_band(sizes[l]) == band).collect();
                if lanes.is_empty() {
                    continue;
                }
                let c = crate::slice::PACKED_CLASSES[band];
                let unit = crate::block::slice_bytes(c);
                let units: Vec<u32> = lanes.iter().map(|&l| sizes[l].div_ceil(unit) as u32).collect();
                // A packed row's runs are one block: the take is one piece.
                // SAFETY: at most a warp's requests of at most PACKED_MAX_UNITS units each
                // (`packed_band`): at most PACKED_UNITS_PER_WARP (512), below MAX_TAKE.
                let Some(crate::slice::Taken { base, got, .. }) = (unsafe {
                    self.heap.slots().take_in_row(crate::slice::packed_row(band), units.iter().sum())
                }) else {
                    // The band's lanes get null (left so in `out`).
                    continue;
                };
                let (mut before, mut served) = (0u32, 0usize);
                while served < lanes.len() && before + units[served] <= got {
                    let p = base + before as u64 * unit;
                    // SAFETY: the object lies within the take above (class c's packed row),
                    // after the objects served before it, and is not handed out yet.
                    unsafe { self.heap.mark_packed_object(p, c, units[served]) };
                    if self.heap.checking() {
                        // SAFETY: p is the first unit of this request's run of the take above.
                        unsafe { self.heap.hand_out().mark_handed_out(p, c, 1) };
                    }
                    out[lanes[served]] = p as *mut u8;
                    before += units[served];
                    served += 1;
                }
                // SAFETY: base/got are the take above (class c's packed row), settled once, and
                // the served requests' runs lie within it.
                unsafe { self.heap.settle_packed(base, c, got, served as u32) };
                next.extend_from_slice(&lanes[served..]);
            }
            next.sort_unstable();
            pending = next;
        }
        out
    }
}

impl Drop for CpuHeap {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.mem, self.mem_layout) };
    }
}
