//! Heap validator and statistics: walks the trees and tables of a quiescent heap (no kernel
//! running; on the host, over a copy of the device metadata) and checks them against each
//! other, as mimalloc's segment validator does.

use crate::block::{
    block_index, gid_of, group_block_bytes, group_blocks_per_segment, group_of, kind_parts, mask_range,
    run_block_handed, runs_cross_segments, slice_bytes, slices_per_block, slot_blocks, slot_parts, split_gid,
    KIND_FREE, KIND_PACKED, KIND_RUN_TAIL, KIND_SLICES, KIND_WHOLE, MAX_BLOCKS_PER_SEGMENT, NUM_CLASSES,
    NUM_GROUPS,
};
use crate::class::{is_mask_class, MASK_CLASS0, TABLE_CLASSES};
use crate::heap::{counter, DeviceHeap};
use crate::layout::{SLOT_ROWS, UNITS_PER_SEGMENT};
use crate::segment::{seg_kind, SegKind, OUT_COUNT_MASK};
use crate::slice::{packed_row, run_row, PACKED_CLASSES, RUN_GROUPS};

/// What the heap holds, from one walk of its metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Bytes the user holds: live slices and whole blocks (runs of them), at their usable size.
    pub bytes_in_use: u64,
    /// Segments in the segment tree.
    pub free_segments: u64,
    /// Segments formatted for each group (see `class::group_of`).
    pub segments_per_group: [u64; NUM_GROUPS],
    /// Segments owned by the host-side pool.
    pub host_segments: u64,
    /// Segments whose memory was returned to the driver.
    pub released_segments: u64,
    /// Blocks out of their tree serving slices, per class-table entry (includes current
    /// blocks; packed blocks count under their packed row's class, see
    /// `class::TABLE_CLASSES`).
    pub slice_blocks: [u64; TABLE_CLASSES],
    /// Blocks handed out whole, per group (each block of a run of whole blocks counts).
    pub whole_blocks: [u64; NUM_GROUPS],
    /// Live slices per class-table entry (packed objects not included: zero for the
    /// packed-only entries).
    pub live_slices: [u64; TABLE_CLASSES],
    /// Blocks serving `malloc_packed` (counted in `slice_blocks` of their class too).
    pub packed_blocks: u64,
    /// Live packed objects (their sizes are not recorded, so they are not in `bytes_in_use`).
    pub live_packed: u64,
    /// Stale summary bits in the trees (harmless; searches skip them).
    pub stale_summary_bits: u64,
    /// Parked blocks claimed ahead: the blocks of run rows' current segments not handed out
    /// yet (`trim` returns them).
    pub reserved_blocks: u64,
    /// Runs of whole blocks that go on into the next segment (see
    /// `block::runs_cross_segments`).
    pub crossing_runs: u64,
    /// `free` calls on pointers the heap never handed out.
    pub invalid_frees: u64,
    /// `free` calls on slices not handed out at the time (double frees), counted by heaps
    /// with checks.
    pub double_frees: u64,
    /// Requests answered with null for lack of memory.
    pub out_of_memory: u64,
}

impl Default for Stats {
    fn default() -> Self {
        Self {
            bytes_in_use: 0,
            free_segments: 0,
            segments_per_group: [0; NUM_GROUPS],
            host_segments: 0,
            released_segments: 0,
            slice_blocks: [0; TABLE_CLASSES],
            whole_blocks: [0; NUM_GROUPS],
            live_slices: [0; TABLE_CLASSES],
            packed_blocks: 0,
            live_packed: 0,
            stale_summary_bits: 0,
            reserved_blocks: 0,
            crossing_runs: 0,
            invalid_frees: 0,
            double_frees: 0,
            out_of_memory: 0,
        }
    }
}

impl Stats {
    /// Blocks out of their trees, all classes.
    pub fn blocks_in_use(&self) -> u64 {
        self.slice_blocks.iter().chain(self.whole_blocks.iter()).sum()
    }
    /// Segments not in the segment tree.
    pub fn segments_in_use(&self) -> u64 {
        self.segments_per_group.iter().sum::<u64>() + self.host_segments
    }
}

