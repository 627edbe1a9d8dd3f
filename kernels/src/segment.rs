//! Segments: the heap is an array of 16 MiB segments. The segment tree holds the free ones;
//! a per-segment table says what each used segment holds (a group of size classes, or part of a
//! multi-segment run), which is all `free` needs to find a pointer's size: no headers.

use crate::atomic::Atom32;
use crate::class::{MAX_BLOCKS_PER_SEGMENT, NUM_GROUPS};
use crate::layout::{HeapLayout, TABLE_OFF};
use crate::veb::{full_word, word_position, Veb};
use crate::{SEGMENT_BYTES, SEGMENT_SHIFT};

bitflags::bitflags! {
    /// Flags of a segment-table entry; the low 8 bits hold the group. Zero means free.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct SegFlags: u32 {
        /// Formatted into blocks of the group in the low bits. (Bits 9 and 10 marked the
        /// segments of a multi-segment run until runs of blocks crossed segments; an entry
        /// with them decodes as corrupt.)
        const FORMATTED = 1 << 8;
        /// Unused since `free` reads every block's kind (a block's class is in it); never set,
        /// kept so that no other flag takes the bit.
        const HAS_WHOLE = 1 << 11;
        /// Owned by the host-side pool (`veballoc::Heap::alloc`): device `free` refuses it.
        const HOST = 1 << 12;
        /// Its memory was returned to the driver (`veballoc::Heap::trim_memory`): out of the
        /// segment tree until the host maps memory for it again.
        const RELEASED = 1 << 13;
    }
}

/// Mask of the group bits of a table entry.
pub const CLASS_MASK: u32 = 0xff;
/// Bits of the "blocks out" word that count blocks taken from the group tree.
pub const OUT_COUNT_MASK: u32 = 0x7fff_ffff;
/// Set in the "blocks out" word while one reclaimer tries to take the segment back.
pub const RECLAIMING: u32 = 1 << 31;
/// Attempts to take an all-free segment back before leaving it formatted (still usable by
/// its group; the next sweep, `trim` or pending drain tries again).
pub const RECLAIM_RETRIES: u32 = 8;

/// A decoded segment-table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegKind {
    Free,
    /// Formatted for a group (see `class::group_of`).
    Group(usize),
    Host,
    Released,
    Corrupt(u32),
}

/// Decodes a segment-table entry.
pub fn seg_kind(entry: u32) -> SegKind {
    let f = SegFlags::from_bits_retain(entry & !CLASS_MASK).difference(SegFlags::HAS_WHOLE);
    if entry == 0 {
        SegKind::Free
    } else if f == SegFlags::FORMATTED && ((entry & CLASS_MASK) as usize) < NUM_GROUPS {
        SegKind::Group((entry & CLASS_MASK) as usize)
    } else if f == SegFlags::HOST {
        SegKind::Host
    } else if f == SegFlags::RELEASED {
        SegKind::Released
    } else {
        SegKind::Corrupt(entry)
    }
}

/// The segment layer's part of the metadata: the segment tree, the segment table, the
/// blocks-out counts and the run arrays (length, tail blocks), with the heap's segment memory
/// base for addresses. A `Copy` view (two words) that the heap builds from its layout
/// (`DeviceHeap::segments`); the block layer formats and reclaims segments through it.
#[derive(Clone, Copy, Debug)]
pub struct Segments<'a> {
    /// Address of segment 0.
    mem: u64,
    /// The layout, which sits at the start of the metadata: its address is the metadata's.
    layout: &'a HeapLayout,
}

impl<'a> Segments<'a> {
    /// The segments of the heap whose segment memory starts at `mem` and whose metadata starts
    /// with `layout`. `DeviceHeap::segments` builds it safely.
    ///
    /// ```compile_fail,E0133
    /// // Every method reads and writes relative to the layout's address: a stack value is no
    /// // heap's metadata.
    /// let layout = veballoc_kernels::HeapLayout::new(4, 1, false);
    /// let segs = veballoc_kernels::segment::Segments::new(0, &layout);
    /// ```
    ///
    /// # Safety
    /// `layout` is the header of a live heap's metadata (in global memory), as the heap builds
    /// the view (`DeviceHeap::segments`): the rest of that metadata follows it, and `mem` is that
    /// heap's segment 0 (the conditions of [`crate::DeviceHeap::from_raw_parts`]), for as long
    /// as the view or anything built on it (`Blocks`, `Slots`) is used. The view's methods
    /// write the metadata at offsets the layout gives and hand out segment memory.
    #[inline(always)]
    pub unsafe fn new(mem: u64, layout: &'a HeapLayout) -> Self {
        Self { mem, layout }
    }

