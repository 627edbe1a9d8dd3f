//! Where the heap's memory is (host only, quiescent heap): a walk of the metadata that says,
//! per class and group, how many bytes sit in current blocks, in retired blocks that still
//! hold live slices, and in formatted blocks that are free but bound to their group; and how
//! the free segments lie (for runs of segments). For diagnosing nulls while live bytes are
//! well below the heap (the churn test of issue 9).

extern crate std;

use crate::block::{
    gid_of, group_block_bytes, group_blocks_per_segment, group_of, kind_parts, slice_bytes, slices_per_block,
    KIND_FREE, KIND_PACKED, KIND_SLICES, NUM_GROUPS,
};
use crate::class::TABLE_CLASSES;
use crate::heap::DeviceHeap;
use crate::segment::{seg_kind, SegKind};

/// Blocks serving slices of one class, split into those in a current slot and the others
/// (retired: every slice handed out, the block waits for its last live slice to come back).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassOccupancy {
    /// Blocks in a current slot.
    pub current_blocks: u64,
    /// Live slices in current blocks.
    pub current_live: u64,
    /// Slices current blocks have not handed out yet.
    pub current_unhanded: u64,
    /// Blocks out of every slot with live slices.
    pub retired_blocks: u64,
    /// Live slices in those.
    pub retired_live: u64,
}

/// One group's formatted segments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupOccupancy {
    /// Segments formatted for the group.
    pub segments: u64,
    /// Free blocks in them (in the group's tree: usable by this group only).
    pub free_blocks: u64,
    /// Blocks handed out whole (runs of whole blocks, tails of segment runs).
    pub whole_blocks: u64,
    /// Parked blocks out of the tree: claimed ahead (slot reserves, the rest of a run row's
    /// current segment).
    pub parked_blocks: u64,
}

/// What the heap's memory holds, from one walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Occupancy {
    /// Per class-table entry (`class::TABLE_CLASSES`: the request classes, then the
    /// packed-only ones, whose blocks only packed rows hold).
    pub classes: [ClassOccupancy; TABLE_CLASSES],
    pub groups: [GroupOccupancy; NUM_GROUPS],
    /// Segments in the segment tree.
    pub free_segments: u64,
    /// Longest run of consecutive free segments.
    pub longest_free_run: u64,
}

impl Default for Occupancy {
    fn default() -> Self {
        Self {
            classes: [ClassOccupancy::default(); TABLE_CLASSES],
            groups: [GroupOccupancy::default(); NUM_GROUPS],
            free_segments: 0,
            longest_free_run: 0,
        }
    }
}

impl Occupancy {
    /// Bytes of class `c`'s current blocks.
    pub fn current_bytes(&self, c: usize) -> u64 {
        self.classes[c].current_blocks * group_block_bytes(group_of(c))
    }
    /// Bytes of class `c`'s retired blocks that hold live slices.
    pub fn retired_bytes(&self, c: usize) -> u64 {
        self.classes[c].retired_blocks * group_block_bytes(group_of(c))
    }
    /// Live slice bytes (at slice size) of class `c`.
    pub fn live_bytes(&self, c: usize) -> u64 {
        (self.classes[c].current_live + self.classes[c].retired_live) * slice_bytes(c)
    }
    /// Bytes of free blocks in segments formatted for group `g`.
    pub fn free_block_bytes(&self, g: usize) -> u64 {
        self.groups[g].free_blocks * group_block_bytes(g)
    }
    /// Bytes of whole blocks of group `g`.
    pub fn whole_bytes(&self, g: usize) -> u64 {
        self.groups[g].whole_blocks * group_block_bytes(g)
    }
}

/// One segment as the table has it: what it holds and, formatted for a group, how many of its
/// blocks are out of the group's tree (handed out, current, or claimed ahead).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentUse {
    pub kind: SegKind,
    pub blocks_out: u32,
}

impl DeviceHeap {
    /// Every segment's [`SegmentUse`], in address order, on a quiescent heap: where a burst's
    /// range went (`veballoc-bench frag --frag-map`).
    pub fn segment_uses(&self) -> std::vec::Vec<SegmentUse> {
        let segs = self.segments();
        (0..self.layout().num_segments)
            .map(|seg| {
                // Acquire: as in `occupancy` (a quiescent heap: any order reads the last write).
                let kind = seg_kind(segs.seg_table(seg).load_acquire());
                // Acquire: as above.
                SegmentUse { kind, blocks_out: segs.seg_out(seg).load_acquire() }
            })
            .collect()
    }

    /// Walks a quiescent heap (no kernel, no other thread using it) and says where its memory
    /// is (see [`Occupancy`]).
    pub fn occupancy(&self) -> Occupancy {
        let mut o = Occupancy::default();
        // Current blocks (a run's blocks included): how many slices each has handed out.
        let current = self.current_blocks();
        let n = self.layout().num_segments;
        let mut run = 0u64;
        for seg in 0..n {
            // Acquire: as above.
            let kind = seg_kind(self.segments().seg_table(seg).load_acquire());
            if kind == SegKind::Free {
                o.free_segments += 1;
                run += 1;
                o.longest_free_run = o.longest_free_run.max(run);
                continue;
            }
            run = 0;
            let SegKind::Group(g) = kind else { continue };
            let go = &mut o.groups[g];
            go.segments += 1;
            for local in 0..group_blocks_per_segment(g) {
                let gid = gid_of(seg, local);
                if self.blocks().block_tree(g).contains(gid) {
                    go.free_blocks += 1;
                    continue;
                }
                let m = self.blocks().block_meta(seg, local);
                // Acquire: as above.
                let (k, c) = kind_parts(m.kind.load_acquire());
                if k == KIND_FREE {
                    go.parked_blocks += 1;
                    continue;
                }
                if !matches!(k, KIND_SLICES | KIND_PACKED) || c >= TABLE_CLASSES {
                    go.whole_blocks += 1;
                    continue;
                }
                // Acquire: as above. A mask class counts its free slices in its free mask.
                let freed = if k == KIND_SLICES && crate::class::is_mask_class(c) {
                    self.blocks().free_mask(seg, local).load_acquire().count_ones()
                } else {
                    m.freed.load_acquire()
                };
                let co = &mut o.classes[c];
                match current(c, gid) {
                    Some(handed) => {
                        co.current_blocks += 1;
                        co.current_live += handed.saturating_sub(freed) as u64;
                        co.current_unhanded += (slices_per_block(c) - handed) as u64;
                    }
                    None => {
                        co.retired_blocks += 1;
                        co.retired_live += slices_per_block(c).saturating_sub(freed) as u64;
                    }
                }
            }
        }
        o
    }
}