/// The first inconsistency the validator found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapError {
    /// A tree's summaries hide a free index (`tree` is the group, `None` for the segment tree).
    Tree { tree: Option<usize>, err: crate::veb::VebError },
    /// The segment tree and the table disagree about segment `seg`.
    SegmentTreeMismatch { seg: u32, entry: u32 },
    /// A table entry that decodes to nothing.
    CorruptEntry { seg: u32, entry: u32 },
    /// A block bit of group `group` is set inside segment `seg`, which is not of that group
    /// (or past the group's blocks in it).
    StrayBlockBit { seg: u32, group: usize },
    /// A block out of its tree whose kind word is none of the kinds, or names a class of
    /// another group.
    BadBlockKind { seg: u32, local: u32, word: u32 },
    /// The out-count of `seg` differs from the blocks missing from its tree.
    OutCount { seg: u32, counted: u32, found: u32 },
    /// A free block whose counters are not parked (free count zero, kind free): in its tree,
    /// or in a free segment (whose next format takes them as parked).
    FreeBlockNotParked { seg: u32, local: u32 },
    /// A block out of its tree whose kind says parked: handed out, but not as anything.
    ParkedBlockOutOfTree { seg: u32, local: u32 },
    /// A slice block with more frees than hand-outs.
    OverFreed { seg: u32, local: u32 },
    /// A slice block whose every slice came back but which was not recycled.
    NotRecycled { seg: u32, local: u32 },
    /// A run of whole blocks that is broken: a run length of 0 or past the heap's blocks (past
    /// the segment's, for a group whose runs stay in one), a block of the run not marked as
    /// its tail (or in a segment of another group), or a tail block outside any run.
    BadBlockRun { seg: u32, local: u32 },
    /// The hand-out bitmap of a block disagrees with its live count (heaps with checks).
    HandOutBits { seg: u32, local: u32, marked: u32, live: u32 },
    /// Word `word` of a row's slot words is none of the slots the row uses
    /// (`HeapLayout::row_shards` of them, spread over its words: `Slots::current_word`) and
    /// holds a run: sweeps and steals, which look at the used slots only, would never reach it.
    UnusedSlotBusy { row: usize, word: u32 },
    /// The kind-word copy of 64 KiB unit `unit` of segment `seg` (`Blocks::unit_kind`) is not
    /// the kind word of its block (`word`; free outside formatted segments): `free` would
    /// take the pointers there for another kind or class.
    KindCopy { seg: u32, unit: u32, copy: u32, word: u32 },
    /// The handle's segment count (`DeviceHeap::num_segments`) is not the layout's: the
    /// layers would find the table and the block metadata at the wrong offsets.
    HandleSegments { handle: u64, layout: u32 },
    /// A block's free mask (`Blocks::free_mask`) that its state does not allow: not zero in a
    /// block that serves no mask class (parked, whole, free segment, a class that counts its
    /// frees), a bit past the slices its slot has passed, or every slice's (not recycled).
    FreeMask { seg: u32, local: u32, mask: u64 },
    /// A block of mask class `class` with free slices that the class's partial-block index does
    /// not mark: no take would find them (`Slots::take_partial`).
    LostPartialMark { seg: u32, local: u32, class: usize },
    /// A mask class's partial-block index (`Blocks::partial_tree`) whose summaries hide a mark.
    PartialTree { class: usize, err: crate::veb::VebError },
    /// Slice `slice` of a block of a mask class, one its slot has passed, is both free (its
    /// mask bit) and handed out (its hand-out bit), or neither (heaps with checks): a free bit
    /// on a live slice would hand it out twice.
    MaskAgainstHandOut { seg: u32, local: u32, slice: u32 },
    /// (Heaps with checks) the live packed object at unit `unit` of block `local` has no size
    /// in its block's bound bitmap (`size` 0), or one that covers another live object's start:
    /// `usable_size` and `realloc` would read or hand out a neighbour's bytes.
    PackedBounds { seg: u32, local: u32, unit: u32, size: u64 },
}

impl DeviceHeap {
    /// Walks the heap and returns its statistics, or the first inconsistency.
    /// Call only while no kernel uses the heap.
    pub fn validate(&self) -> Result<Stats, HeapError> {
        let mut s = Stats::default();
        let n = self.layout().num_segments;
        if self.num_segments != n as u64 {
            return Err(HeapError::HandleSegments { handle: self.num_segments, layout: n });
        }
        s.stale_summary_bits +=
            self.segments().seg_tree().check().map_err(|err| HeapError::Tree { tree: None, err })?;
        for g in 0..NUM_GROUPS {
            s.stale_summary_bits +=
                self.blocks().block_tree(g).check().map_err(|err| HeapError::Tree { tree: Some(g), err })?;
        }
        for class in MASK_CLASS0..NUM_CLASSES {
            s.stale_summary_bits += self
                .blocks()
                .partial_tree(class)
                .check()
                .map_err(|err| HeapError::PartialTree { class, err })?;
        }
        for row in 0..SLOT_ROWS {
            for word in 0..self.layout().shards {
                let (w, used) = self.slots().current_word(row, word);
                // Acquire: quiescent heap; acquire for form's sake.
                if !used && w.load_acquire() != 0 {
                    return Err(HeapError::UnusedSlotBusy { row, word });
                }
            }
        }
        let current = self.current_blocks();
        // The run of whole blocks that goes on past the segment walked last: its group, and
        // how many of its blocks are still to come.
        let mut run = RunLeft { group: 0, tails: 0 };
        for seg in 0..n {
            // Acquire: quiescent heap; acquire for form's sake.
            let entry = self.segments().seg_table(seg).load_acquire();
            let kind = seg_kind(entry);
            let free = self.segments().seg_tree().contains(seg as u64);
            if free != (kind == SegKind::Free) {
                return Err(HeapError::SegmentTreeMismatch { seg, entry });
            }
            // Only the group of a segment's format may have its blocks in its tree, and only
            // the `group_blocks_per_segment` ids of that group.
            for g in 0..NUM_GROUPS {
                let first_stray = if kind == SegKind::Group(g) { group_blocks_per_segment(g) } else { 0 };
                if self.blocks().block_tree(g).any_free_in_segment(seg, first_stray) {
                    return Err(HeapError::StrayBlockBit { seg, group: g });
                }
            }
            if run.tails > 0 && kind != SegKind::Group(run.group) {
                return Err(HeapError::BadBlockRun { seg, local: 0 });
            }
            match kind {
                SegKind::Free => {
                    // A free segment has no block out and no reclaimer: a count that a
                    // release's late subtraction wrapped shows here (the reclaim stored 0).
                    // Acquire: quiescent heap (no kernel running); orders the read after every writer.
                    let counted = self.segments().seg_out(seg).load_acquire();
                    if counted != 0 {
                        return Err(HeapError::OutCount { seg, counted, found: 0 });
                    }
                    // Its next format takes every block's metadata as parked (all zeros).
                    for local in 0..MAX_BLOCKS_PER_SEGMENT {
                        let m = self.blocks().block_meta(seg, local);
                        // Acquire: quiescent heap (no kernel running); orders the read after every writer.
                        if (m.freed.load_acquire(), m.kind.load_acquire()) != (0, KIND_FREE) {
                            return Err(HeapError::FreeBlockNotParked { seg, local });
                        }
                        self.check_mask(seg, local, 0)?;
                    }
                    s.free_segments += 1
                }
                SegKind::Group(g) => {
                    s.segments_per_group[g] += 1;
                    self.check_group_segment(seg, g, &current, &mut run, &mut s)?;
                }
                SegKind::Host => s.host_segments += 1,
                SegKind::Released => s.released_segments += 1,
                SegKind::Corrupt(entry) => return Err(HeapError::CorruptEntry { seg, entry }),
            }
            // After the entry's own checks: a corrupt entry is reported as such.
            self.check_kind_copies(seg, kind)?;
        }
        // Acquire: quiescent heap (no kernel running); orders the read after every writer.
        s.invalid_frees = self.counter(counter::INVALID_FREE).load_acquire();
        // Acquire: quiescent heap (no kernel running); orders the read after every writer.
        s.out_of_memory = self.counter(counter::OUT_OF_MEMORY).load_acquire();
        // Acquire: quiescent heap (no kernel running); orders the read after every writer.
        s.double_frees = self.counter(counter::DOUBLE_FREE).load_acquire();
        Ok(s)
    }