    /// The heap's layout.
    #[inline(always)]
    pub fn layout(&self) -> &'a HeapLayout {
        self.layout
    }

    /// Address of the metadata (the layout is its header).
    #[inline(always)]
    pub fn meta(&self) -> u64 {
        self.layout as *const HeapLayout as usize as u64
    }

    /// Segments in the heap.
    #[inline(always)]
    pub fn count(&self) -> u32 {
        self.layout.num_segments
    }

    /// Writes init word `i` (0 .. layout.init_words()) of a zeroed metadata buffer: the init
    /// kernel runs one thread per word; the host twin loops.
    ///
    /// # Safety
    /// As for [`crate::DeviceHeap::init_word`]: the heap is being initialised, and no other
    /// method of it runs until every init word is written and published.
    pub unsafe fn init_word(&self, i: u32) {
        let l = &self.layout().seg_tree;
        let (level, w) = word_position(l, i);
        // SAFETY: i < total_words of the segment tree.
        let words =
            unsafe { crate::atomic::words(self.meta() + self.layout().seg_tree_off, l.total_words as usize) };
        // Relaxed: the kernel boundary (or the host thread join) publishes it.
        words[i as usize].store_relaxed(full_word(l, level, w));
    }

    #[inline(always)]
    pub(crate) fn seg_tree(&self) -> Veb<'a> {
        let l = self.layout().seg_tree;
        // SAFETY: the layout reserved `total_words` words at this offset.
        let w =
            unsafe { crate::atomic::words(self.meta() + self.layout().seg_tree_off, l.total_words as usize) };
        Veb::new(w, l)
    }

    #[inline(always)]
    fn seg_array(&self, off: u64, seg: u32) -> &'a Atom32 {
        // The CPU model checks what the GPU build assumes (a word past the array is another
        // array's: no fault, a wrong value).
        #[cfg(not(target_arch = "nvptx64"))]
        assert!(seg < self.count(), "segment {seg} of {}", self.count());
        // SAFETY: each per-segment array holds `num_segments` words at `off`; callers pass
        // seg < num_segments (derived from an in-range address or a tree index).
        unsafe { crate::atomic::word32(self.meta() + off + seg as u64 * 4) }
    }

    /// Table entry of segment `seg` (at `TABLE_OFF` in every layout: no header load).
    #[inline(always)]
    pub(crate) fn seg_table(&self, seg: u32) -> &'a Atom32 {
        self.seg_array(TABLE_OFF, seg)
    }

    /// Blocks of `seg` out of their tree, plus the `RECLAIMING` flag.
    #[inline(always)]
    pub(crate) fn seg_out(&self, seg: u32) -> &'a Atom32 {
        self.seg_array(self.layout().seg_out_off, seg)
    }

    /// Address of segment `seg`.
    #[inline(always)]
    pub fn segment_addr(&self, seg: u32) -> u64 {
        self.mem + ((seg as u64) << SEGMENT_SHIFT)
    }

    /// Claims `k` contiguous segments for the host-side pool; returns the first. Their
    /// entries say `HOST`, so that device `free` of a pointer into them is refused. Safe: a
    /// claim takes only free segments (the tree decides between racers).
    pub fn claim_host(&self, k: u64) -> Option<u32> {
        let s = self.seg_tree().claim_run(k)? as u32;
        for t in 0..k as u32 {
            // Release: ordered before any later use of the segment by the host's kernels.
            self.seg_table(s + t).store_release(SegFlags::HOST.bits());
        }
        Some(s)
    }

    /// Returns `k` host-owned segments from `s` to the segment tree.
    ///
    /// # Safety
    /// As for [`crate::DeviceHeap::release_host`]: segments `s .. s + k` were claimed by
    /// `claim_host` of this heap, are given back once, and are not used after.
    pub unsafe fn release_host(&self, s: u32, k: u32) {
        for t in 0..k {
            // Relaxed: the release inserts below publish the cleared entries.
            self.seg_table(s + t).store_relaxed(0);
        }
        self.seg_tree().insert_range(s as u64, k as u64);
    }

    /// Takes free segments out of the segment tree so that the host can return their memory:
    /// from the highest index down (the tree hands out the lowest first), keeping `keep`
    /// free; at most `out.len()`. Their entries say `RELEASED`. Returns how many, listed in
    /// `out`. One thread; safe while others allocate (a segment another thread claims first
    /// is skipped).
    pub fn release_free_segments(&self, keep: u32, out: &mut [u32]) -> usize {
        let tree = self.seg_tree();
        let free = tree.count() as u32;
        let mut n = 0;
        let mut seg = self.layout().num_segments;
        while seg > 0 && n < out.len() && free.saturating_sub(n as u32) > keep {
            seg -= 1;
            if tree.contains(seg as u64) && tree.remove(seg as u64) {
                // Release: the host reads the list after the kernel; the entry keeps device
                // frees and the validator off the segment.
                self.seg_table(seg).store_release(SegFlags::RELEASED.bits());
                out[n] = seg;
                n += 1;
            }
        }
        n
    }

    /// Returns released segment `seg` (its memory mapped again) to the segment tree.
    ///
    /// # Safety
    /// As for [`crate::DeviceHeap::reacquire_segment`]: `seg` was taken out by
    /// `release_free_segments` of this heap, is given back once, and its memory is mapped
    /// again.
    pub unsafe fn reacquire_segment(&self, seg: u32) {
        // Relaxed: the release insert below publishes it.
        self.seg_table(seg).store_relaxed(0);
        self.seg_tree().insert(seg as u64);
    }
}

const _: () = assert!(MAX_BLOCKS_PER_SEGMENT as u64 * crate::class::group_block_bytes(0) == SEGMENT_BYTES);

#[cfg(test)]
mod tests {
    use super::*;

    /// A formatted entry decodes to its group only for the heap's groups: a group byte past
    /// them (a corrupted table) is corrupt, so that neither `free` nor the validator uses it
    /// as a block geometry.
    #[test]
    fn entries_of_groups_past_the_last_are_corrupt() {
        for g in 0..NUM_GROUPS {
            assert_eq!(seg_kind(SegFlags::FORMATTED.bits() | g as u32), SegKind::Group(g));
        }
        for g in [NUM_GROUPS, CLASS_MASK as usize] {
            let entry = SegFlags::FORMATTED.bits() | g as u32;
            assert_eq!(seg_kind(entry), SegKind::Corrupt(entry));
        }
        assert_eq!(seg_kind(0), SegKind::Free);
        assert_eq!(seg_kind(SegFlags::HOST.bits()), SegKind::Host);
        assert_eq!(seg_kind(SegFlags::RELEASED.bits()), SegKind::Released);
    }
}