    /// How many slices block `gid` of class `c` has handed out (or given back unhanded), if
    /// it is a current block: in a current slot's run (of its class's row, or of a packed row
    /// of that class) and not yet wholly passed by it (a passed block may have recycled and
    /// be another slot's now).
    pub(crate) fn current_blocks(&self) -> impl Fn(usize, u64) -> Option<u32> + '_ {
        move |c, gid| {
            let packed = (0..PACKED_CLASSES.len()).filter(|&i| PACKED_CLASSES[i] == c).map(packed_row);
            // A class row for request classes only (a packed-only class has none).
            (c < NUM_CLASSES).then_some(c).into_iter().chain(packed).find_map(|row| {
                (0..self.layout().row_shards(row)).find_map(|sh| {
                    // Acquire: quiescent heap (no kernel running); orders the read after every writer.
                    let w = self.slots().current(row, sh).load_acquire();
                    // A block the run has passed entirely may have recycled and be another
                    // slot's now: only a block the run has not passed is the run's.
                    match slot_parts(w) {
                        (Some(first), handed) if (first..first + slot_blocks(w) as u64).contains(&gid) => {
                            let h = run_block_handed(handed, (gid - first) as u32, slices_per_block(c));
                            (h < slices_per_block(c)).then_some(h)
                        }
                        _ => None,
                    }
                })
            })
        }
    }

    /// Whether block `local` of segment `seg` is a block not yet handed out of a run row's
    /// current segment (claimed ahead, parked).
    fn is_reserved(&self, seg: u32, local: u32) -> bool {
        (0..RUN_GROUPS.len()).any(|i| {
            (0..self.layout().row_shards(run_row(i))).any(|sh| {
                // Acquire: quiescent heap (no kernel running); orders the read after every writer.
                matches!(slot_parts(self.slots().current(run_row(i), sh).load_acquire()),
                    (Some(gid), handed) if split_gid(gid).0 == seg && local >= handed)
            })
        })
    }

    /// Every 64 KiB unit's kind-word copy of segment `seg` (of `kind`) must be its block's kind
    /// word, and free in a segment that is not formatted (its blocks were parked, copies
    /// with them, before it left its group).
    fn check_kind_copies(&self, seg: u32, kind: SegKind) -> Result<(), HeapError> {
        for unit in 0..UNITS_PER_SEGMENT as u32 {
            let word = match kind {
                // Acquire: quiescent heap (no kernel running); orders the read after every writer.
                SegKind::Group(g) => self.blocks().block_meta(seg, unit >> g).kind.load_acquire(),
                _ => KIND_FREE,
            };
            // Acquire: as above.
            let copy = self.blocks().unit_kind(seg as u64 * UNITS_PER_SEGMENT + unit as u64).load_acquire();
            if copy != word {
                return Err(HeapError::KindCopy { seg, unit, copy, word });
            }
        }
        Ok(())
    }

    /// Block `local` of segment `seg` must have the free mask `want` (zero: a block that
    /// serves no mask class, see `HeapError::FreeMask`).
    fn check_mask(&self, seg: u32, local: u32, want: u64) -> Result<(), HeapError> {
        // Acquire: quiescent heap (no kernel running); orders the read after every writer.
        let mask = self.blocks().free_mask(seg, local).load_acquire();
        if mask != want {
            return Err(HeapError::FreeMask { seg, local, mask });
        }
        Ok(())
    }

    /// With checks, block `local`'s hand-out bits must number its live slices (for a packed
    /// block, its live objects: one bit per object).
    fn check_bits(&self, seg: u32, local: u32, g: usize, live: u32) -> Result<(), HeapError> {
        if !self.checking() {
            return Ok(());
        }
        let marked = self.hand_out().marked_in_block(seg, local, g);
        if marked != live {
            return Err(HeapError::HandOutBits { seg, local, marked, live });
        }
        Ok(())
    }

    /// With checks, every live object of packed block `local` (class `c`, whose slot handed
    /// out `handed` units) has a size in the bound bitmap (`usable_size` not 0) that covers no
    /// other live object's start, so `usable_size` and `realloc` of it stay within it. A size
    /// too small (a stray bit inside the object) is not caught: nothing else records sizes.
    fn check_packed_bounds(
        &self,
        seg: u32,
        local: u32,
        g: usize,
        c: usize,
        handed: u32,
    ) -> Result<(), HeapError> {
        if !self.checking() {
            return Ok(());
        }
        let base = self.blocks().block_addr(g, gid_of(seg, local));
        let unit = slice_bytes(c);
        for u in 0..handed {
            let p = base + u as u64 * unit;
            if !self.hand_out().is_marked(p) {
                continue;
            }
            let size = self.usable_size(p as usize as *const u8);
            let units = (size / unit) as u32;
            if size == 0 || (1..units).any(|i| self.hand_out().is_marked(p + i as u64 * unit)) {
                return Err(HeapError::PackedBounds { seg, local, unit: u, size });
            }
        }
        Ok(())
    }

    /// Checks segment `seg`, formatted for group `g`: its blocks against its tree, their kinds
    /// and counts, the runs of whole blocks (`run`: one that began in the segments before and
    /// goes on here, updated for the next segment).
    fn check_group_segment(
        &self,
        seg: u32,
        g: usize,
        is_current: &impl Fn(usize, u64) -> Option<u32>,
        run: &mut RunLeft,
        s: &mut Stats,
    ) -> Result<(), HeapError> {
        let mut out = 0;
        let bps = group_blocks_per_segment(g);
        // Tail blocks still expected after the head of a run of whole blocks.
        let mut tails = run.tails;
        // Block slots past the group's blocks hold no mask.
        for local in bps..MAX_BLOCKS_PER_SEGMENT {
            self.check_mask(seg, local, 0)?;
        }
        for local in 0..bps {
            let gid = gid_of(seg, local);
            let m = self.blocks().block_meta(seg, local);
            // Acquire: quiescent heap (no kernel running); orders the read after every writer.
            let mask = self.blocks().free_mask(seg, local).load_acquire();
            // Acquire: quiescent heap (no kernel running); orders the read after every writer.
            let freed = m.freed.load_acquire();
            // Acquire: quiescent heap (no kernel running); orders the read after every writer.
            let word = m.kind.load_acquire();
            let (kind, c) = kind_parts(word);
            if (tails > 0) != (kind == KIND_RUN_TAIL) {
                return Err(HeapError::BadBlockRun { seg, local });
            }
            if self.blocks().block_tree(g).contains(gid) {
                // Parked, or never installed (all zeros).
                if freed != 0 || word != KIND_FREE {
                    return Err(HeapError::FreeBlockNotParked { seg, local });
                }
                self.check_mask(seg, local, 0)?;
                self.check_bits(seg, local, g, 0)?;
                continue;
            }
            out += 1;
            let masked = matches!(kind, KIND_SLICES) && c < NUM_CLASSES && is_mask_class(c);
            if !masked {
                self.check_mask(seg, local, 0)?;
            }
            if kind == KIND_FREE {
                if freed == 0 && self.is_reserved(seg, local) {
                    s.reserved_blocks += 1;
                    self.check_bits(seg, local, g, 0)?;
                    continue;
                }
                return Err(HeapError::ParkedBlockOutOfTree { seg, local });
            }
            if kind == KIND_WHOLE || kind == KIND_RUN_TAIL {
                if kind == KIND_WHOLE {
                    // `freed` holds the run length; the run ends within the heap (within the
                    // segment, for a group whose runs stay in one).
                    let end = local as u64 + freed as u64;
                    let room = if runs_cross_segments(g) {
                        (self.layout().num_segments - seg) as u64 * bps as u64
                    } else {
                        bps as u64
                    };
                    if freed == 0 || end > room {
                        return Err(HeapError::BadBlockRun { seg, local });
                    }
                    s.crossing_runs += (end > bps as u64) as u64;
                    tails = freed - 1;
                } else {
                    tails -= 1;
                }
                s.whole_blocks[g] += 1;
                s.bytes_in_use += group_block_bytes(g);
                self.check_bits(seg, local, g, 0)?;
                continue;
            }
            // A packed-only class (past NUM_CLASSES) only in a packed block.
            let known = c < NUM_CLASSES || (kind == KIND_PACKED && c < TABLE_CLASSES);
            if !matches!(kind, KIND_SLICES | KIND_PACKED) || !known || group_of(c) != g {
                return Err(HeapError::BadBlockKind { seg, local, word });
            }
            s.slice_blocks[c] += 1;
            // A block out of its slot has handed out (or given back) all its slices.
            let handed = is_current(c, gid).unwrap_or(slices_per_block(c));
            // A mask class's free slices are its mask's bits (its count stays zero): all among
            // the slices its slot has passed, and marked in its class's partial-block index.
            let freed = if masked {
                if freed != 0 || mask & !mask_range(0, handed) != 0 {
                    return Err(HeapError::FreeMask { seg, local, mask });
                }
                if mask != 0 && !self.blocks().partial_tree(c).contains(block_index(g, gid)) {
                    return Err(HeapError::LostPartialMark { seg, local, class: c });
                }
                if self.checking() {
                    let base = self.blocks().block_addr(g, gid);
                    for slice in 0..handed {
                        let marked = self.hand_out().is_marked(base + slice as u64 * slice_bytes(c));
                        if marked == (mask >> slice & 1 != 0) {
                            return Err(HeapError::MaskAgainstHandOut { seg, local, slice });
                        }
                    }
                }
                mask.count_ones()
            } else {
                freed
            };
            if freed > handed {
                return Err(HeapError::OverFreed { seg, local });
            }
            if freed == slices_per_block(c) {
                return Err(HeapError::NotRecycled { seg, local });
            }
            let live = handed - freed;
            self.check_bits(seg, local, g, live)?;
            if kind == KIND_PACKED {
                self.check_packed_bounds(seg, local, g, c, handed)?;
                s.packed_blocks += 1;
                s.live_packed += live as u64;
            } else {
                s.live_slices[c] += live as u64;
                s.bytes_in_use += live as u64 * slice_bytes(c);
            }
        }
        // Acquire: quiescent heap (no kernel running); orders the read after every writer.
        let counted = self.segments().seg_out(seg).load_acquire() & OUT_COUNT_MASK;
        if counted != out {
            return Err(HeapError::OutCount { seg, counted, found: out });
        }
        *run = RunLeft { group: g, tails };
        Ok(())
    }
}

/// What the validator's walk carries from one segment to the next: the run of whole blocks
/// of group `group` that goes on into the next segment, and how many of its blocks are left.
struct RunLeft {
    group: usize,
    tails: u32,
}

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;
    use super::*;
    use crate::cpu::CpuHeap;

    /// A live packed object whose bounds are lost (no start bit: no size) or cover the next
    /// live object (its end bit gone: `usable_size` would hand out the neighbour's bytes) is
    /// reported, with checks (the hand-out bits say where live objects start).
    #[test]
    #[cfg_attr(
        not(any(feature = "checks", debug_assertions)),
        ignore = "needs the checks: --features checks"
    )]
    fn packed_bounds_are_checked() {
        let cpu = CpuHeap::with_checks(4, 8, true);
        let h = cpu.heap();
        let ps = cpu.warp_malloc_packed(&[16, 40, 100]);
        let c = crate::slice::PACKED_CLASSES[0];
        let (seg, local) = h.block_of(ps[0] as u64, c);
        assert_eq!(h.usable_size(ps[1]), 48);
        h.validate().expect("consistent: objects of 1, 3 and 7 units");
        let count = h.num_segments as u32;
        let word = h.blocks().bound_word_in(
            count,
            seg,
            crate::block::bound_unit(local, crate::block::group_of(c)),
            0,
        );
        // Relaxed: one thread, no kernel running.
        assert_eq!(
            word.load_relaxed(),
            1 | 1 << 1 | 1 << 4 | 1 << 11,
            "starts at 0, 1, 4; the last ends at 11"
        );
        // The second object's end (the third's start) lost: its size covers the third.
        // Relaxed: as above.
        word.fetch_and_relaxed(!(1 << 4));
        assert_eq!(h.validate(), Err(HeapError::PackedBounds { seg, local, unit: 1, size: 160 }));
        // Its start lost instead (the first object's end): the first object covers it.
        // Relaxed: as above.
        word.fetch_or_relaxed(1 << 4);
        // Relaxed: as above.
        word.fetch_and_relaxed(!(1 << 1));
        assert_eq!(h.validate(), Err(HeapError::PackedBounds { seg, local, unit: 0, size: 64 }));
        assert_eq!(h.usable_size(ps[1]), 0, "no size where no start");
        // Relaxed: as above.
        word.fetch_or_relaxed(1 << 1);
        h.validate().expect("mended");
        for p in ps {
            // SAFETY: each p came from the warp_malloc_packed above, freed once, unused after.
            unsafe { h.free(p) };
        }
        h.validate().expect("consistent at the end");
    }

    /// The segment-level checks: the tree against the table, blocks-out counts, block bits
    /// outside their group's segments, and a free segment's block metadata. Each is broken
    /// by hand, reported as its own error, and mended.
    #[test]
    fn segment_trees_tables_and_counts_are_checked() {
        let cpu = CpuHeap::new(4, 8);
        let h = cpu.heap();
        // 512 B slices: a segment of group 4 (1 MiB blocks), one block out.
        let p = h.malloc(512);
        assert!(!p.is_null());
        h.validate().expect("consistent");
        let c = crate::class::class_of(512);
        let (seg, _) = h.block_of(p as u64, c);
        let g = group_of(c);
        assert_ne!(seg, 3, "segment 3 stays free");
        // A blocks-out count one above the blocks missing from the tree.
        let out = h.segments().seg_out(seg);
        // Relaxed: one thread, no kernel running.
        out.fetch_add_relaxed(1);
        assert_eq!(h.validate(), Err(HeapError::OutCount { seg, counted: 2, found: 1 }));
        // Relaxed: as above.
        out.fetch_add_relaxed(1u32.wrapping_neg());
        // A free segment missing from the segment tree.
        assert!(h.segments().seg_tree().remove(3));
        assert_eq!(h.validate(), Err(HeapError::SegmentTreeMismatch { seg: 3, entry: 0 }));
        h.segments().seg_tree().insert(3);
        // A block of the group's tree inside a free segment.
        assert!(h.blocks().block_tree(g).insert(gid_of(3, 0)));
        assert_eq!(h.validate(), Err(HeapError::StrayBlockBit { seg: 3, group: g }));
        assert!(h.blocks().block_tree(g).remove_range_exact(gid_of(3, 0), 1));
        // A block of a free segment whose metadata its next format would not take as parked.
        let m = h.blocks().block_meta(3, 5);
        // Relaxed: as above.
        m.freed.store_relaxed(1);
        assert_eq!(h.validate(), Err(HeapError::FreeBlockNotParked { seg: 3, local: 5 }));
        // Relaxed: as above.
        m.freed.store_relaxed(0);
        // A parked block of the formatted segment taken out of its tree (and counted out):
        // handed out as nothing.
        let local = h.block_of(p as u64, crate::class::class_of(512)).1 + 1;
        assert!(h.blocks().block_tree(g).remove_range_exact(gid_of(seg, local), 1));
        // Relaxed: as above.
        out.fetch_add_relaxed(1);
        assert_eq!(h.validate(), Err(HeapError::ParkedBlockOutOfTree { seg, local }));
        // Relaxed: as above.
        out.fetch_add_relaxed(1u32.wrapping_neg());
        h.blocks().block_tree(g).insert(gid_of(seg, local));
        h.validate().expect("consistent again");
        // SAFETY: p came from the malloc above, is freed once and not used after.
        unsafe { h.free(p) };
        h.trim();
        assert_eq!(h.validate().expect("consistent").free_segments, 4);
    }

    /// A slice block's free count against what its slot handed out: more frees than
    /// hand-outs, or every slice free in a block that was not recycled.
    #[test]
    fn free_counts_above_the_hand_outs_or_unrecycled_blocks_are_errors() {
        let cpu = CpuHeap::new(4, 1);
        let h = cpu.heap();
        let c = crate::class::class_of(512);
        assert!(!crate::class::is_mask_class(c), "a class that counts its frees");
        let per = slices_per_block(c);
        let (p, q) = (h.malloc(512), h.malloc(512));
        let (seg, local) = h.block_of(p as u64, c);
        let freed = &h.blocks().block_meta(seg, local).freed;
        // Current: two slices handed out. A third free would be one more than that.
        // Relaxed: one thread, no kernel running.
        freed.store_relaxed(3);
        assert_eq!(h.validate(), Err(HeapError::OverFreed { seg, local }));
        // Relaxed: as above.
        freed.store_relaxed(0);
        // Retired: the slot gave back the slices it had not handed out; two stay live.
        h.trim();
        // Relaxed: as above.
        assert_eq!(freed.load_relaxed(), per - 2);
        assert_eq!(h.validate().expect("consistent").live_slices[c], 2);
        // Relaxed: as above. Every slice free, but the block still out of its tree.
        freed.store_relaxed(per);
        assert_eq!(h.validate(), Err(HeapError::NotRecycled { seg, local }));
        // Relaxed: as above.
        freed.store_relaxed(per + 1);
        assert_eq!(h.validate(), Err(HeapError::OverFreed { seg, local }));
        // Relaxed: as above.
        freed.store_relaxed(per - 2);
        for x in [p, q] {
            // SAFETY: p and q came from the mallocs above; each is freed once and not used after.
            unsafe { h.free(x) };
        }
        h.trim();
        assert_eq!(h.validate().expect("consistent").bytes_in_use, 0);
    }

    /// A run of whole blocks whose length reaches one block past the heap's last: every
    /// block after its head is its tail up to the heap's end, so only the head's bound
    /// catches it.
    #[test]
    fn a_run_one_block_past_the_heap_is_an_error() {
        let cpu = CpuHeap::new(4, 1);
        let h = cpu.heap();
        let p = h.malloc(h.capacity());
        assert_eq!(p as u64, h.mem, "the whole heap, as one run");
        h.validate().expect("consistent");
        let meta = h.blocks().block_meta(0, 0);
        // Relaxed: one thread, no kernel running.
        let k = meta.freed.load_relaxed();
        // Relaxed: as above.
        meta.freed.store_relaxed(k + 1);
        assert_eq!(h.validate(), Err(HeapError::BadBlockRun { seg: 0, local: 0 }));
        // Relaxed: as above.
        meta.freed.store_relaxed(k);
        // SAFETY: p came from the malloc above, is freed once and not used after.
        unsafe { h.free(p) };
        assert_eq!(h.validate().expect("consistent").free_segments, 4);
    }

    /// A stale free of a mask class that races into a block during a life of a class that
    /// counts its frees leaves bits in the block's free mask, which parking keeps (review of
    /// r31). The install of the block for a mask class clears them: else its new life would
    /// start with slices marked free that it never handed out.
    #[test]
    fn an_install_for_a_mask_class_clears_stale_mask_bits() {
        let cpu = CpuHeap::new(4, 1);
        let h = cpu.heap();
        let (small, big) = (crate::class::class_of(512), crate::class::class_of(40_000));
        assert!(!crate::class::is_mask_class(small) && crate::class::is_mask_class(big));
        assert_eq!(group_of(small), group_of(big));
        let p = h.malloc(512);
        let (seg, local) = h.block_of(p as u64, small);
        // Relaxed: one thread, no kernel running (the bits a racing stale free ORs in).
        h.blocks().free_mask(seg, local).store_relaxed(0b1110_0000);
        // SAFETY: p came from the malloc above, is freed once and not used after.
        unsafe { h.free(p) };
        h.trim();
        let q = h.malloc(40_000);
        assert_eq!(h.block_of(q as u64, big), (seg, local), "the same block, now of the mask class");
        // Relaxed: as above.
        assert_eq!(h.blocks().free_mask(seg, local).load_relaxed(), 0);
        assert_eq!(h.validate().expect("consistent").live_slices[big], 1);
        // SAFETY: q came from the malloc above, is freed once and not used after.
        unsafe { h.free(q) };
        h.trim();
        assert_eq!(h.validate().expect("consistent").bytes_in_use, 0);
    }

    /// Sweeps, trims and steals look at a row's `row_shards` slots only (spread over its
    /// words), so a run in a word of the row that no slot uses would never be reclaimed: the
    /// validator reports one.
    #[test]
    fn a_busy_word_no_slot_uses_is_an_error() {
        // 4 segments, 8 slots a row: rows of 1 MiB blocks use one slot (their share of the
        // pin budget is far below a block).
        let cpu = CpuHeap::new(4, 8);
        let h = cpu.heap();
        let layout = *h.layout();
        let row =
            (0..SLOT_ROWS).find(|&r| layout.row_shards(r) < layout.shards).expect("a row with fewer slots");
        // The word right after the row's first slot: no slot's (the slots are spread, or the
        // row uses one slot only).
        let word = 1;
        let (w, used) = h.slots().current_word(row, word);
        assert!(!used);
        h.validate().expect("a new heap is consistent");
        // Relaxed: one thread, no kernel running.
        w.store_relaxed(1 << 32);
        match h.validate() {
            Err(HeapError::UnusedSlotBusy { row: r, word: x }) => assert_eq!((r, x), (row, word)),
            other => panic!("expected UnusedSlotBusy for row {row} word {word}, got {other:?}"),
        }
        // Relaxed: as above.
        w.store_relaxed(0);
        h.validate().expect("consistent again");
    }

    /// Each slot a row uses is a word `current_word` marks used, and no other word of the row
    /// is: rows of several slots (spread over their words) and of one.
    #[test]
    fn every_used_slot_is_a_used_word_and_no_other() {
        // Small pin shift: the rows of small blocks get several slots, those of 1 MiB one.
        let cpu = CpuHeap::with_layout(crate::layout::HeapLayout::new(4, 8, crate::CHECKS).with_pin_shift(0));
        let h = cpu.heap();
        let l = *h.layout();
        assert!((0..SLOT_ROWS).any(|r| l.row_shards(r) == 8) && (0..SLOT_ROWS).any(|r| l.row_shards(r) == 1));
        for row in 0..SLOT_ROWS {
            let used: std::vec::Vec<*const crate::atomic::Atom64> = (0..l.shards)
                .filter_map(|i| {
                    let (w, u) = h.slots().current_word(row, i);
                    u.then_some(w as *const _)
                })
                .collect();
            let slots: std::vec::Vec<*const crate::atomic::Atom64> =
                (0..l.row_shards(row)).map(|sh| h.slots().current(row, sh) as *const _).collect();
            assert_eq!(used, slots, "row {row}");
        }
    }

    /// `free` reads a block's kind from its 64 KiB units' copies: a copy that differs from
    /// the block's word, in a formatted segment or a free one, is reported.
    #[test]
    fn a_kind_copy_unlike_its_blocks_word_is_an_error() {
        let cpu = CpuHeap::new(4, 8);
        let h = cpu.heap();
        // 512 B slices: 1 MiB blocks, 16 units each.
        let p = h.malloc(512);
        assert!(!p.is_null());
        h.validate().expect("consistent");
        let off = p as u64 - h.mem;
        let seg = (off >> crate::SEGMENT_SHIFT) as u32;
        // A later unit of the pointer's block, and a unit of a free segment.
        for unit in [(off >> crate::class::MIN_BLOCK_SHIFT) + 5, 3 * UNITS_PER_SEGMENT + 7] {
            let copy = h.blocks().unit_kind(unit);
            // Relaxed: one thread, no kernel running.
            let saved = copy.load_relaxed();
            // Relaxed: as above.
            copy.store_relaxed(saved ^ 1);
            match h.validate() {
                Err(HeapError::KindCopy { seg: s, unit: u, copy: c, word }) => {
                    assert_eq!((s as u64, u as u64), (unit / UNITS_PER_SEGMENT, unit % UNITS_PER_SEGMENT));
                    assert_eq!((c, word), (saved ^ 1, saved));
                }
                other => panic!("expected KindCopy at unit {unit}, got {other:?}"),
            }
            // Relaxed: as above.
            copy.store_relaxed(saved);
            h.validate().expect("consistent again");
        }
        assert_ne!(seg, 3, "the malloc took the lowest segment");
        // SAFETY: p came from the malloc above, is freed once and not used after.
        unsafe { h.free(p) };
        h.validate().expect("consistent after the free");
    }

    /// A block of a mask class whose freed slices its class's partial-block index does not
    /// mark would never hand them out again; a mask bit where the block serves no mask class,
    /// or past what its slot handed out, would hand out memory that is not free.
    #[test]
    fn free_masks_and_partial_marks_are_checked() {
        let cpu = CpuHeap::new(4, 8);
        let h = cpu.heap();
        let c = crate::class::class_of(40_000);
        assert!(crate::class::is_mask_class(c));
        let (p, q) = (h.malloc(40_000), h.malloc(40_000));
        // SAFETY: p came from the malloc above, is freed once and not used after.
        unsafe { h.free(p) };
        h.validate().expect("consistent: a block with one free slice, marked");
        let (seg, local) = h.block_of(p as u64, c);
        let id = crate::block::block_index(group_of(c), gid_of(seg, local));
        assert!(h.blocks().partial_tree(c).remove(id));
        assert_eq!(h.validate(), Err(HeapError::LostPartialMark { seg, local, class: c }));
        h.blocks().partial_tree(c).insert(id);
        // The block's slot has handed out two slices: a bit for the third is not a free slice.
        let mask = h.blocks().free_mask(seg, local);
        // Relaxed: one thread, no kernel running.
        mask.fetch_or_relaxed(1 << 2);
        assert_eq!(h.validate(), Err(HeapError::FreeMask { seg, local, mask: 0b101 }));
        // Relaxed: as above.
        mask.fetch_and_relaxed(!(1 << 2));
        // A mask on a parked block (the segment's next block, in its tree).
        let parked = h.blocks().free_mask(seg, local + 2);
        // Relaxed: as above.
        parked.store_relaxed(1);
        assert_eq!(h.validate(), Err(HeapError::FreeMask { seg, local: local + 2, mask: 1 }));
        // Relaxed: as above.
        parked.store_relaxed(0);
        h.validate().expect("consistent again");
        // SAFETY: q came from the malloc above, is freed once and not used after.
        unsafe { h.free(q) };
        h.trim();
        assert_eq!(h.validate().expect("consistent").bytes_in_use, 0);
    }

    /// With checks, a mask class's free bits are checked slice by slice against the hand-out
    /// bitmap: a give-back that set the bit of a live slice (and not the freed one's) kept the
    /// counts equal, and the next malloc handed the live slice out again (review of r31).
    #[test]
    #[cfg_attr(
        not(any(feature = "checks", debug_assertions)),
        ignore = "needs the checks: --features checks"
    )]
    fn a_free_bit_on_a_live_slice_is_an_error() {
        let cpu = CpuHeap::with_checks(4, 1, true);
        let h = cpu.heap();
        let c = crate::class::class_of(40_000);
        let ps: std::vec::Vec<*mut u8> = (0..4).map(|_| h.malloc(40_000)).collect();
        // SAFETY: ps[3] came from the mallocs above, is freed once and not used after.
        unsafe { h.free(ps[3]) };
        h.validate().expect("consistent");
        let (seg, local) = h.block_of(ps[0] as u64, c);
        let mask = h.blocks().free_mask(seg, local);
        // Relaxed: one thread, no kernel running.
        assert_eq!(mask.load_relaxed(), 1 << 3);
        // Relaxed: as above. The bit of live slice 1 instead of freed slice 3.
        mask.store_relaxed(1 << 1);
        assert_eq!(h.validate(), Err(HeapError::MaskAgainstHandOut { seg, local, slice: 1 }));
        // Relaxed: as above.
        mask.store_relaxed(1 << 3);
        h.validate().expect("consistent again");
        for p in [ps[0], ps[1], ps[2]] {
            // SAFETY: ps[0..3] came from the mallocs above; each is freed once and not used after.
            unsafe { h.free(p) };
        }
        h.trim();
        assert_eq!(h.validate().expect("consistent").bytes_in_use, 0);
    }

    /// The handle carries the segment count, from which `free` finds the table, the copies and
    /// the block metadata: a handle whose count is not the layout's is reported.
    #[test]
    fn a_handle_with_another_segment_count_is_an_error() {
        let cpu = CpuHeap::new(4, 8);
        let h = cpu.heap();
        h.validate().expect("the heap's own handle is consistent");
        // Not a handle `from_raw_parts` allows (the count is not the layout's): built from the
        // fields, in the crate, for `validate` alone, which checks the count before anything.
        let wrong = DeviceHeap { num_segments: 5, ..h.dup() };
        match wrong.validate() {
            Err(HeapError::HandleSegments { handle: 5, layout: 4 }) => {}
            other => panic!("expected HandleSegments, got {other:?}"),
        }
    }

    /// `free` loads the segment entry and the unit's kind copy independently, so a racing free
    /// of a stale pointer (a double free, a pointer of the segment's earlier format) may see a
    /// new entry with an old copy. Simulated here: a 16 B block (group 0) full but for one
    /// live slice, whose unit's copy says 256-byte slices (group 4, also 4096 a block). The
    /// free of that slice must stay within its block. Without the group check it took the
    /// class from the copy and the geometry from the entry: the slice's give-back completed
    /// the block, whose recycle then parked sixteen units' copies and inserted a group-4 block
    /// id into a group-0 segment (the validator: `StrayBlockBit`), and the next 256 B malloc
    /// got memory over live 16 B slices (review of r30).
    #[test]
    fn a_stale_copy_of_another_group_stays_within_its_block() {
        use crate::block::{kind_word, KIND_SLICES};
        use crate::class::{class_of, group_of, slices_per_block};
        let cpu = CpuHeap::with_checks(4, 1, false);
        let h = cpu.heap();
        let (small, big) = (class_of(16), class_of(256));
        assert_ne!(group_of(small), group_of(big));
        assert_eq!(slices_per_block(small), slices_per_block(big));
        let slices: std::vec::Vec<*mut u8> = (0..slices_per_block(small)).map(|_| h.malloc(16)).collect();
        let keep = h.malloc(16); // the next block's first slice stays live
        let block = slices[0] as u64;
        assert_eq!(block, h.mem, "the first block, whole");
        assert_eq!(keep as u64, h.mem + (64 << 10), "then the next one");
        for &p in &slices[1..] {
            // SAFETY: slices[1..] came from the mallocs above; each is freed once and not used after.
            unsafe { h.free(p) };
        }
        let unit = (block - h.mem) >> crate::class::MIN_BLOCK_SHIFT;
        // Relaxed: one thread, no kernel running (the stale copy a racing free may read).
        h.blocks().unit_kind(unit).store_relaxed(kind_word(KIND_SLICES, big));
        // SAFETY: slices[0] came from the mallocs above and is live; freed once (the test's stale copy only
        // changes which kind word the free reads).
        unsafe { h.free(slices[0]) };
        // Relaxed: as above (the copy back as the block's park left it).
        h.blocks().unit_kind(unit).store_relaxed(crate::block::KIND_FREE);
        let s = h.validate().expect("the heap stays consistent");
        assert_eq!(s.bytes_in_use, 16, "only `keep` is live");
        let q = h.malloc(256);
        assert!(!q.is_null());
        assert!((q as u64).abs_diff(keep as u64) >= 64 << 10, "a 256 B slice far from the live 16 B one");
        // SAFETY: q came from the malloc above, is freed once and not used after.
        unsafe { h.free(q) };
        // SAFETY: keep came from the malloc above, is freed once and not used after.
        unsafe { h.free(keep) };
        h.validate().expect("consistent at the end");
    }

    /// The same with the block's own kind word stale too (both name a class of another
    /// group): `free_slice` sends the pointer to `free_not_slice`, and the word's class must be
    /// counted as invalid rather than sent back (a version whose only stop was a guard in
    /// `free_not_slice` looped for ever without it: found by a second review of r30).
    #[test]
    fn a_stale_word_and_copy_of_another_group_count_as_invalid() {
        use crate::block::{kind_word, KIND_SLICES};
        use crate::class::{class_of, MIN_BLOCK_SHIFT};
        let cpu = CpuHeap::with_checks(4, 1, false);
        let h = cpu.heap();
        let p = h.malloc(16);
        let off = p as u64 - h.mem;
        let (seg, unit) = ((off >> crate::SEGMENT_SHIFT) as u32, off >> MIN_BLOCK_SHIFT);
        // Relaxed: one thread, no kernel running.
        let word = h.blocks().block_meta(seg, 0).kind.load_relaxed();
        let stale = kind_word(KIND_SLICES, class_of(256));
        // Relaxed: one thread, no kernel running (what a racing stale free may read).
        h.blocks().block_meta(seg, 0).kind.store_relaxed(stale);
        // Relaxed: as above.
        h.blocks().unit_kind(unit).store_relaxed(stale);
        // SAFETY: p came from the malloc above and is live; the test's stale words make the heap refuse this
        // free (asserted next), so p stays live.
        unsafe { h.free(p) };
        // Relaxed: as above.
        assert_eq!(h.counter(counter::INVALID_FREE).load_relaxed(), 1);
        // Relaxed: as above, the words back as the install wrote them.
        h.blocks().block_meta(seg, 0).kind.store_relaxed(word);
        // Relaxed: as above.
        h.blocks().unit_kind(unit).store_relaxed(word);
        h.validate().expect("the stray free changed nothing");
        // SAFETY: p is still live (the free above was refused and changed nothing, as checked); freed once
        // now.
        unsafe { h.free(p) };
        assert_eq!(h.validate().expect("consistent").bytes_in_use, 0);
    }
}
